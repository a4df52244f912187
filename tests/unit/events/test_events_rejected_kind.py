"""A message that says what it is keeps that kind when it is rejected.

A Spot warning without ``instance-id`` is a rejected ``spot-interruption`` naming the field,
not an ``unsupported`` message: an operator reading the report (or a metric by kind) must
see which warning was lost. Only a message whose kind cannot be told stays ``unsupported``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lifeboat.events import Kind, MalformedMessage, parse_message
from lifeboat.events.registry import parsers
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.model.instances import StaticInstanceDirectory
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings

EVENTS = Path(__file__).resolve().parents[3] / "events"
RECEIVED = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def sample(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / name).read_text(encoding="utf-8"))
    return data


def rejection(body: dict[str, Any]) -> MalformedMessage:
    with pytest.raises(MalformedMessage) as caught:
        parse_message(json.dumps(body), received_at=RECEIVED)
    return caught.value


@pytest.mark.parametrize(
    ("name", "field", "kind"),
    [
        ("spot-interruption.json", "instance-id", Kind.SPOT_INTERRUPTION),
        ("rebalance-recommendation.json", "instance-id", Kind.REBALANCE_RECOMMENDATION),
        ("state-change.json", "instance-id", Kind.STATE_CHANGE),
        (
            "capacity-reservation-interruption.json",
            "instance-id",
            Kind.CAPACITY_RESERVATION_INTERRUPTION,
        ),
        ("asg-termination.json", "EC2InstanceId", Kind.ASG_TERMINATION),
    ],
)
def test_a_missing_instance_id_is_rejected_as_the_kind_the_event_announces(
    name: str, field: str, kind: Kind
) -> None:
    event = sample(name)
    del event["detail"][field]
    error = rejection(event)
    assert error.kind is kind
    assert error.reason == f"detail.{field}: field required"
    assert error.event_id == event["id"]


def test_a_raw_lifecycle_hook_message_without_instance_is_a_rejected_asg_termination() -> None:
    message = sample("raw/asg-lifecycle-hook.json")
    del message["EC2InstanceId"]
    error = rejection(message)
    assert error.kind is Kind.ASG_TERMINATION
    assert "EC2InstanceId" in error.reason


@pytest.mark.parametrize(
    "body",
    [
        {"detail-type": "EC2 Spot Instance Interruption Warning"},  # no envelope: kind unknown
        {"Records": []},
        {"Event": "autoscaling:TEST_NOTIFICATION"},  # no RequestId: not a hook message
    ],
)
def test_a_message_whose_kind_cannot_be_told_stays_unsupported(body: dict[str, Any]) -> None:
    assert rejection(body).kind is None


def test_every_parser_names_its_kind() -> None:
    assert all(isinstance(parser.kind, Kind) for parser in parsers())
    assert Kind.UNSUPPORTED not in {parser.kind for parser in parsers()}


def test_the_pipeline_reports_the_rejection_with_its_kind() -> None:
    event = sample("spot-interruption.json")
    del event["detail"]["instance-id"]
    pipeline = Pipeline(
        clusters=OneCluster(None),  # type: ignore[arg-type]  # parsing fails before any cluster
        directory=StaticInstanceDirectory(),
        settings=Settings(),
        clock=lambda: RECEIVED,
    )
    [result] = pipeline.process([json.dumps(event)])
    [report] = result.reports
    assert (report.outcome, report.kind) == (Outcome.REJECTED, "spot-interruption")
    assert report.reason == "detail.instance-id: field required"
    assert report.to_json()["kind"] == "spot-interruption"

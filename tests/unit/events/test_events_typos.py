"""A message that says what it is keeps that kind when its envelope is at fault (a Spot
warning without ``time``) and when it is a rotation command with a bad field; a misspelled
``detail-type`` of a known source is named with the one it was most likely meant to be."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lifeboat.events import Kind, MalformedMessage, parse_message
from lifeboat.rotation.request import parse_command

EVENTS = Path(__file__).resolve().parents[3] / "events"
RECEIVED = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def sample(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / name).read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("spot-interruption.json", Kind.SPOT_INTERRUPTION),
        ("rebalance-recommendation.json", Kind.REBALANCE_RECOMMENDATION),
        ("scheduled-change.json", Kind.SCHEDULED_CHANGE),
        ("state-change.json", Kind.STATE_CHANGE),
    ],
)
@pytest.mark.parametrize("field", ["time", "id", "detail"])
def test_an_envelope_at_fault_keeps_the_kind_its_detail_type_says(
    name: str, kind: Kind, field: str
) -> None:
    event = sample(name)
    del event[field]
    with pytest.raises(MalformedMessage) as caught:
        parse_message(json.dumps(event), received_at=RECEIVED)
    assert caught.value.kind is kind
    assert field in caught.value.reason


def test_an_envelope_of_an_unknown_type_stays_unsupported() -> None:
    event = sample("spot-interruption.json")
    event["detail-type"] = "Something Else Entirely"
    del event["time"]
    with pytest.raises(MalformedMessage) as caught:
        parse_message(json.dumps(event), received_at=RECEIVED)
    assert caught.value.kind is None  # reported as unsupported


@pytest.mark.parametrize("name", ["legacy-to-karpenter.json", "pause.json"])
def test_a_rotation_command_with_a_bad_field_is_a_rejected_rotation(name: str) -> None:
    command = sample(f"rotation/{name}")
    command["detail"]["rotation"] = 42
    with pytest.raises(MalformedMessage) as caught:
        parse_command(command)
    assert caught.value.kind is Kind.ROTATION
    assert "detail.rotation" in caught.value.reason
    del command["time"]
    with pytest.raises(MalformedMessage) as without_time:
        parse_command(command)
    assert without_time.value.kind is Kind.ROTATION


def test_a_misspelled_detail_type_names_the_nearest_known_one() -> None:
    event = sample("spot-interruption.json")
    event["detail-type"] = "EC2 Spot Instance Interuption Warning"
    [notice] = parse_message(json.dumps(event), received_at=RECEIVED)
    assert notice.kind is Kind.UNSUPPORTED
    assert notice.ignore_reason == (
        'unsupported event: source "aws.ec2", detail-type "EC2 Spot Instance Interuption '
        'Warning" (did you mean "EC2 Spot Instance Interruption Warning"?)'
    )


def test_a_detail_type_far_from_any_known_one_gets_no_guess() -> None:
    event = sample("spot-interruption.json")
    event["detail-type"] = "EC2 AMI State Change"
    [notice] = parse_message(json.dumps(event), received_at=RECEIVED)
    assert notice.ignore_reason is not None
    assert "did you mean" not in notice.ignore_reason

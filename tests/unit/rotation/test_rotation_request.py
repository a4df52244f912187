"""The rotation commands as EventBridge delivers them: parsed, or rejected naming the field."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lifeboat.events.notice import MalformedMessage
from lifeboat.rotation.messages import is_rotation_event
from lifeboat.rotation.request import (
    DETAIL_TYPES,
    RotationSpec,
    Verb,
    command_event,
    parse_command,
)

SAMPLES = Path(__file__).resolve().parents[3] / "events" / "rotation"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


def sample(name: str = "legacy-to-karpenter") -> dict[str, Any]:
    event: dict[str, Any] = json.loads((SAMPLES / f"{name}.json").read_text())
    return event


def with_detail(**changes: Any) -> dict[str, Any]:
    event = sample()
    for key, value in changes.items():
        if value is None:
            event["detail"].pop(key, None)
        else:
            event["detail"][key] = value
    return event


def reason_of(event: dict[str, Any]) -> str:
    with pytest.raises(MalformedMessage) as error:
        parse_command(event)
    return error.value.reason


def test_the_sample_request_parses_to_its_spec() -> None:
    command = parse_command(sample())
    assert (command.verb, command.name, command.cluster) == (
        Verb.REQUEST,
        "legacy-to-karpenter",
        "prod-a",
    )
    assert command.spec == RotationSpec(
        name="legacy-to-karpenter",
        cluster="prod-a",
        # No uid in the request: the rotation is named by its event's id.
        uid="6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a41",
        labels={"eks.amazonaws.com/nodegroup": "legacy"},
        max_in_flight=1,
        health_timeout=timedelta(seconds=600),
    )
    assert command.spec.label_selector == "eks.amazonaws.com/nodegroup=legacy"
    assert command.event_id == "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a41"
    assert (command.account, command.region) == ("123456789012", "us-east-1")


@pytest.mark.parametrize(
    ("name", "verb"), [("pause", "pause"), ("resume", "resume"), ("cancel", "cancel")]
)
def test_the_control_samples_parse(name: str, verb: str) -> None:
    command = parse_command(sample(name))
    assert (command.verb, command.name, command.spec) == (Verb(verb), "legacy-to-karpenter", None)


def test_defaults_one_in_flight_and_ten_minutes() -> None:
    event = with_detail(maxInFlight=None, healthGate=None, cluster=None)
    spec = parse_command(event).spec
    assert spec is not None
    assert (spec.max_in_flight, spec.health_timeout, spec.cluster) == (
        1,
        timedelta(minutes=10),
        None,
    )


def test_amis_alone_select_and_duplicates_collapse() -> None:
    event = with_detail(selector={"amis": ["ami-0b7e5c4d3a2f19e80", "ami-0b7e5c4d3a2f19e80"]})
    spec = parse_command(event).spec
    assert spec is not None
    assert (spec.amis, spec.label_selector) == (("ami-0b7e5c4d3a2f19e80",), "")
    assert spec.describe_selector() == "AMI ami-0b7e5c4d3a2f19e80"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"selector": {}}, "detail.selector: give labels, amis or both"),
        ({"selector": {"labels": {}, "amis": []}}, "detail.selector: give labels, amis or both"),
        ({"maxInFlight": 0}, "detail.maxInFlight: input should be greater than or equal to 1"),
        ({"maxInFlight": "2"}, "detail.maxInFlight: input should be a valid integer"),
        ({"healthGate": {"timeoutSeconds": 5}}, "detail.healthGate.timeoutSeconds: input should"),
        ({"rotation": "Legacy_Nodes"}, "detail.rotation: string should match pattern"),
        ({"rotation": "x" * 41}, "detail.rotation: string should have at most 40 characters"),
        ({"rotation": None}, "detail.rotation: field required"),
        ({"maxInflight": 2}, "detail.maxInflight: extra inputs are not permitted"),
        (
            {"selector": {"labels": {"eks.amazonaws.com/node group": "legacy"}}},
            "detail.selector.labels: key 'eks.amazonaws.com/node group': name part must consist",
        ),
        (
            {"selector": {"labels": {"team": "a" * 64}}},
            "detail.selector.labels: value 'aaaa",
        ),
        ({"selector": {"amis": ["ami-XYZ"]}}, "detail.selector.amis.0: string should match"),
        ({"cluster": "prod a"}, "detail.cluster: string should match pattern"),
    ],
)
def test_a_bad_request_is_rejected_naming_the_field(changes: dict[str, Any], expected: str) -> None:
    assert reason_of(with_detail(**changes)).startswith(expected)


def test_a_bad_control_is_rejected_naming_the_field() -> None:
    event = sample("pause")
    event["detail"]["selector"] = {"labels": {"a": "b"}}
    assert reason_of(event).startswith("detail.selector: extra inputs are not permitted")


def test_a_control_command_must_name_its_rotation_by_uid() -> None:
    """Issue 35, item 4: a command bound to a name only reached any rotation of that name."""
    event = sample("pause")
    del event["detail"]["uid"]
    assert reason_of(event).startswith("detail.uid: field required")
    event["detail"]["uid"] = "not a uid!"
    assert reason_of(event).startswith("detail.uid:")
    event["detail"]["uid"] = "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a41"
    assert parse_command(event).uid == "6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a41"


def test_a_request_may_give_its_rotation_a_uid() -> None:
    event = sample()
    event["detail"]["uid"] = "0f6b2c1e-9a8d-4c3b-8e7f-6a5d4c3b2a10"
    command = parse_command(event)
    assert command.spec is not None and command.spec.uid == command.uid == event["detail"]["uid"]


def test_only_the_five_commands_of_source_lifeboat_are_rotation_events() -> None:
    assert sorted(DETAIL_TYPES) == [
        "Lifeboat Rotation Cancel Requested",
        "Lifeboat Rotation Pause Requested",
        "Lifeboat Rotation Requested",
        "Lifeboat Rotation Resume Requested",
        "Lifeboat Rotation Rollback Requested",
    ]
    assert is_rotation_event(sample())
    other = copy.deepcopy(sample())
    other["detail-type"] = "Lifeboat Action Taken"  # what Lifeboat publishes about itself
    assert not is_rotation_event(other)
    other = copy.deepcopy(sample())
    other["source"] = "aws.ec2"
    assert not is_rotation_event(other)


def test_command_event_is_what_parse_command_reads_back() -> None:
    spec = RotationSpec(
        name="ami-roll",
        cluster="prod-b",
        labels={"karpenter.sh/nodepool": "general"},
        amis=("ami-0123456789abcdef0",),
        max_in_flight=3,
        health_timeout=timedelta(minutes=20),
        uid="0f6b2c1e-9a8d-4c3b-8e7f-6a5d4c3b2a10",
    )
    event = command_event(Verb.REQUEST, spec.name, cluster=spec.cluster, spec=spec, now=NOW)
    command = parse_command(json.loads(json.dumps(event)))
    assert (command.spec, command.event_time, command.event_id) == (spec, NOW, event["id"])
    cancel = parse_command(
        command_event(Verb.CANCEL, "ami-roll", cluster="prod-b", now=NOW, uid=spec.uid)
    )
    assert (cancel.verb, cancel.name, cancel.cluster) == (Verb.CANCEL, "ami-roll", "prod-b")
    assert cancel.uid == spec.uid
    with pytest.raises(ValueError, match="needs its spec"):
        command_event(Verb.REQUEST, "x", now=NOW)

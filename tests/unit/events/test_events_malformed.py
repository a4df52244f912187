"""Malformed input is rejected with a reason that names the field, never with another error."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from lifeboat.events import MAX_REASON, MalformedMessage, parse_message
from tests.support.events import sample

RECEIVED = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)

Edit = Callable[[dict[str, Any]], object]


def rejected(body: object) -> MalformedMessage:
    text = body if isinstance(body, str | bytes) else json.dumps(body)
    with pytest.raises(MalformedMessage) as caught:
        parse_message(text, received_at=RECEIVED)
    assert len(caught.value.reason) <= MAX_REASON
    assert str(caught.value) == caught.value.reason
    return caught.value


def edited(name: str, edit: Edit) -> dict[str, Any]:
    data = copy.deepcopy(sample(name))
    edit(data)
    return data


def sns(message: object) -> dict[str, Any]:
    return {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:lifeboat",
        "Message": message if isinstance(message, str) else json.dumps(message),
    }


# --- the body itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("", "body: not valid JSON (Expecting value at char 0)"),
        ("   ", "body: not valid JSON (Expecting value at char 3)"),
        ("garbage", "body: not valid JSON (Expecting value at char 0)"),
        ('{"id": ', "body: not valid JSON (Expecting value at char 7)"),
        ("[]", "body: expected a JSON object, got array"),
        ('[{"source": "aws.ec2"}]', "body: expected a JSON object, got array"),
        ('"text"', "body: expected a JSON object, got string"),
        ("42", "body: expected a JSON object, got number"),
        ("null", "body: expected a JSON object, got null"),
        ("true", "body: expected a JSON object, got boolean"),
        (b"\xff\xfe", "body: not valid UTF-8 (invalid start byte at byte 0)"),
        ("[" * 100_000, "body: not valid JSON (nested too deeply)"),
        ("9" * 5000, "body: not valid JSON (number too long)"),
        ("{}", "body: not an EventBridge event, SNS notification or Auto Scaling lifecycle"),
        ('{"foo": 1}', "body: not an EventBridge event, SNS notification or Auto Scaling"),
        ('{"Records": [{"body": "{}"}]}', "body: an SQS batch; pass the body of each record"),
    ],
)
def test_bad_body(body: str | bytes, reason: str) -> None:
    error = rejected(body)
    assert error.reason.startswith(reason)
    assert error.event_id is None


def test_body_of_unexpected_python_type() -> None:
    with pytest.raises(MalformedMessage, match=r"^body: expected a JSON object, got array$"):
        parse_message([1, 2], received_at=RECEIVED)  # type: ignore[arg-type]


def test_huge_body_gives_a_short_reason() -> None:
    huge = "x" * 10_000_000
    for body in (
        huge,
        json.dumps({huge: 1}),
        json.dumps(
            edited("spot-interruption.json", lambda e: e["detail"].update({"state": 1}))
        ).replace('"instance-id"', f'"{huge}"'),
        json.dumps(edited("spot-interruption.json", lambda e: e.update(id=huge))),
        json.dumps(edited("state-change.json", lambda e: e["detail"].update(state=[huge]))),
    ):
        error = rejected(body)
        assert len(error.reason) <= MAX_REASON
        assert error.event_id is None or len(error.event_id) <= 256


# --- the EventBridge envelope ------------------------------------------------------------------


@pytest.mark.parametrize("field", ["id", "detail-type", "source", "time", "detail"])
def test_envelope_missing_field(field: str) -> None:
    error = rejected(edited("spot-interruption.json", lambda e: e.pop(field)))
    assert error.reason == f"{field}: field required"
    if field != "id":
        assert error.event_id == "3f9c2d1e-7a4b-4c8e-9d2f-1b6e8a0c5f31"


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("id", 7, "id: expected a string (got 7)"),
        ("id", "", "id: string should have at least 1 character"),
        ("source", None, "source: expected a string (got null)"),
        ("detail-type", ["x"], 'detail-type: expected a string (got ["x"])'),
        ("account", 123456789012, "account: expected a string"),
        ("region", {}, "region: expected a string"),
        ("resources", "arn", "resources: expected an array"),
        ("time", "yesterday", 'time: not an ISO 8601 time: "yesterday"'),
        ("time", "Tue, 01 Dec 2026 14:02:00 GMT", "time: not an ISO 8601 time"),
        ("time", 1796133720, "time: expected an ISO 8601 time string (got 1796133720)"),
        ("time", "9999-12-31T23:59:00Z", "time: out of range (before 1970 or from 9000 on)"),
        ("detail", [], "detail: expected an object (got [])"),
        ("detail", "{}", "detail: expected an object"),
    ],
)
def test_envelope_wrong_type(field: str, value: object, reason: str) -> None:
    error = rejected(edited("spot-interruption.json", lambda e: e.update({field: value})))
    assert error.reason.startswith(reason)


def test_resources_must_hold_strings() -> None:
    error = rejected(edited("spot-interruption.json", lambda e: e.update(resources=[1])))
    assert error.reason.startswith("resources.0: expected a string")


# --- instance ids ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "i-123",
        "i-0A1B2C3D4E5F60001",
        "0a1b2c3d4e5f60001",
        "i-0a1b2c3d4e5f600011",
        " i-12345678",
        "i-1234567g",
        "vol-0a1b2c3d",
    ],
)
@pytest.mark.parametrize(
    ("name", "path", "field"),
    [
        ("spot-interruption.json", "detail.instance-id", ("detail", "instance-id")),
        ("rebalance-recommendation.json", "detail.instance-id", ("detail", "instance-id")),
        ("state-change.json", "detail.instance-id", ("detail", "instance-id")),
        ("capacity-reservation-interruption.json", "detail.instance-id", ("detail", "instance-id")),
        ("asg-termination.json", "detail.EC2InstanceId", ("detail", "EC2InstanceId")),
        ("raw/asg-lifecycle-hook.json", "EC2InstanceId", (None, "EC2InstanceId")),
    ],
)
def test_bad_instance_id(value: str, name: str, path: str, field: tuple[str | None, str]) -> None:
    def edit(data: dict[str, Any]) -> None:
        (data[field[0]] if field[0] else data)[field[1]] = value

    error = rejected(edited(name, edit))
    assert error.reason == (
        f"{path}: not an EC2 instance id (i- and 8 to 17 hex digits): {json.dumps(value)}"
    )


def test_instance_id_lengths() -> None:
    for digits in (8, 17):
        event = edited("spot-interruption.json", lambda e: None)
        event["detail"]["instance-id"] = "i-" + "a" * digits
        assert parse_message(json.dumps(event), received_at=RECEIVED)
    for digits in (7, 18):
        event["detail"]["instance-id"] = "i-" + "a" * digits
        rejected(event)


# --- details, kind by kind ---------------------------------------------------------------------

REQUIRED_DETAIL = [
    ("spot-interruption.json", "instance-id"),
    ("spot-interruption.json", "instance-action"),
    ("rebalance-recommendation.json", "instance-id"),
    ("state-change.json", "instance-id"),
    ("state-change.json", "state"),
    ("capacity-reservation-interruption.json", "instance-id"),
    ("scheduled-change.json", "service"),
    ("scheduled-change.json", "eventTypeCode"),
    ("scheduled-change.json", "eventTypeCategory"),
    ("scheduled-change.json", "startTime"),
    ("scheduled-change.json", "affectedEntities"),
    ("asg-termination.json", "LifecycleActionToken"),
    ("asg-termination.json", "AutoScalingGroupName"),
    ("asg-termination.json", "LifecycleHookName"),
    ("asg-termination.json", "EC2InstanceId"),
    ("asg-termination.json", "LifecycleTransition"),
]


@pytest.mark.parametrize(("name", "field"), REQUIRED_DETAIL)
def test_detail_missing_field(name: str, field: str) -> None:
    event = edited(name, lambda e: e["detail"].pop(field))
    error = rejected(event)
    assert error.reason == f"detail.{field}: field required"
    assert error.event_id == event["id"]


@pytest.mark.parametrize(("name", "field"), REQUIRED_DETAIL)
@pytest.mark.parametrize("value", [None, 12, ["x"], {"a": "b"}, True])
def test_detail_wrong_type(name: str, field: str, value: object) -> None:
    error = rejected(edited(name, lambda e: e["detail"].update({field: value})))
    assert error.reason.startswith(f"detail.{field}")
    assert "(got " in error.reason


@pytest.mark.parametrize(("name", "field"), REQUIRED_DETAIL)
def test_missing_detail_field_is_named_through_sns(name: str, field: str) -> None:
    error = rejected(sns(edited(name, lambda e: e["detail"].pop(field))))
    assert error.reason == f"Message.detail.{field}: field required"


def test_unknown_spot_instance_action_names_allowed_values() -> None:
    error = rejected(
        edited("spot-interruption.json", lambda e: e["detail"].update({"instance-action": "x"}))
    )
    assert error.reason == (
        "detail.instance-action: input should be 'terminate', 'stop' or 'hibernate' (got \"x\")"
    )


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("startTime", "garbage", 'detail.startTime: not an RFC 1123 date: "garbage"'),
        # "" is due now, as Karpenter (test_events_kinds); a blank is still no date.
        ("startTime", " ", 'detail.startTime: not an RFC 1123 date: " "'),
        ("startTime", "Tue, 32 Dec 2026 09:00:00 GMT", "detail.startTime: not an RFC 1123 date"),
        (
            "startTime",
            1796720400,
            "detail.startTime: expected an RFC 1123 date string (got 1796720400)",
        ),
        ("affectedEntities", {}, "detail.affectedEntities: expected an array"),
        (
            "affectedEntities",
            ["i-0a1b2c3d4e5f60004"],
            'detail.affectedEntities.0: expected an object (got "i-0a1b2c3d4e5f60004")',
        ),
        (
            "affectedEntities",
            [{"entityValue": "i-0a1b2c3d4e5f60004"}, {"entityValue": 5}],
            "detail.affectedEntities.1.entityValue: expected a string (got 5)",
        ),
    ],
)
def test_scheduled_change_bad_field(field: str, value: object, reason: str) -> None:
    error = rejected(edited("scheduled-change.json", lambda e: e["detail"].update({field: value})))
    assert error.reason.startswith(reason)
    assert error.event_id == "7a3e9b15-d4c2-4e8f-b071-5f2c8d6a9e13"


@pytest.mark.parametrize("end_time", ["", "soon", "2026-12-08 10:00 UTC", None])
def test_scheduled_change_fields_lifeboat_does_not_read_never_reject_it(end_time: object) -> None:
    # endTime is informational: a shape AWS has never documented must not lose the notice.
    body = edited("scheduled-change.json", lambda e: e["detail"].update({"endTime": end_time}))
    notices = parse_message(body, received_at=datetime(2026, 12, 1, tzinfo=UTC))
    assert [n.instance_id for n in notices] == ["i-0a1b2c3d4e5f60004", "i-0a1b2c3d4e5f60005"]


def test_capacity_reservation_bad_termination_time() -> None:
    error = rejected(
        edited(
            "capacity-reservation-interruption.json",
            lambda e: e["detail"].update({"instance-termination-time": "in two minutes"}),
        )
    )
    assert error.reason == (
        'detail.instance-termination-time: not an ISO 8601 time: "in two minutes"'
    )


def test_unknown_lifecycle_transition_names_allowed_values() -> None:
    error = rejected(
        edited(
            "asg-termination.json",
            lambda e: e["detail"].update(LifecycleTransition="autoscaling:EC2_INSTANCE_FOO"),
        )
    )
    assert error.reason.startswith(
        "detail.LifecycleTransition: input should be 'autoscaling:EC2_INSTANCE_TERMINATING' or "
        "'autoscaling:EC2_INSTANCE_LAUNCHING'"
    )


# --- raw lifecycle hook messages ---------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    [
        "LifecycleActionToken",
        "AutoScalingGroupName",
        "LifecycleHookName",
        "EC2InstanceId",
        "LifecycleTransition",
        "RequestId",
    ],
)
def test_raw_hook_missing_field(field: str) -> None:
    error = rejected(edited("raw/asg-lifecycle-hook.json", lambda e: e.pop(field)))
    assert error.reason == f"{field}: field required"
    if field != "RequestId":
        assert error.event_id == "a8d3f1c6-2b7e-4d9a-95c0-7e1f4b8a2d63"
    error = rejected(sns(edited("raw/asg-lifecycle-hook.json", lambda e: e.pop(field))))
    assert error.reason == f"Message.{field}: field required"


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("Time", "later", 'Time: not an ISO 8601 time: "later"'),
        ("Time", 0, "Time: expected an ISO 8601 time string (got 0)"),
        ("RequestId", 1, "RequestId: expected a string (got 1)"),
        ("LifecycleActionToken", None, "LifecycleActionToken: expected a string"),
        ("AutoScalingGroupName", "", "AutoScalingGroupName: string should have at least 1"),
        ("LifecycleTransition", "autoscaling:TEST", "LifecycleTransition: input should be"),
    ],
)
def test_raw_hook_bad_field(field: str, value: object, reason: str) -> None:
    error = rejected(edited("raw/asg-lifecycle-hook.json", lambda e: e.update({field: value})))
    assert error.reason.startswith(reason)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda e: e.pop("RequestId"), "RequestId: field required"),
        (lambda e: e.update(Event=3), "Event: expected a string (got 3)"),
        (lambda e: e.update(Time="x"), 'Time: not an ISO 8601 time: "x"'),
    ],
)
def test_test_notification_bad_field(edit: Edit, reason: str) -> None:
    assert rejected(edited("raw/asg-test-notification.json", edit)).reason == reason


# --- SNS ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("garbage", "Message: not valid JSON (Expecting value at char 0)"),
        ("", "Message: not valid JSON (Expecting value at char 0)"),
        ("[1]", "Message: expected a JSON object, got array"),
        ('"hello"', "Message: expected a JSON object, got string"),
        ('{"hello": "world"}', "Message: not an EventBridge event, SNS notification or Auto"),
        (json.dumps(sns("{}")), "Message: an SNS notification inside an SNS notification"),
    ],
)
def test_sns_with_garbage_message(message: str, reason: str) -> None:
    error = rejected(sns(message))
    assert error.reason.startswith(reason)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda n: n.pop("Message"), "Message: field required"),
        (lambda n: n.update(Message={"id": "x"}), "Message: expected a string"),
        (lambda n: n.update(Type="SubscriptionConfirmation"), "Type: input should be 'Notifi"),
    ],
)
def test_sns_bad_envelope(edit: Edit, reason: str) -> None:
    note = sns(sample("spot-interruption.json"))
    edit(note)
    assert rejected(note).reason.startswith(reason)


def test_garbage_sns_message_keeps_the_sns_message_id() -> None:
    assert rejected(sns("garbage")).event_id == "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324"


# --- odd inputs that once slipped through (issue 10.11) ------------------------------------


@pytest.mark.parametrize(
    ("name", "edit", "where"),
    [
        # The notice parsed, then deciding it (time + patience) overflowed into the DLQ.
        ("rebalance-recommendation.json", lambda e: e.update(time="9999-12-31T23:00:00Z"), "time"),
        ("spot-interruption.json", lambda e: e.update(time="0001-01-01T00:00:00Z"), "time"),
        (
            "scheduled-change.json",
            lambda e: e["detail"].update(startTime="Fri, 31 Dec 9999 23:00:00 GMT"),
            "detail.startTime",
        ),
        (
            "scheduled-change.json",
            lambda e: e["detail"].update(startTime="9999-12-31T23:00:00Z"),
            "detail.startTime",
        ),
    ],
)
def test_times_out_of_range_are_rejected_naming_the_field(
    name: str, edit: Edit, where: str
) -> None:
    error = rejected(edited(name, edit))
    assert error.reason.startswith(f"{where}: out of range")


def test_a_far_but_representable_start_time_is_accepted() -> None:
    """Year 2400 is odd but harmless: the window search is bounded (issue 10.9)."""
    body = edited(
        "scheduled-change.json",
        lambda e: e["detail"].update(startTime="Sat, 01 Jan 2400 00:00:00 GMT"),
    )
    notices = parse_message(json.dumps(body), received_at=RECEIVED)
    assert notices[0].deadline == datetime(2400, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "value", ["i-0a1b2c3d4e5f60001\n", "i-0a1b2c3d4e5f60001\r\n", "\ni-0a1b2c3d"]
)
def test_an_instance_id_with_a_newline_is_no_instance_id(value: str) -> None:
    """A regex ending in ``$`` also matches before a trailing newline."""
    error = rejected(
        edited("spot-interruption.json", lambda e: e["detail"].update({"instance-id": value}))
    )
    assert error.reason.startswith("detail.instance-id: not an EC2 instance id")


def test_a_health_entity_with_a_newline_is_not_an_instance() -> None:
    body = edited(
        "scheduled-change.json",
        lambda e: e["detail"].update(affectedEntities=[{"entityValue": "i-0a1b2c3d4e5f60004\n"}]),
    )
    [notice] = parse_message(json.dumps(body), received_at=RECEIVED)
    assert notice.instance_id is None and notice.ignore_reason

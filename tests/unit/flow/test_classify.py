"""``lifeboat.flow.classify``: every kind of message the queue carries told apart in one
place, in the order the pipeline relies on, from the repository's samples."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lifeboat.aws.sweep import sweep_request
from lifeboat.flow.classify import MessageKind, classify
from lifeboat.model.notice import Kind, MalformedMessage, Notice
from lifeboat.wakeup.codec import Task, Wakeup, encode
from tests.support.events import sample

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
INSTANCE = "i-0a1b2c3d4e5f60001"


def body(name: str) -> str:
    return json.dumps(sample(name))


def sns(message: dict[str, Any]) -> str:
    """``message`` as an SNS notification delivers it to the queue."""
    return json.dumps(
        {
            "Type": "Notification",
            "MessageId": "sns-1",
            "TopicArn": "arn:aws:sns:eu-west-1:123456789012:lifeboat",
            "Message": json.dumps(message),
        }
    )


def wakeup(task: Task, notice: Notice, **fields: Any) -> str:
    return encode(Wakeup(task, notice, NOW + timedelta(minutes=5), **fields))


REBALANCE = Notice(Kind.REBALANCE_RECOMMENDATION, "ev-1", NOW, instance_id=INSTANCE)
ROTATION = Notice(Kind.ROTATION, "rot-1", NOW, instance_id=INSTANCE, detail="legacy")
HEALTH = Notice(Kind.SCHEDULED_CHANGE, "ev-2", NOW, deadline=NOW + timedelta(days=2))
SWEEP = Notice(Kind.INSTANCE_IMPAIRED, "sweep-1", NOW)


@pytest.mark.parametrize(
    ("name", "announced"),
    [
        ("spot-interruption", Kind.SPOT_INTERRUPTION),
        ("rebalance-recommendation", Kind.REBALANCE_RECOMMENDATION),
        ("scheduled-change", Kind.SCHEDULED_CHANGE),
        ("state-change", Kind.STATE_CHANGE),
        ("asg-termination", Kind.ASG_TERMINATION),
        ("capacity-reservation-interruption", Kind.CAPACITY_RESERVATION_INTERRUPTION),
        ("capacity-block-expiry", Kind.CAPACITY_BLOCK_EXPIRY),
        ("raw/asg-lifecycle-hook", Kind.ASG_TERMINATION),
        ("raw/asg-test-notification", None),
    ],
)
def test_each_aws_sample_is_an_aws_message_announcing_its_kind(
    name: str, announced: Kind | None
) -> None:
    found = classify(body(name))
    assert (found.kind, found.announced) == (MessageKind.AWS_MESSAGE, announced)


def test_an_sns_wrapped_spot_warning_is_told_through_its_envelope() -> None:
    found = classify(sns(sample("spot-interruption")))
    assert found.kind is MessageKind.AWS_MESSAGE
    assert found.announced is Kind.SPOT_INTERRUPTION
    assert found.envelope is not None and found.envelope.region == "eu-west-1"


def test_an_unknown_detail_type_is_announced_unsupported() -> None:
    event = sample("spot-interruption") | {"detail-type": "EC2 Something New"}
    assert classify(json.dumps(event)).announced is Kind.UNSUPPORTED


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (wakeup(Task.DECIDE, REBALANCE), MessageKind.WAKEUP),
        (wakeup(Task.DECIDE, ROTATION), MessageKind.ROTATION_WAKEUP),
        (wakeup(Task.ROTATE, Notice(Kind.ROTATION, "rot-1", NOW)), MessageKind.ROTATION_WAKEUP),
        (wakeup(Task.REMAINDER, HEALTH, instances=(INSTANCE,)), MessageKind.REMAINDER),
        (wakeup(Task.SWEEP_PART, SWEEP, instances=(INSTANCE,)), MessageKind.SWEEP_PART),
    ],
)
def test_a_wake_up_is_told_by_its_marker_then_its_task(message: str, kind: MessageKind) -> None:
    found = classify(message)
    assert found.kind is kind
    assert found.wakeup is not None and found.envelope is None


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (body("rotation/pause"), MessageKind.ROTATION_COMMAND),
        (json.dumps(sweep_request("s-1", "2026-12-01T14:05:00Z")), MessageKind.SWEEP_REQUEST),
        (body("status/describe-instance-status"), MessageKind.STATUS_ANSWER),
        (body("status/describe-capacity-reservations"), MessageKind.RESERVATIONS_ANSWER),
    ],
)
def test_lifeboat_s_own_messages_and_ec2_s_answers(message: str, kind: MessageKind) -> None:
    assert classify(message).kind is kind


def test_a_forged_wake_up_fails_to_decode_with_the_field_named() -> None:
    forged = json.loads(wakeup(Task.DECIDE, REBALANCE))
    forged["task"] = "take-everything"
    with pytest.raises(MalformedMessage, match="task"):
        classify(json.dumps(forged))


def test_a_rotation_detail_type_from_another_source_is_aws_s() -> None:
    """Only source ``lifeboat`` makes a rotation command: the same detail-type from
    elsewhere goes to AWS's parsers (and is unsupported there)."""
    event = sample("rotation/pause") | {"source": "aws.ec2"}
    found = classify(json.dumps(event))
    assert (found.kind, found.announced) == (MessageKind.AWS_MESSAGE, Kind.UNSUPPORTED)


def test_what_is_no_json_object_is_rejected_naming_the_body() -> None:
    with pytest.raises(MalformedMessage, match="body: expected a JSON object"):
        classify("[1, 2]")
    with pytest.raises(MalformedMessage, match="not an EventBridge event"):
        classify('{"hello": "world"}')

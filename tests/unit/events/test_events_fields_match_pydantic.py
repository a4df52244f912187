"""The hand-written readers of AWS's events (``lifeboat.events.base.Fields``) accept and
reject exactly what the strict pydantic models they replaced did, with the same reason.

The reference models below are those models, kept here as the oracle (the layer reads AWS's
events without pydantic, for the Spot warning's cold start). Each property test mutates a
sample's object (fields deleted, replaced by arbitrary JSON) and checks both readers agree:
the same values, or the same first failing field and wording.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BeforeValidator, Field

from lifeboat.events import (
    asg_lifecycle,
    capacity_reservation,
    envelope,
    scheduled_change,
    spot_interruption,
    state_change,
)
from lifeboat.events.base import Fields, parse_rfc1123
from lifeboat.events.models import (
    Id,
    InstanceId,
    Iso8601,
    Model,
    Name,
    OptionalIso8601,
    validate,
)
from lifeboat.events.notice import MalformedMessage
from tests.support.events import sample
from tests.unit.events.test_events_properties import json_values

# --- the reference models (what the parsers were) ----------------------------------------------


class RefEnvelope(Model):
    version: str = "0"
    id: Id
    detail_type: str = Field(alias="detail-type")
    source: str
    account: str | None = None
    time: Iso8601
    region: str | None = None
    resources: list[str] = Field(default_factory=list)
    detail: dict[str, Any]


class RefSns(Model):
    type: Literal["Notification"] = Field(alias="Type")
    message_id: str | None = Field(None, alias="MessageId")
    topic_arn: str | None = Field(None, alias="TopicArn")
    message: str = Field(alias="Message")


class RefSpot(Model):
    instance_id: InstanceId = Field(alias="instance-id")
    instance_action: Literal["terminate", "stop", "hibernate"] = Field(alias="instance-action")


class RefStateChange(Model):
    instance_id: InstanceId = Field(alias="instance-id")
    state: str


class RefCapacity(Model):
    instance_id: InstanceId = Field(alias="instance-id")
    instance_action: str = Field("terminate", alias="instance-action")
    instance_termination_time: OptionalIso8601 = Field(None, alias="instance-termination-time")


class RefHead(Model):
    service: str
    event_type_code: str = Field(alias="eventTypeCode")
    event_type_category: str = Field(alias="eventTypeCategory")
    status_code: str | None = Field(None, alias="statusCode")
    event_arn: str | None = Field(None, alias="eventArn")


class RefEntity(Model):
    entity_value: str | None = Field(None, alias="entityValue")


def _rfc1123_or_empty(value: Any) -> Any:
    return EMPTY if value == "" else parse_rfc1123(value)


EMPTY = datetime(1, 1, 1, tzinfo=UTC)
RfcOrEmpty = Annotated[datetime, BeforeValidator(_rfc1123_or_empty)]


class RefScheduled(RefHead):
    # Empty: due now, as Karpenter reads an unset startTime (issue 34; test_events_kinds).
    start_time: RfcOrEmpty = Field(alias="startTime")
    affected_entities: list[RefEntity] = Field(alias="affectedEntities")


class RefAction(Model):
    action_token: Id = Field(alias="LifecycleActionToken")
    auto_scaling_group: Name = Field(alias="AutoScalingGroupName")
    hook_name: Name = Field(alias="LifecycleHookName")
    instance_id: InstanceId = Field(alias="EC2InstanceId")
    transition: Literal[
        "autoscaling:EC2_INSTANCE_TERMINATING", "autoscaling:EC2_INSTANCE_LAUNCHING"
    ] = Field(alias="LifecycleTransition")


class RefHook(RefAction):
    request_id: Id = Field(alias="RequestId")
    account_id: str | None = Field(None, alias="AccountId")
    service: str | None = Field(None, alias="Service")
    time: OptionalIso8601 = Field(None, alias="Time")


class RefNotification(Model):
    event: str = Field(alias="Event")
    request_id: Id = Field(alias="RequestId")
    account_id: str | None = Field(None, alias="AccountId")
    auto_scaling_group: str | None = Field(None, alias="AutoScalingGroupName")
    time: OptionalIso8601 = Field(None, alias="Time")


# --- what each reader gives, as plain values ---------------------------------------------------

Reader = Callable[[Fields], dict[str, Any]]


def _envelope(fields: Fields) -> dict[str, Any]:
    event = envelope.EventBridgeEvent.load(fields.data, path=fields.path)
    values = vars(event).copy()
    # Not read from the body: where the record came from, when it was received, and what was
    # assumed for an empty field (a received time for an empty "time").
    for local in ("path", "received_at", "assumed"):
        values.pop(local)
    return values


def _sns(fields: Fields) -> dict[str, Any]:
    # The reader checks Type but keeps only what Lifeboat reads after it.
    return {"type": "Notification", **vars(envelope.SnsNotification.load(fields.data))}


def _scheduled(fields: Fields) -> dict[str, Any]:
    # now: what an empty startTime would be; the samples all name one.
    detail = scheduled_change.ScheduledChangeDetail.read(
        fields, now=datetime(2026, 12, 1, tzinfo=UTC)
    )
    return {
        **vars(detail.head),
        "start_time": EMPTY if fields.data.get("startTime") == "" else detail.start_time,
        "affected_entities": [{"entity_value": value} for value in detail.affected_entities],
    }


def _hook(fields: Fields) -> dict[str, Any]:
    message = asg_lifecycle.HookMessage.read(fields)
    values = {**vars(message.action), **vars(message)}
    values.pop("action")
    return values


CASES: list[tuple[str, str | None, type[Model], Reader]] = [
    ("spot-interruption.json", None, RefEnvelope, _envelope),
    ("raw/asg-lifecycle-hook.json", None, RefHook, _hook),
    ("raw/asg-test-notification.json", None, RefNotification,
     lambda f: vars(asg_lifecycle.AutoScalingNotification.read(f))),
    ("spot-interruption.json", "detail", RefSpot,
     lambda f: vars(spot_interruption.SpotInterruptionDetail.read(f))),
    ("state-change.json", "detail", RefStateChange,
     lambda f: vars(state_change.StateChangeDetail.read(f))),
    ("capacity-reservation-interruption.json", "detail", RefCapacity,
     lambda f: vars(capacity_reservation.CapacityReservationInterruptionDetail.read(f))),
    ("scheduled-change.json", "detail", RefScheduled, _scheduled),
    ("asg-termination.json", "detail", RefAction,
     lambda f: vars(asg_lifecycle.LifecycleAction.read(f))),
]  # fmt: skip

SNS_SAMPLE = {
    "Type": "Notification",
    "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
    "TopicArn": "arn:aws:sns:us-east-1:123456789012:lifeboat",
    "Message": "{}",
}


def _outcome(run: Callable[[], dict[str, Any]]) -> tuple[str, Any]:
    try:
        return "ok", run()
    except MalformedMessage as error:
        return "rejected", (error.reason, error.event_id)


def _agree(data: dict[str, Any], model: type[Model], reader: Reader, path: str) -> None:
    expected = _outcome(
        lambda: validate(model, data, path=path, event_id="e-1").model_dump(mode="python")
    )
    actual = _outcome(lambda: reader(Fields(data, path=path, event_id="e-1")))
    if model in (RefEnvelope, RefSns) and expected[0] == "rejected":
        # An envelope names its own id (``id``, ``MessageId``) when usable, as before.
        expected = ("rejected", (expected[1][0], actual[1][1]))
    assert actual == expected


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with a few of its fields (or their nested values) deleted or replaced."""
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(0, 3))):
        keys = list(value)
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        choice = draw(st.integers(0, 3))
        if choice == 0:
            del value[key]
        elif choice == 1 and isinstance(value[key], list) and value[key]:
            items = value[key]
            items[draw(st.integers(0, len(items) - 1))] = draw(json_values)
        elif choice == 2 and isinstance(value[key], list) and value[key]:
            item = value[key][0]
            if isinstance(item, dict) and item:
                item[draw(st.sampled_from(list(item)))] = draw(json_values)
        else:
            value[key] = draw(json_values | st.text(max_size=300))
    return value


@pytest.mark.parametrize(("name", "part", "model", "reader"), CASES)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_reader_matches_the_pydantic_model(
    name: str, part: str | None, model: type[Model], reader: Reader, data: st.DataObject
) -> None:
    base = sample(name) if part is None else sample(name)[part]
    _agree(data.draw(mutated(base)), model, reader, part or "")


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_sns_reader_matches_the_pydantic_model(data: st.DataObject) -> None:
    _agree(data.draw(mutated(SNS_SAMPLE)), RefSns, _sns, "")


def test_the_samples_themselves_read_alike() -> None:
    for name, part, model, reader in CASES:
        base = sample(name) if part is None else sample(name)[part]
        _agree(base, model, reader, part or "")

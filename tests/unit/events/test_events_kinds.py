"""Every event kind in every accepted form, and every no-op, parses to the right notices."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lifeboat.events import Kind, LifecycleHook, Notice, parse_message
from lifeboat.events.registry import ROUTES, kind_of, lookup, parsers, supported
from lifeboat.model.notice import MalformedMessage
from tests.support.events import sample

RECEIVED = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)
TOPIC = "arn:aws:sns:eu-west-1:123456789012:lifeboat-hooks"


def parse(body: object) -> list[Notice]:
    text = body if isinstance(body, str | bytes) else json.dumps(body)
    return parse_message(text, received_at=RECEIVED)


def sns(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": TOPIC,
        "Subject": "Auto Scaling:  Lifecycle action 'TERMINATING' for instance i-0a1b2c3d4e5f60006",
        "Message": json.dumps(message),
        "Timestamp": "2026-12-01T14:04:00.902Z",
        "SignatureVersion": "1",
        "Signature": "EXAMPLE",
        "SigningCertURL": "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-x.pem",
        "UnsubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe",
    }


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- spot interruption -------------------------------------------------------------------------


def test_spot_interruption() -> None:
    [notice] = parse(sample("spot-interruption.json"))
    assert notice == Notice(
        kind=Kind.SPOT_INTERRUPTION,
        event_id="3f9c2d1e-7a4b-4c8e-9d2f-1b6e8a0c5f31",
        event_time=at("2026-12-01T14:02:00+00:00"),
        instance_id="i-0a1b2c3d4e5f60001",
        deadline=at("2026-12-01T14:04:00+00:00"),
        account="123456789012",
        region="us-east-1",
        detail="terminate",
    )
    assert notice.involuntary
    assert notice.dedup_key == "3f9c2d1e-7a4b-4c8e-9d2f-1b6e8a0c5f31#i-0a1b2c3d4e5f60001"


@pytest.mark.parametrize("action", ["terminate", "stop", "hibernate"])
def test_spot_interruption_actions(action: str) -> None:
    event = sample("spot-interruption.json")
    event["detail"]["instance-action"] = action
    [notice] = parse(event)
    assert notice.detail == action
    assert notice.ignore_reason is None


# --- rebalance recommendation ------------------------------------------------------------------


def test_rebalance_recommendation() -> None:
    [notice] = parse(sample("rebalance-recommendation.json"))
    assert notice.kind is Kind.REBALANCE_RECOMMENDATION
    assert notice.instance_id == "i-0a1b2c3d4e5f60002"
    assert notice.event_time == at("2026-12-01T14:01:30+00:00")
    assert notice.deadline is None
    assert notice.ignore_reason is None
    assert not notice.involuntary


# --- scheduled change --------------------------------------------------------------------------


def test_scheduled_change_one_notice_per_instance() -> None:
    notices = parse(sample("scheduled-change.json"))
    assert [n.instance_id for n in notices] == ["i-0a1b2c3d4e5f60004", "i-0a1b2c3d4e5f60005"]
    for notice in notices:
        assert notice.kind is Kind.SCHEDULED_CHANGE
        assert notice.event_id == "7a3e9b15-d4c2-4e8f-b071-5f2c8d6a9e13"
        assert notice.event_time == at("2026-12-01T13:30:00+00:00")
        assert notice.deadline == at("2026-12-08T09:00:00+00:00")
        assert notice.detail == "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
        assert notice.ignore_reason is None
        assert not notice.involuntary
    assert len({n.dedup_key for n in notices}) == 2


def test_scheduled_change_accepts_iso8601_start_time() -> None:
    event = sample("scheduled-change.json")
    event["detail"]["startTime"] = "2026-12-08T10:00:00+01:00"
    notices = parse(event)
    assert {n.deadline for n in notices} == {at("2026-12-08T09:00:00+00:00")}


def test_scheduled_change_with_an_empty_start_time_is_due_now() -> None:
    """``startTime: ""`` (a string, as AWS Health's EventBridge schema types it, but empty:
    what Go's json.Marshal writes for an unset field in Karpenter's interruption tests) is due
    at once, as Karpenter acts on it: its ``scheduledchange`` message never reads startTime
    and ``actionForMessage`` drains a ScheduledChangeKind at once. The detail says so."""
    event = sample("scheduled-change.json")
    event["detail"]["startTime"] = ""
    notices = parse(event)
    assert [n.instance_id for n in notices] == ["i-0a1b2c3d4e5f60004", "i-0a1b2c3d4e5f60005"]
    for notice in notices:
        assert notice.deadline == RECEIVED
        assert notice.event_time == at("2026-12-01T13:30:00+00:00")  # the envelope's, as sent
        assert notice.detail == (
            "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED; startTime empty: due now "
            "(Karpenter drains a scheduled change at once)"
        )


@pytest.mark.parametrize(
    "name", ["spot-interruption.json", "scheduled-change.json", "state-change.json"]
)
def test_an_empty_envelope_time_is_the_receipt_time(name: str) -> None:
    """``time: ""``: the receipt time, as the Node Termination Handler's
    ``EventBridgeEvent.getTime`` (pkg/monitor/sqsevent/event-bridge.go) uses the current
    time for an event time it cannot parse; every notice's detail says so. The Spot
    warning's deadline counts from it (two minutes after receipt)."""
    event = sample(name)
    event["time"] = ""
    notices = parse(event)
    assert notices
    for notice in notices:
        assert notice.event_time == RECEIVED
        assert notice.detail.endswith(
            "time empty: the receipt time stands in (as the Node Termination Handler)"
        )
    if name == "spot-interruption.json":
        assert notices[0].deadline == RECEIVED + timedelta(minutes=2)


def test_a_time_that_is_neither_empty_nor_a_time_is_still_rejected() -> None:
    """Only the empty string stands for "not given": anything else unreadable names the field."""
    event = sample("spot-interruption.json")
    event["time"] = " "
    with pytest.raises(MalformedMessage, match="time: not an ISO 8601 time"):
        parse(event)
    event = sample("scheduled-change.json")
    event["detail"]["startTime"] = " "
    with pytest.raises(MalformedMessage, match=r"detail\.startTime: not an RFC 1123 date"):
        parse(event)


def test_scheduled_change_skips_entities_that_are_not_instances() -> None:
    event = sample("scheduled-change.json")
    event["detail"]["affectedEntities"] = [
        {"entityValue": "vol-0123456789abcdef0"},
        {"entityValue": "i-0a1b2c3d4e5f60005"},
        {"entityValue": "i-0a1b2c3d4e5f60005"},
        {"entityArn": "arn:aws:health:us-east-1:123456789012:entity/x"},
    ]
    notices = parse(event)
    assert [n.instance_id for n in notices] == ["i-0a1b2c3d4e5f60005"]


@pytest.mark.parametrize("entities", [[], [{"entityValue": "vol-0123456789abcdef0"}]])
def test_scheduled_change_without_instances_is_ignored(entities: list[dict[str, str]]) -> None:
    event = sample("scheduled-change.json")
    event["detail"]["affectedEntities"] = entities
    [notice] = parse(event)
    assert notice.kind is Kind.SCHEDULED_CHANGE
    assert notice.instance_id is None
    assert notice.ignore_reason == "no affected entity of the health event is an EC2 instance"


@pytest.mark.parametrize(
    ("service", "category"),
    [("EC2", "issue"), ("EC2", "accountNotification"), ("RDS", "scheduledChange")],
)
def test_health_events_other_than_ec2_scheduled_changes_are_ignored(
    service: str, category: str
) -> None:
    event = sample("scheduled-change.json")
    event["detail"]["service"] = service
    event["detail"]["eventTypeCategory"] = category
    # Not an EC2 scheduled change: the rest of the detail is not even looked at.
    del event["detail"]["startTime"]
    del event["detail"]["affectedEntities"]
    [notice] = parse(event)
    assert notice.kind is Kind.SCHEDULED_CHANGE
    assert notice.instance_id is None
    assert notice.ignore_reason == (
        f"health event of service {service!r}, category {category!r} is not an EC2 scheduled change"
    )


def test_closed_health_event_ends_the_maintenance_of_each_instance_it_names() -> None:
    event = sample("scheduled-change.json")
    event["detail"]["statusCode"] = "closed"
    notices = parse(event)
    assert [n.instance_id for n in notices] == ["i-0a1b2c3d4e5f60004", "i-0a1b2c3d4e5f60005"]
    assert all(n.ends_maintenance and n.ignore_reason is None for n in notices)


def test_closed_health_event_naming_no_instance_is_ignored() -> None:
    event = sample("scheduled-change.json")
    event["detail"]["statusCode"] = "closed"
    event["detail"]["affectedEntities"] = []
    [notice] = parse(event)
    assert notice.ignore_reason is not None
    assert "closed" in notice.ignore_reason


# --- state change ------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["stopping", "stopped", "shutting-down", "terminated"])
def test_state_change_actionable(state: str) -> None:
    event = sample("state-change.json")
    event["detail"]["state"] = state
    [notice] = parse(event)
    assert notice.kind is Kind.STATE_CHANGE
    assert notice.instance_id == "i-0a1b2c3d4e5f60003"
    assert notice.deadline == notice.event_time == at("2026-12-01T14:03:00+00:00")
    assert notice.detail == state
    assert notice.ignore_reason is None
    assert notice.involuntary


@pytest.mark.parametrize("state", ["pending", "running", "rebooting"])
def test_state_change_not_actionable(state: str) -> None:
    event = sample("state-change.json")
    event["detail"]["state"] = state
    [notice] = parse(event)
    assert notice.kind is Kind.STATE_CHANGE
    assert notice.instance_id == "i-0a1b2c3d4e5f60003"
    assert notice.deadline is None
    assert notice.ignore_reason == f"state {state!r} is not actionable"


# --- capacity reservation interruption ---------------------------------------------------------


def test_capacity_reservation_interruption() -> None:
    [notice] = parse(sample("capacity-reservation-interruption.json"))
    assert notice.kind is Kind.CAPACITY_RESERVATION_INTERRUPTION
    assert notice.instance_id == "i-0a1b2c3d4e5f60007"
    assert notice.deadline == at("2026-12-01T14:07:00+00:00")
    assert notice.detail == "terminate"
    assert notice.involuntary


def test_capacity_reservation_deadline_is_the_earlier_of_two_minutes_and_termination_time() -> None:
    event = sample("capacity-reservation-interruption.json")
    event["detail"]["instance-termination-time"] = "2026-12-01T14:06:00Z"
    assert parse(event)[0].deadline == at("2026-12-01T14:06:00+00:00")
    event["detail"]["instance-termination-time"] = "2026-12-01T15:00:00Z"
    assert parse(event)[0].deadline == at("2026-12-01T14:07:00+00:00")
    del event["detail"]["instance-termination-time"]
    del event["detail"]["instance-action"]
    [notice] = parse(event)
    assert notice.deadline == at("2026-12-01T14:07:00+00:00")
    assert notice.detail == "terminate"


# --- ASG lifecycle -----------------------------------------------------------------------------

HOOK = LifecycleHook(
    auto_scaling_group="eks-system-20260101-1a2b3c4d",
    hook_name="lifeboat-drain",
    action_token="5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
    instance_id="i-0a1b2c3d4e5f60006",
)


def test_asg_termination_eventbridge() -> None:
    [notice] = parse(sample("asg-termination.json"))
    assert notice == Notice(
        kind=Kind.ASG_TERMINATION,
        event_id="e4b7c2d9-1f83-4a6e-b5d0-8c2f7e9a3b16",
        event_time=at("2026-12-01T14:04:00+00:00"),
        instance_id="i-0a1b2c3d4e5f60006",
        deadline=at("2026-12-01T15:04:00+00:00"),
        account="123456789012",
        region="us-east-1",
        detail="autoscaling:EC2_INSTANCE_TERMINATING",
        lifecycle=HOOK,
    )
    assert notice.lifecycle is not None
    assert notice.lifecycle.heartbeat_timeout_seconds is None


def test_asg_termination_raw_hook_message() -> None:
    [notice] = parse(sample("raw/asg-lifecycle-hook.json"))
    assert notice.kind is Kind.ASG_TERMINATION
    assert notice.event_id == "a8d3f1c6-2b7e-4d9a-95c0-7e1f4b8a2d63"
    assert notice.event_time == at("2026-12-01T14:04:00.418+00:00")
    assert notice.deadline == at("2026-12-01T15:04:00.418+00:00")
    assert notice.account == "123456789012"
    assert notice.region is None
    assert notice.lifecycle == HOOK
    assert notice.ignore_reason is None


def test_asg_termination_raw_hook_without_time_uses_received_at() -> None:
    message = sample("raw/asg-lifecycle-hook.json")
    del message["Time"]
    [notice] = parse(message)
    assert notice.event_time == RECEIVED
    assert notice.deadline == RECEIVED + timedelta(hours=1)


def test_asg_termination_raw_hook_through_sns() -> None:
    [notice] = parse(sns(sample("raw/asg-lifecycle-hook.json")))
    assert notice.kind is Kind.ASG_TERMINATION
    assert notice.event_id == "a8d3f1c6-2b7e-4d9a-95c0-7e1f4b8a2d63"
    assert notice.lifecycle == HOOK
    assert notice.region == "eu-west-1"  # the topic's region: the message carries none


def test_asg_termination_eventbridge_through_sns() -> None:
    [notice] = parse(sns(sample("asg-termination.json")))
    assert notice.event_id == "e4b7c2d9-1f83-4a6e-b5d0-8c2f7e9a3b16"
    assert notice.lifecycle == HOOK
    assert notice.region == "us-east-1"  # the event's own region wins over the topic's


def test_asg_termination_eventbridge_without_origin_and_destination() -> None:
    event = sample("asg-termination.json")
    del event["detail"]["Origin"]
    del event["detail"]["Destination"]
    [notice] = parse(event)
    assert notice.lifecycle == HOOK


@pytest.mark.parametrize("wrap", [lambda m: m, sns], ids=["raw", "sns"])
def test_asg_test_notification_is_ignored(wrap: Any) -> None:
    [notice] = parse(wrap(sample("raw/asg-test-notification.json")))
    assert notice.kind is Kind.ASG_TERMINATION
    assert notice.instance_id is None
    assert notice.ignore_reason == "test notification"
    assert notice.event_id == "f2c7a9e4-6d1b-4a3f-8e50-b9d2c4a7e1f3"
    assert notice.event_time == at("2026-12-01T12:00:00.117+00:00")
    assert notice.lifecycle is None


def test_asg_instance_notification_is_unsupported() -> None:
    message = sample("raw/asg-test-notification.json")
    message["Event"] = "autoscaling:EC2_INSTANCE_TERMINATE"
    [notice] = parse(message)
    assert notice.kind is Kind.UNSUPPORTED
    assert notice.ignore_reason is not None
    assert "autoscaling:EC2_INSTANCE_TERMINATE" in notice.ignore_reason


def test_asg_launching_transition_raw_is_a_launch_notice() -> None:
    """Issue 22: a launch lifecycle action is its own kind, with its hook, so it can be
    completed once the node is Ready (when ``complete_launch_hooks`` is on)."""
    message = sample("raw/asg-lifecycle-hook.json")
    message["LifecycleTransition"] = "autoscaling:EC2_INSTANCE_LAUNCHING"
    [notice] = parse(message)
    assert notice.kind is Kind.ASG_LAUNCH
    assert not notice.involuntary
    assert notice.instance_id == "i-0a1b2c3d4e5f60006"
    assert notice.lifecycle is not None
    assert notice.lifecycle.hook_name == "lifeboat-drain"
    assert notice.deadline == notice.event_time + timedelta(hours=1)
    assert notice.ignore_reason is None


def test_asg_launch_lifecycle_action_event_is_a_launch_notice() -> None:
    event = sample("asg-termination.json")
    event["detail-type"] = "EC2 Instance-launch Lifecycle Action"
    event["detail"]["LifecycleTransition"] = "autoscaling:EC2_INSTANCE_LAUNCHING"
    [notice] = parse(event)
    assert notice.kind is Kind.ASG_LAUNCH
    assert notice.lifecycle is not None
    assert notice.ignore_reason is None


# --- envelope ----------------------------------------------------------------------------------


def test_unsupported_detail_type() -> None:
    event = sample("spot-interruption.json")
    event["detail-type"] = "EBS Snapshot Notification"
    event["detail"] = {"result": "succeeded"}
    [notice] = parse(event)
    assert notice.kind is Kind.UNSUPPORTED
    assert notice.event_id == "3f9c2d1e-7a4b-4c8e-9d2f-1b6e8a0c5f31"
    assert notice.instance_id is None
    assert notice.ignore_reason == (
        'unsupported event: source "aws.ec2", detail-type "EBS Snapshot Notification"'
    )


def test_unsupported_source() -> None:
    event = sample("spot-interruption.json")
    event["source"] = "aws.s3"
    [notice] = parse(event)
    assert notice.kind is Kind.UNSUPPORTED
    assert notice.ignore_reason is not None
    assert '"aws.s3"' in notice.ignore_reason


def test_eventbridge_through_sns() -> None:
    [notice] = parse(sns(sample("spot-interruption.json")))
    assert notice == parse(sample("spot-interruption.json"))[0]


def test_event_without_account_and_region() -> None:
    """moto delivers events without ``account``."""
    event = sample("spot-interruption.json")
    del event["account"]
    del event["region"]
    del event["resources"]
    del event["version"]
    [notice] = parse(event)
    assert notice.account is None
    assert notice.region is None
    assert notice.kind is Kind.SPOT_INTERRUPTION


@pytest.mark.parametrize(
    "form", ["str", "bytes", "dict"], ids=["str-body", "bytes-body", "mapping-body"]
)
def test_body_forms(form: str) -> None:
    event = sample("spot-interruption.json")
    body: Any = {"str": json.dumps(event), "bytes": json.dumps(event).encode(), "dict": event}
    notices = parse_message(body[form], received_at=RECEIVED)
    assert notices == parse(event)


def test_times_are_utc() -> None:
    event = sample("spot-interruption.json")
    event["time"] = "2026-12-01T16:02:00+02:00"
    [notice] = parse(event)
    assert notice.event_time.utcoffset() == timedelta(0)
    assert notice.event_time == at("2026-12-01T14:02:00+00:00")
    assert notice.deadline == at("2026-12-01T14:04:00+00:00")


def test_naive_received_at_is_taken_as_utc() -> None:
    message = sample("raw/asg-lifecycle-hook.json")
    del message["Time"]
    [notice] = parse_message(json.dumps(message), received_at=datetime(2026, 12, 1, 15, 0))
    assert notice.event_time == RECEIVED
    assert notice.event_time.tzinfo is UTC


def test_parsing_does_not_mutate_a_mapping_body() -> None:
    event = sample("scheduled-change.json")
    before = copy.deepcopy(event)
    parse_message(event, received_at=RECEIVED)
    assert event == before


def test_registry() -> None:
    pairs = supported()
    assert ("aws.ec2", "EC2 Spot Instance Interruption Warning") in pairs
    assert ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning") in pairs
    assert ("aws.health", "AWS Health Event") in pairs
    assert ("aws.autoscaling", "EC2 Instance-terminate Lifecycle Action") in pairs
    # Both spellings of the Capacity Block's two detail-types (the EC2 guide's revisions).
    assert ("aws.ec2", "Capacity Block Reservation Expiration Warning") in pairs
    assert ("aws.ec2", "Capacity Block Expiration Warning") in pairs
    assert len(pairs) == len(set(pairs)) == 11
    assert lookup("aws.ec2", "nope") is None


def test_each_route_names_the_parser_its_module_registers() -> None:
    """The registry says each pair's kind and module without importing it (the cold start
    loads the Spot warning's parser only): what it says is what the parsers say."""
    found = parsers()
    assert len(found) == len(ROUTES) == len({id(parser) for parser in found})
    for parser in found:
        kind, module = ROUTES[(parser.source, parser.detail_type)]
        assert parser.kind is kind and kind_of(parser.source, parser.detail_type) is kind
        assert type(parser).__module__ == f"lifeboat.events.{module}"
        assert lookup(parser.source, parser.detail_type) is parser
    assert kind_of("aws.ec2", "nope") is None


def test_an_empty_start_time_keys_the_ledger_by_the_event_not_by_its_receipt() -> None:
    """Hostile review of 34.5: the ledger keys a maintenance by instance and start, so that
    Health and EC2's scheduled event are one maintenance. An empty ``startTime`` is the
    receipt time, which differs on every delivery: keyed by it, SQS's second delivery of an
    event already acted on was a new maintenance, never a duplicate. It is keyed by the event
    (and instance) instead."""
    event = sample("scheduled-change.json")
    event["detail"]["startTime"] = ""
    text = json.dumps(event)
    first = parse_message(text, received_at=RECEIVED)
    again = parse_message(text, received_at=RECEIVED + timedelta(minutes=7))
    assert [n.deadline for n in again] == [RECEIVED + timedelta(minutes=7)] * 2
    assert [n.ledger_key for n in first] == [n.ledger_key for n in again]
    assert [n.ledger_key for n in first] == [n.dedup_key for n in first]

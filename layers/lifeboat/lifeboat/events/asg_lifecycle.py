"""Auto Scaling lifecycle hooks: an instance of an Auto Scaling group is being terminated.

Three forms reach the queue, all parsed here:

* the EventBridge event ``aws.autoscaling`` / ``EC2 Instance-terminate Lifecycle Action``;
* the hook message Auto Scaling sends straight to SQS (or SNS) when the hook's notification
  target is the queue (``LifecycleTransition``, ``LifecycleActionToken``, ``RequestId``,
  ``Time``, ...);
* ``autoscaling:TEST_NOTIFICATION``, sent once when such a hook is created: a no-op.

Launch transitions become ``asg-launch`` notices, completed once the new instance's node is
Ready when ``complete_launch_hooks`` is on, and ignored otherwise.

The deadline is the event time plus one hour, the default heartbeat timeout: neither form
carries the hook's actual ``HeartbeatTimeout``, so ``LifecycleHook.heartbeat_timeout_seconds``
stays ``None`` and whoever needs the real value asks Auto Scaling (DescribeLifecycleHooks).
https://docs.aws.amazon.com/autoscaling/ec2/userguide/prepare-for-lifecycle-notifications.html
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lifeboat.events.base import Fields, clip, join_path, known_id, shift
from lifeboat.events.envelope import EventBridgeEvent, Form, Unwrapped
from lifeboat.model.notice import Kind, LifecycleHook, Notice

TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
LAUNCHING = "autoscaling:EC2_INSTANCE_LAUNCHING"
TEST_NOTIFICATION = "autoscaling:TEST_NOTIFICATION"
DEFAULT_HEARTBEAT_TIMEOUT = timedelta(hours=1)
"""Auto Scaling's default ``HeartbeatTimeout``; the messages do not carry the hook's own."""


TRANSITIONS = ("autoscaling:EC2_INSTANCE_TERMINATING", "autoscaling:EC2_INSTANCE_LAUNCHING")
GLOBAL_TIMEOUT = timedelta(hours=48)
"""The most a lifecycle action can be kept waiting (heartbeats included): the smaller of
100 x ``HeartbeatTimeout`` and 48 hours; Auto Scaling goes on after it whatever Lifeboat does."""


def lifecycle_expired(notice: Notice, now: datetime) -> bool:
    """Whether ``notice``'s lifecycle action has outlived the hook's global timeout (or has
    none): past it, waiting for anything more only delays the answer Auto Scaling no longer
    waits for."""
    return notice.lifecycle is None or now >= notice.event_time + GLOBAL_TIMEOUT


@dataclass(frozen=True)
class LifecycleAction:
    """The ``detail`` of the EventBridge form; the fields the raw form shares with it."""

    action_token: str
    auto_scaling_group: str
    hook_name: str
    instance_id: str
    transition: str

    @classmethod
    def read(cls, fields: Fields) -> LifecycleAction:
        return cls(
            action_token=fields.identifier("LifecycleActionToken"),
            auto_scaling_group=fields.name("AutoScalingGroupName"),
            hook_name=fields.name("LifecycleHookName"),
            instance_id=fields.instance_id("EC2InstanceId"),
            transition=fields.literal("LifecycleTransition", TRANSITIONS),
        )


@dataclass(frozen=True)
class HookMessage:
    """The message a lifecycle hook sends straight to SQS or SNS."""

    action: LifecycleAction
    request_id: str
    account_id: str | None = None
    service: str | None = None
    time: datetime | None = None

    @classmethod
    def read(cls, fields: Fields) -> HookMessage:
        return cls(
            action=LifecycleAction.read(fields),
            request_id=fields.identifier("RequestId"),
            account_id=fields.string("AccountId", None),
            service=fields.string("Service", None),
            time=fields.time("Time", default=None),
        )


@dataclass(frozen=True)
class AutoScalingNotification:
    """A message with an ``Event`` field: the test notification, or an instance notification."""

    event: str
    request_id: str
    account_id: str | None = None
    auto_scaling_group: str | None = None
    time: datetime | None = None

    @classmethod
    def read(cls, fields: Fields) -> AutoScalingNotification:
        return cls(
            event=fields.string("Event"),
            request_id=fields.identifier("RequestId"),
            account_id=fields.string("AccountId", None),
            auto_scaling_group=fields.string("AutoScalingGroupName", None),
            time=fields.time("Time", default=None),
        )


def _notices(
    action: LifecycleAction,
    *,
    event_id: str,
    event_time: datetime,
    account: str | None,
    region: str | None,
    time_field: str,
) -> list[Notice]:
    common: dict[str, Any] = {
        "kind": Kind.ASG_TERMINATION,
        "event_id": event_id,
        "event_time": event_time,
        "instance_id": action.instance_id,
        "account": account,
        "region": region,
        "detail": action.transition,
    }
    if action.transition == LAUNCHING:
        # Completed once the new instance's node is Ready, if the operator turned that on
        # (``complete_launch_hooks``, as the Node Termination Handler offers); else ignored.
        common["kind"] = Kind.ASG_LAUNCH
    elif action.transition != TERMINATING:
        reason = f"lifecycle transition {action.transition} is not a termination"
        return [Notice(**common, ignore_reason=reason)]
    hook = LifecycleHook(
        auto_scaling_group=action.auto_scaling_group,
        hook_name=action.hook_name,
        action_token=action.action_token,
        instance_id=action.instance_id,
    )
    deadline = shift(event_time, DEFAULT_HEARTBEAT_TIMEOUT, field=time_field, event_id=event_id)
    return [Notice(**common, deadline=deadline, lifecycle=hook)]


class LifecycleActionParser:
    """The EventBridge form, for one of the two lifecycle detail-types."""

    source = "aws.autoscaling"
    kind = Kind.ASG_TERMINATION

    def __init__(self, detail_type: str) -> None:
        self.detail_type = detail_type

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        action = LifecycleAction.read(event.detail_fields())
        return _notices(
            action,
            event_id=event.id,
            event_time=event.time,
            account=event.account,
            region=event.region,
            time_field=event.field("time"),
        )


PARSERS = (
    LifecycleActionParser("EC2 Instance-terminate Lifecycle Action"),
    LifecycleActionParser("EC2 Instance-launch Lifecycle Action"),
)


def parse_autoscaling_message(message: Unwrapped, *, received_at: datetime) -> list[Notice]:
    """Notices for a message Auto Scaling sent without EventBridge (straight or through SNS).

    ``received_at`` stands in for ``Time`` when the message has none.
    """
    payload, path = message.payload, message.path
    if message.form is Form.AUTOSCALING_NOTIFICATION:
        note = AutoScalingNotification.read(
            Fields(payload, path=path, event_id=known_id(payload.get("RequestId")))
        )
        if note.event == TEST_NOTIFICATION:
            reason = "test notification"
        else:
            reason = f"Auto Scaling notification {clip(note.event)!r} is not a lifecycle action"
        return [
            Notice(
                kind=Kind.ASG_TERMINATION if note.event == TEST_NOTIFICATION else Kind.UNSUPPORTED,
                event_id=note.request_id,
                event_time=note.time or received_at,
                account=note.account_id,
                region=message.region,
                detail=clip(note.event),
                ignore_reason=reason,
            )
        ]
    hook = HookMessage.read(Fields(payload, path=path, event_id=known_id(payload.get("RequestId"))))
    return _notices(
        hook.action,
        event_id=hook.request_id,
        event_time=hook.time or received_at,
        account=hook.account_id,
        region=message.region,
        time_field=join_path(path, "Time"),
    )

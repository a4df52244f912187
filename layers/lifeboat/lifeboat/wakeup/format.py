"""The wire format of a wake-up (``lifeboat.wakeup.codec``), validated with pydantic.

Loaded with the first wake-up a batch holds, never by a batch of AWS's warnings alone:
pydantic's import is tens of milliseconds of cold start (``lifeboat.events.base``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from lifeboat.events.base import MAX_REASON
from lifeboat.events.models import Id, InstanceId, Iso8601, Model, Name, OptionalIso8601, validate
from lifeboat.model.notice import Kind, LifecycleHook, Notice
from lifeboat.wakeup.model import MARKER, MAX_REMAINDER, Task, Wakeup


def read(message: Mapping[str, Any]) -> Wakeup:
    """The wake-up ``message`` holds, each field typed and bounded (its consistency is
    ``lifeboat.wakeup.codec.decode``'s to check). Raises :class:`MalformedMessage`."""
    body = validate(_WakeupBody, message, path=MARKER, event_id=None)
    notice = body.notice
    hook = notice.lifecycle
    return Wakeup(
        task=body.task,
        notice=Notice(
            kind=notice.kind,
            event_id=notice.event_id,
            event_time=notice.event_time,
            instance_id=notice.instance_id,
            deadline=notice.deadline,
            account=notice.account,
            region=notice.region,
            detail=notice.detail,
            lifecycle=None if hook is None else LifecycleHook(**hook.model_dump()),
            ignore_reason=notice.ignore_reason,
            ends_maintenance=notice.ends_maintenance,
            ec2_event=notice.ec2_event,
            event_arn=notice.event_arn,
            reservation_id=notice.reservation_id,
        ),
        due=body.due,
        replacement=body.replacement,
        old_nodeclaim=body.old_nodeclaim,
        old_nodeclaim_uid=body.old_nodeclaim_uid,
        started=body.started,
        attempt=body.attempt,
        cluster=body.cluster,
        instances=tuple(body.instances),
    )


# A Kubernetes object name (DNS-1123 subdomain), an object uid, an EKS cluster name.
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
ObjectName = Annotated[str, StringConstraints(max_length=253, pattern=_DNS_SUBDOMAIN)]
Uid = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=r"^[0-9a-zA-Z-]+$")]
ClusterName = Annotated[str, StringConstraints(pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")]
Short = Annotated[str, StringConstraints(max_length=MAX_REASON)]


class _HookBody(Model):
    auto_scaling_group: Name
    hook_name: Name
    action_token: Id
    instance_id: InstanceId
    heartbeat_timeout_seconds: Annotated[int, Field(ge=30, le=7200)] | None = None


class _NoticeBody(Model):
    # Enums arrive as their values: not strict about the Python type there.
    kind: Kind = Field(strict=False)
    event_id: Id
    event_time: Iso8601
    instance_id: InstanceId | None = None
    deadline: OptionalIso8601 = None
    account: Annotated[str, StringConstraints(max_length=64)] | None = None
    region: Annotated[str, StringConstraints(max_length=64)] | None = None
    detail: Short = ""
    lifecycle: _HookBody | None = None
    ignore_reason: Short | None = None
    # The end of a maintenance (a remainder of a sweep's notices may carry one).
    ends_maintenance: bool = False
    ec2_event: bool = False
    # AWS Health's eventArn (a deferred Health notice records it on the node when it acts).
    event_arn: Annotated[str, StringConstraints(max_length=1600)] | None = None
    # The ending Capacity Block's reservation (its instances' replacements stay out of it).
    reservation_id: Annotated[str, StringConstraints(pattern=r"^cr-[0-9a-f]{8,17}$")] | None = None


class _WakeupBody(Model):
    version: Literal[1] = Field(alias="lifeboat-wakeup")  # MARKER
    task: Task = Field(strict=False)
    notice: _NoticeBody
    due: Iso8601
    replacement: ObjectName | None = None
    old_nodeclaim: ObjectName | None = None
    old_nodeclaim_uid: Uid | None = None
    started: OptionalIso8601 = None
    attempt: Annotated[int, Field(ge=0, le=100_000)] = 0
    cluster: ClusterName | None = None
    # A remainder (lifeboat.flow.split) names no more instances than one message acts on.
    instances: Annotated[list[InstanceId], Field(max_length=MAX_REMAINDER)] = []


MODELS: tuple[type[Model], ...] = (_HookBody, _NoticeBody, _WakeupBody)


def build_models() -> None:
    """Build the models' validators now (they are deferred to first use, ``defer_build``):
    SnapStart's ``before_snapshot`` calls it, so a restored environment's first wake-up
    finds them built (about 40 ms otherwise)."""
    for model in MODELS:
        model.model_rebuild(force=True)

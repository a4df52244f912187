"""Work that must happen later: a deferred notice to decide again, a replacement to finish.

A wake-up travels as an ordinary message on Lifeboat's own queue (EventBridge Scheduler
puts it there at its time in AWS; replay keeps it in memory), so it goes through the same
handler, the same batch failure handling and the same dead-letter queue as AWS's events.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field, StringConstraints

from lifeboat.events.base import (
    MAX_REASON,
    Id,
    InstanceId,
    Iso8601,
    Model,
    Name,
    OptionalIso8601,
    malformed,
    validate,
)
from lifeboat.events.notice import Kind, LifecycleHook, Notice
from lifeboat.target import ClaimRef

MARKER = "lifeboat-wakeup"
VERSION = 1
# The most instances a remainder may name: lifeboat.split.NOTICES_PER_MESSAGE (a test keeps
# the two equal; this module cannot import that one, which imports it).
MAX_REMAINDER = 50


class Task(StrEnum):
    DECIDE = "decide"  # a deferred voluntary notice: decide again against today's cluster
    FINISH_REPLACEMENT = "finish-replacement"  # delete the old claim once replaced
    CONTINUE_DRAIN = "continue-drain"  # evictions a PDB held back
    ROTATE = "rotate"  # look at a rotation again (lifeboat.rotation); about no one instance
    # The instances of a large notice one message did not take on (lifeboat.split).
    REMAINDER = "remainder"


@dataclass(frozen=True)
class Wakeup:
    task: Task
    notice: Notice
    due: datetime
    replacement: str | None = None
    old_nodeclaim: str | None = None
    old_nodeclaim_uid: str | None = None
    started: datetime | None = None
    attempt: int = 0
    # The instance's cluster, known when scheduled: a terminated instance may no longer be
    # described by EC2 when its follow-up comes due.
    cluster: str | None = None
    # ``REMAINDER``: the instances it names (``notice`` is their event, about no instance).
    instances: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Unique per wake-up, so a scheduler can be asked twice without two schedules."""
        key = f"{self.notice.dedup_key}#{self.task}#{self.due.strftime('%Y%m%dT%H%M%S')}"
        if self.instances:
            # Remainders of one event differ only in the instances they name.
            key += "#" + hashlib.sha256(",".join(self.instances).encode()).hexdigest()[:32]
        return key

    @property
    def old_claim(self) -> ClaimRef | None:
        """The NodeClaim a replacement stands in for (``FINISH_REPLACEMENT``)."""
        if not self.old_nodeclaim:
            return None
        return ClaimRef(self.old_nodeclaim, self.old_nodeclaim_uid)

    def again(self, due: datetime) -> Wakeup:
        return replace(self, due=due, attempt=self.attempt + 1)


class WakeupSink(Protocol):
    def schedule(self, wakeup: Wakeup) -> None: ...


def encode(wakeup: Wakeup) -> str:
    def convert(value: Any) -> Any:
        if isinstance(value, datetime):
            return value.isoformat()
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        return value

    body = {MARKER: VERSION, **convert(asdict(wakeup))}
    return json.dumps(body, sort_keys=True)


def is_wakeup(message: Mapping[str, Any]) -> bool:
    return MARKER in message


def decode(message: Mapping[str, Any]) -> Wakeup:
    """Read a wake-up back, validated as strictly as AWS's events (anyone who may send to the
    queue can write one): every field typed and bounded, the reason of a failure naming the
    field, like the parsers'. Raises :class:`MalformedMessage`."""
    body = validate(_WakeupBody, message, path=MARKER, event_id=None)
    notice = body.notice
    hook = notice.lifecycle
    wakeup = Wakeup(
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
    problem = _inconsistency(wakeup)
    if problem is not None:
        raise malformed(f"{MARKER}: {problem}", notice.event_id)
    return wakeup


def _inconsistency(wakeup: Wakeup) -> str | None:
    """What no wake-up Lifeboat schedules could hold."""
    notice = wakeup.notice
    if wakeup.task is Task.REMAINDER:
        return _remainder_inconsistency(wakeup)
    if wakeup.instances:
        return f"instances: only a remainder names instances, not a {wakeup.task} wake-up"
    if notice.instance_id is None and wakeup.task is not Task.ROTATE:
        return "notice.instance_id: a wake-up is always about an instance"
    if wakeup.task is Task.DECIDE and notice.involuntary:
        return f"task decide: a {notice.kind} notice is never deferred"
    if wakeup.task is Task.FINISH_REPLACEMENT and not (
        wakeup.old_nodeclaim and wakeup.old_nodeclaim_uid
    ):
        return "task finish-replacement: old_nodeclaim and old_nodeclaim_uid are required"
    hook = notice.lifecycle
    if hook is not None and hook.instance_id != notice.instance_id:
        return "notice.lifecycle.instance_id: not the notice's instance"
    return None


def _remainder_inconsistency(wakeup: Wakeup) -> str | None:
    """A remainder names its instances in ``instances``, each once, and its ``notice`` is
    the event they share: about no one instance, and no lifecycle hook (a hook's message is
    about one instance, never split)."""
    notice = wakeup.notice
    if notice.kind in (Kind.ROTATION, Kind.UNSUPPORTED):
        return f"task remainder: a {notice.kind} notice is never split"
    if not wakeup.instances:
        return "instances: a remainder names at least one instance"
    if len(set(wakeup.instances)) != len(wakeup.instances):
        return "instances: an instance is named twice"
    if notice.instance_id is not None:
        return "notice.instance_id: a remainder's instances are in instances"
    if notice.lifecycle is not None or notice.ignore_reason is not None:
        return "notice: a remainder carries no lifecycle hook and no ignore_reason"
    if wakeup.replacement or wakeup.old_nodeclaim or wakeup.old_nodeclaim_uid or wakeup.cluster:
        return "a remainder names no replacement, old NodeClaim or cluster"
    return None


# -- the wire format, validated ---------------------------------------------------------------

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
    # A remainder (lifeboat.split) names no more instances than one message acts on.
    instances: Annotated[list[InstanceId], Field(max_length=MAX_REMAINDER)] = []


class MemoryWakeups:
    """Wake-ups held in memory, in due order: ``lifeboat replay --follow`` and tests."""

    def __init__(self) -> None:
        self.pending: dict[str, Wakeup] = {}

    def schedule(self, wakeup: Wakeup) -> None:
        self.pending[wakeup.key] = wakeup

    def pop_due(self, now: datetime) -> list[Wakeup]:
        due = sorted((w for w in self.pending.values() if w.due <= now), key=lambda w: w.due)
        for wakeup in due:
            del self.pending[wakeup.key]
        return due

    def next_due(self) -> datetime | None:
        return min((w.due for w in self.pending.values()), default=None)

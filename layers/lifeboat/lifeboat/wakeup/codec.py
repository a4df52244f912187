"""Work that must happen later: a deferred notice to decide again, a replacement to finish.

A wake-up travels as an ordinary message on Lifeboat's own queue (EventBridge Scheduler
puts it there at its time in AWS; replay keeps it in memory), so it goes through the same
handler, the same batch failure handling and the same dead-letter queue as AWS's events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any, Protocol

from lifeboat.events.base import malformed
from lifeboat.model.notice import Kind

# The wake-up itself lives in lifeboat.wakeup.model, which the wire format
# (lifeboat.wakeup.format) builds too; its names are importable from here as they always were.
from lifeboat.wakeup.model import MARKER as MARKER
from lifeboat.wakeup.model import MAX_REMAINDER as MAX_REMAINDER
from lifeboat.wakeup.model import VERSION as VERSION
from lifeboat.wakeup.model import Task as Task
from lifeboat.wakeup.model import Wakeup as Wakeup


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


def decode(message: Mapping[str, Any]) -> Wakeup:
    """Read a wake-up back, validated as strictly as AWS's events (anyone who may send to the
    queue can write one): every field typed and bounded, the reason of a failure naming the
    field, like the parsers'. Raises :class:`MalformedMessage`.

    The pydantic models of the wire format (``lifeboat.wakeup.format``) load with the first
    wake-up: a batch of AWS's warnings never pays for them."""
    from lifeboat.wakeup.format import read

    wakeup = read(message)
    problem = _inconsistency(wakeup)
    if problem is not None:
        raise malformed(f"{MARKER}: {problem}", wakeup.notice.event_id)
    return wakeup


def _inconsistency(wakeup: Wakeup) -> str | None:
    """What no wake-up Lifeboat schedules could hold."""
    notice = wakeup.notice
    if wakeup.task is Task.REMAINDER:
        return _remainder_inconsistency(wakeup)
    if wakeup.task is Task.SWEEP_PART:
        return _sweep_part_inconsistency(wakeup)
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
    if wakeup.task is Task.HAND_OVER and not (
        wakeup.old_nodeclaim and wakeup.old_nodeclaim_uid and wakeup.replacement and wakeup.started
    ):
        return (
            "task hand-over: old_nodeclaim, old_nodeclaim_uid, replacement and started are required"
        )
    if wakeup.task is Task.HAND_OVER and notice.involuntary:
        return f"task hand-over: a {notice.kind} notice is always handed over at once"
    hook = notice.lifecycle
    if hook is not None and hook.instance_id != notice.instance_id:
        return "notice.lifecycle.instance_id: not the notice's instance"
    return None


def _remainder_inconsistency(wakeup: Wakeup) -> str | None:
    """A remainder names its instances in ``instances``, each once, and its ``notice`` is
    the event they share: about no one instance, and no lifecycle hook (a hook's message is
    about one instance, never split)."""
    notice = wakeup.notice
    if notice.kind is not Kind.SCHEDULED_CHANGE:
        # Only AWS Health's scheduled changes name many instances (affectedEntities): a
        # Spot-kind "remainder" would take 50 nodes out at once, forced, past any budget.
        # A sweep's instances are handed on as sweep parts, which carry nothing EC2 said.
        return f"task remainder: a {notice.kind} notice is never split"
    if notice.deadline is None:
        return "notice.deadline: a remainder's maintenance has a start time"
    if notice.ec2_event:
        return "notice.ec2_event: EC2's events are handed on as sweep parts, never copied"
    return _names_instances("remainder", wakeup)


def _sweep_part_inconsistency(wakeup: Wakeup) -> str | None:
    """A sweep part names instances for EC2 to be asked about again: its notice is the
    sweep's (an instance-impaired notice about no instance), and says nothing of its own."""
    notice = wakeup.notice
    if notice.kind is not Kind.INSTANCE_IMPAIRED:
        return f"task sweep-part: the sweep's notice is instance-impaired, not {notice.kind}"
    if notice.deadline is not None or notice.ends_maintenance or notice.ec2_event:
        return "notice: a sweep part carries no deadline and no end: EC2 is asked again"
    return _names_instances("sweep part", wakeup)


def _names_instances(what: str, wakeup: Wakeup) -> str | None:
    notice = wakeup.notice
    if not wakeup.instances:
        return f"instances: a {what} names at least one instance"
    if len(set(wakeup.instances)) != len(wakeup.instances):
        return "instances: an instance is named twice"
    if notice.instance_id is not None:
        return f"notice.instance_id: a {what}'s instances are in instances"
    if notice.lifecycle is not None or notice.ignore_reason is not None:
        return f"notice: a {what} carries no lifecycle hook and no ignore_reason"
    if wakeup.replacement or wakeup.old_nodeclaim or wakeup.old_nodeclaim_uid or wakeup.cluster:
        return f"a {what} names no replacement, old NodeClaim or cluster"
    return None


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

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
from typing import Any, Protocol

from lifeboat.events.base import malformed
from lifeboat.events.notice import Kind, Notice
from lifeboat.target import ClaimRef

MARKER = "lifeboat-wakeup"
VERSION = 1
# The most instances a remainder may name: lifeboat.split.NOTICES_PER_MESSAGE (a test keeps
# the two equal; this module cannot import that one, which imports it).
MAX_REMAINDER = 50


class Task(StrEnum):
    DECIDE = "decide"  # a deferred voluntary notice: decide again against today's cluster
    FINISH_REPLACEMENT = "finish-replacement"  # delete the old claim once replaced
    # The when-ready hand-over (lifeboat.handover): delete the old claim once its
    # replacement is initialized, give up after ``handover.PATIENCE``.
    HAND_OVER = "hand-over"
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
    field, like the parsers'. Raises :class:`MalformedMessage`.

    The pydantic models of the wire format (``lifeboat.wakeup_format``) load with the first
    wake-up: a batch of AWS's warnings never pays for them."""
    from lifeboat.wakeup_format import read

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

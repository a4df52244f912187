"""Work that must happen later: a deferred notice to decide again, a replacement to finish.

A wake-up travels as an ordinary message on Lifeboat's own queue (EventBridge Scheduler
puts it there at its time in AWS; replay keeps it in memory), so it goes through the same
handler, the same batch failure handling and the same dead-letter queue as AWS's events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from lifeboat.events.notice import Kind, LifecycleHook, MalformedMessage, Notice
from lifeboat.target import ClaimRef

MARKER = "lifeboat-wakeup"
VERSION = 1


class Task(StrEnum):
    DECIDE = "decide"  # a deferred voluntary notice: decide again against today's cluster
    FINISH_REPLACEMENT = "finish-replacement"  # delete the old claim once replaced
    CONTINUE_DRAIN = "continue-drain"  # evictions a PDB held back


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

    @property
    def key(self) -> str:
        """Unique per wake-up, so a scheduler can be asked twice without two schedules."""
        return f"{self.notice.dedup_key}#{self.task}#{self.due.strftime('%Y%m%dT%H%M%S')}"

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
    """Read a wake-up back; the reason of a failure names the field, like the parsers."""
    try:
        if message[MARKER] != VERSION:
            raise MalformedMessage(f"{MARKER}: unsupported version {message[MARKER]!r}")
        raw = dict(message["notice"])
        hook = raw.pop("lifecycle", None)
        notice = Notice(
            kind=Kind(raw.pop("kind")),
            event_time=_time(raw.pop("event_time")),
            deadline=_time(raw.pop("deadline")),
            lifecycle=LifecycleHook(**hook) if hook else None,
            **raw,
        )
        return Wakeup(
            task=Task(message["task"]),
            notice=notice,
            due=_time(message["due"]),
            replacement=message.get("replacement"),
            old_nodeclaim=message.get("old_nodeclaim"),
            old_nodeclaim_uid=message.get("old_nodeclaim_uid"),
            started=_time(message.get("started")),
            attempt=int(message.get("attempt", 0)),
            cluster=message.get("cluster"),
        )
    except MalformedMessage:
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise MalformedMessage(f"{MARKER}: {type(error).__name__}: {error}"[:300]) from None


def _time(value: Any) -> Any:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


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

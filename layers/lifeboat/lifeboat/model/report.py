"""One line of the outcome: what happened to one (event, instance). The ``--json`` contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.outcome import Outcome as Outcome  # importable from here, as it always was


@dataclass(frozen=True)
class Report:
    """What happened to one (event, instance), as the ``--json`` contract writes it."""

    event_id: str | None
    kind: str
    outcome: Outcome
    reason: str
    instance_id: str | None = None
    node: str | None = None
    nodepool: str | None = None
    # A deferral: the latest instant Lifeboat will act (None: no such instant) ...
    deferred_until: datetime | None = None
    # ... and the next instant it looks again, when it may act sooner (None: not deferred).
    recheck_at: datetime | None = None
    actions: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    event_time: datetime | None = None
    # Ignored because the instance is not this stack's to manage (counted as a metric).
    unmanaged: bool = False
    # The task of the wake-up that produced this report (None: an AWS notice).
    wakeup: str | None = None
    # The EKS cluster of the instance, when known (metrics and notifications split by it).
    cluster: str | None = None
    # Acted although budgets or do-not-disrupt said no (the decision's ``forced``).
    forced: bool = False
    # A voluntary notice let go because its pool never allowed it in time.
    gave_up: bool = False
    # A rotation's change worth telling operators (its Event's reason: RotationCheckpoint,
    # RotationFailed, RotationCompleted, RotationRolledBack, RotationNodeNotRestored,
    # RotationNodeWaiting).
    rotation_change: str | None = None
    # The notice's deadline, and the capacity reservation it is about (an ending Capacity
    # Block's: its notification tells a training job when its node goes).
    deadline: datetime | None = None
    reservation_id: str | None = None

    @classmethod
    def for_notice(cls, notice: Notice, outcome: Outcome, reason: str, **fields: Any) -> Report:
        return cls(
            event_id=notice.event_id,
            kind=str(notice.kind),
            outcome=outcome,
            reason=reason,
            instance_id=notice.instance_id,
            event_time=notice.event_time,
            deadline=notice.deadline,
            reservation_id=notice.reservation_id,
            **fields,
        )

    @classmethod
    def rejected(cls, reason: str, event_id: str | None = None, kind: Kind | None = None) -> Report:
        """A message that could not be understood; ``kind`` when it said what it is."""
        return cls(
            event_id=event_id,
            kind=str(kind or Kind.UNSUPPORTED),
            outcome=Outcome.REJECTED,
            reason=reason,
        )

    @property
    def next_look(self) -> datetime | None:
        """When a deferral is looked at again: its ``recheck_at``, or (a report that did not
        say one) its ``deferred_until``, when it is decided again at the latest."""
        if self.outcome is not Outcome.DEFERRED:
            return None
        return self.recheck_at or self.deferred_until

    def to_json(self) -> dict[str, Any]:
        """The object ``lifeboat replay --json`` prints (its public JSON contract)."""
        return {
            "event_id": self.event_id,
            "kind": self.kind,
            "instance_id": self.instance_id,
            "node": self.node,
            "nodepool": self.nodepool,
            "outcome": str(self.outcome),
            "reason": self.reason,
            "deferred_until": _iso(self.deferred_until),
            "recheck_at": _iso(self.next_look),
            "actions": [dict(a) for a in self.actions],
        }


def _iso(moment: datetime | None) -> str | None:
    return format_instant(moment) if moment else None

"""One line of the outcome: what happened to one (event, instance). The ``--json`` contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from lifeboat.events.notice import Kind, Notice


class Outcome(StrEnum):
    ACTED = "acted"
    DEFERRED = "deferred"
    IGNORED = "ignored"
    REJECTED = "rejected"


@dataclass(frozen=True)
class Report:
    event_id: str | None
    kind: str
    outcome: Outcome
    reason: str
    instance_id: str | None = None
    node: str | None = None
    nodepool: str | None = None
    deferred_until: datetime | None = None
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

    @classmethod
    def for_notice(cls, notice: Notice, outcome: Outcome, reason: str, **fields: Any) -> Report:
        return cls(
            event_id=notice.event_id,
            kind=str(notice.kind),
            outcome=outcome,
            reason=reason,
            instance_id=notice.instance_id,
            event_time=notice.event_time,
            **fields,
        )

    @classmethod
    def rejected(cls, reason: str, event_id: str | None = None) -> Report:
        return cls(
            event_id=event_id, kind=str(Kind.UNSUPPORTED), outcome=Outcome.REJECTED, reason=reason
        )

    def to_json(self) -> dict[str, Any]:
        """The object ``lifeboat replay --json`` prints (contract.md, section 2)."""
        return {
            "event_id": self.event_id,
            "kind": self.kind,
            "instance_id": self.instance_id,
            "node": self.node,
            "nodepool": self.nodepool,
            "outcome": str(self.outcome),
            "reason": self.reason,
            "deferred_until": _iso(self.deferred_until),
            "actions": [dict(a) for a in self.actions],
        }


def _iso(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None

"""One line of the outcome: what happened to one (event, instance). The ``--json`` contract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.outcome import Outcome as Outcome  # importable from here, as it always was

if TYPE_CHECKING:  # the report only reads a Decision (decide builds on lifeboat.model.outcome)
    from lifeboat.decide import Decision
    from lifeboat.model.target import Target


@dataclass(frozen=True)
class Report:
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


def decision_report(
    notice: Notice,
    target: Target,
    decision: Decision,
    actions: Sequence[dict[str, Any]],
    *,
    pods_remaining: int = 0,
    dry_run: bool = False,
    cluster: str | None = None,
    recheck_at: datetime | None = None,
) -> Report:
    """The report of a decision carried out (``actions`` are what act did). ``cluster``:
    the instance's, when the target's instance facts do not say (a hand-over's).
    ``recheck_at``: when a deferral is decided again (its follow-up's due time)."""
    reason = decision.reason
    if dry_run and decision.outcome is not Outcome.IGNORED:
        reason = f"dry run, nothing changed: {reason}"
    if pods_remaining:
        reason += f"; {pods_remaining} pod(s) held by PodDisruptionBudgets, retrying"
    if target.node_nodepool_label is not None:
        reason += (
            f"; the Node's label karpenter.sh/nodepool={target.node_nodepool_label} disagrees "
            f"with its NodeClaim's NodePool {target.nodepool_name}: judged by the NodeClaim's"
        )
    for action in actions:
        # A step that could not be done but did not stop the others (a replacement the API
        # server refused): the reason says so, as the action does.
        if action.get("error"):
            reason += f"; {action['type']} not done: {action['error']}"
    return Report.for_notice(
        notice,
        decision.outcome,
        reason,
        node=target.node_name,
        nodepool=target.nodepool_name,
        deferred_until=decision.deferred_until,
        recheck_at=recheck_at if decision.outcome is Outcome.DEFERRED else None,
        actions=tuple(actions),
        cluster=target.info.cluster if target.info else cluster,
        forced=decision.forced,
        gave_up=decision.gave_up,
    )


def _iso(moment: datetime | None) -> str | None:
    return format_instant(moment) if moment else None

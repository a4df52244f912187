"""What must happen later, once a decision was carried out: the wake-ups to schedule. Pure.

The Lambda never sleeps for a window, a replacement or a PodDisruptionBudget: each becomes a
:class:`~lifeboat.wakeup.Wakeup` that comes back through the queue when it is due.
"""

from __future__ import annotations

from datetime import datetime

from lifeboat.decide.model import FOLLOW_UP_INTERVAL, Decision
from lifeboat.events.notice import Notice
from lifeboat.report import Outcome
from lifeboat.target import Target
from lifeboat.wakeup import Task, Wakeup


def follow_ups(
    notice: Notice,
    target: Target,
    decision: Decision,
    *,
    replacement: str | None,
    pods_remaining: int,
    now: datetime,
    wakeup: Wakeup | None = None,
) -> list[Wakeup]:
    """The wake-ups ``decision`` calls for, after act created ``replacement`` (if any) and
    left ``pods_remaining`` pods that PodDisruptionBudgets would not let go yet.

    ``wakeup`` is the follow-up being handled, when the decision was about one.
    """
    cluster = target.info.cluster if target.info else (wakeup.cluster if wakeup else None)
    planned: list[Wakeup] = []
    if decision.outcome is Outcome.DEFERRED:
        if wakeup is not None and wakeup.task is Task.FINISH_REPLACEMENT:
            # Still waiting for the same replacement: the same follow-up, once more.
            planned.append(wakeup.again(decision.deferred_until or now + FOLLOW_UP_INTERVAL))
        else:
            candidates = [t for t in (decision.deferred_until, decision.recheck_at) if t]
            due = min(candidates) if candidates else now + FOLLOW_UP_INTERVAL
            planned.append(Wakeup(Task.DECIDE, notice, due))
    if decision.delete_claim_when_replaced and target.claim is not None:
        planned.append(
            Wakeup(
                Task.FINISH_REPLACEMENT,
                notice,
                now + FOLLOW_UP_INTERVAL,
                replacement=replacement,
                old_nodeclaim=target.claim.name,
                old_nodeclaim_uid=target.claim.uid,
                started=now,
                cluster=cluster,
            )
        )
    if pods_remaining:
        due = now + FOLLOW_UP_INTERVAL
        planned.append(Wakeup(Task.CONTINUE_DRAIN, notice, due, cluster=cluster))
    return planned

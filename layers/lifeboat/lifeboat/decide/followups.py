"""What must happen later, once a decision was carried out: the wake-ups to schedule. Pure.

The Lambda never sleeps for a window, a replacement or a PodDisruptionBudget: each becomes a
:class:`~lifeboat.wakeup.codec.Wakeup` that comes back through the queue when it is due.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from lifeboat.decide.model import FOLLOW_UP_INTERVAL, RECHECK_INTERVAL, Decision, Step
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.outcome import Outcome
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import Task, Wakeup


def follow_ups(
    notice: Notice,
    target: Target,
    decision: Decision,
    *,
    pods_remaining: int,
    now: datetime,
    wakeup: Wakeup | None = None,
    release_cordon_after: timedelta | None = None,
    awaiting: str | None = None,
    maintenance_lead: timedelta | None = None,
) -> list[Wakeup]:
    """The wake-ups ``decision`` calls for, after act left ``pods_remaining`` pods that
    PodDisruptionBudgets would not let go yet.

    ``wakeup`` is the follow-up being handled, when the decision was about one.
    ``release_cordon_after``: when a node only cordoned for a rebalance recommendation is
    looked at again, to be uncordoned if it still runs (None or 0: never).
    ``awaiting``: the replacement a when-ready hand-over just created and waits for.
    ``maintenance_lead``: how long before a maintenance's start it is acted on regardless
    (``scheduled_change_lead``): when a hand-over for one is given up, the notice is decided
    again then (:func:`_after_give_up`).
    """
    cluster = target.info.cluster if target.info else (wakeup.cluster if wakeup else None)
    # What follows a follow-up is timed from that follow-up's own due time, never from the
    # clock: a wake-up delivered twice (SQS is at least once) then schedules the same next
    # wake-up, same due time and so same schedule name, instead of forking its chain.
    base = wakeup.due if wakeup is not None else now
    planned: list[Wakeup] = []
    if awaiting is not None and target.claim is not None:
        planned.append(
            Wakeup(
                Task.HAND_OVER,
                notice,
                base + FOLLOW_UP_INTERVAL,
                replacement=awaiting,
                old_nodeclaim=target.claim.name,
                old_nodeclaim_uid=target.claim.uid,
                started=base,
                cluster=cluster,
            )
        )
    again = _after_give_up(notice, decision, wakeup, base, maintenance_lead)
    if again is not None:
        planned.append(again)
    if decision.awaits_replacement and wakeup is not None:
        planned.append(wakeup.again(base + FOLLOW_UP_INTERVAL))
    elif decision.outcome is Outcome.DEFERRED:
        planned.append(Wakeup(Task.DECIDE, notice, decide_again_at(decision, base)))
    if release_cordon_after and _only_cordoned(notice, decision, wakeup):
        # Cordoned, not replaced: if no interruption follows, the node is not left out of
        # scheduling for ever (decide.wakeups.release_cordon).
        planned.append(
            Wakeup(Task.RELEASE_CORDON, notice, base + release_cordon_after, cluster=cluster)
        )
    if pods_remaining:
        planned.append(
            Wakeup(Task.CONTINUE_DRAIN, notice, base + FOLLOW_UP_INTERVAL, cluster=cluster)
        )
    return planned


def _after_give_up(
    notice: Notice,
    decision: Decision,
    wakeup: Wakeup | None,
    base: datetime,
    lead: timedelta | None,
) -> Wakeup | None:
    """A hand-over given up on puts the node back in service, but its maintenance still
    comes: the notice is decided again at its latest start (``deadline - lead``), where it is
    acted on whatever the budgets say, so the node is out before AWS takes it (issue 33.3).
    The event itself is remembered as handled: its redelivery would be a duplicate."""
    if not (decision.gave_up and wakeup is not None and wakeup.task is Task.HAND_OVER):
        return None
    if notice.kind is not Kind.SCHEDULED_CHANGE or notice.deadline is None or lead is None:
        return None
    due = max(base + FOLLOW_UP_INTERVAL, notice.deadline - lead)
    return Wakeup(Task.DECIDE, notice, due, cluster=wakeup.cluster)


def decide_again_at(decision: Decision, base: datetime) -> datetime:
    """When a deferred notice is decided again: at its deferral's end or its next look,
    whichever comes first (a look no later than ``RECHECK_INTERVAL`` after ``base``). The
    report's ``recheck_at``: a deferral may act sooner than its ``deferred_until``."""
    recheck = (
        _earliest(decision.recheck_at, base + RECHECK_INTERVAL)
        if decision.recheck_at is not None
        else None
    )
    candidates = [t for t in (decision.deferred_until, recheck) if t]
    return min(candidates) if candidates else base + FOLLOW_UP_INTERVAL


def _only_cordoned(notice: Notice, decision: Decision, wakeup: Wakeup | None) -> bool:
    """A rebalance recommendation's node was just cordoned, not replaced (by the notice,
    or by its decision looked at again)."""
    return (
        notice.kind is Kind.REBALANCE_RECOMMENDATION
        and decision.outcome is Outcome.ACTED
        and decision.steps == (Step.TAINT_AND_CORDON,)
        and (wakeup is None or wakeup.task is Task.DECIDE)
    )


def _earliest(first: datetime | None, second: datetime) -> datetime:
    return second if first is None else min(first, second)

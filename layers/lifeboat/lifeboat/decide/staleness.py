"""How old a notice may be before it is no longer obeyed as it was sent.

A message can arrive long after its event: a backlog, a DLQ redrive (the runbook's), a
wake-up redelivered days later. What it warned of has happened or has not; either way its
urgency is gone, and urgency is the only thing that lets a notice force a node out past
budgets and do-not-disrupt. So, per kind:

- a Spot or capacity reservation warning past its deadline (``instance-action`` time, two
  minutes after the warning), or a Capacity Block's expiry past the start of its
  termination (end - 30 min), by more than ``stale_notice_after``;
- a state change (stopping, shutting down) whose instance EC2 says is running again (stale
  at any age: nothing is going), or older than ``stale_notice_after``;
- scheduled maintenance (AWS Health, EC2) past its ``startTime`` by more than
  ``stale_notice_after``

is re-judged from the present state: acted on only if the instance is still there, and
only as a voluntary notice is (budgets, windows, do-not-disrupt, PodDisruptionBudgets), once,
never forced, never waited for. Rebalance recommendations and rotations are never forced
anyway; an Auto Scaling lifecycle hook always gets its answer (the group waits for it).
Pure: the clock is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from lifeboat.model.instances import InstanceInfo
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.settings import Settings

# Involuntary warnings whose deadline is when the instance goes.
_WARNED = (
    Kind.SPOT_INTERRUPTION,
    Kind.CAPACITY_RESERVATION_INTERRUPTION,
    Kind.CAPACITY_BLOCK_EXPIRY,
)
# EC2 instance states in which nothing is going away.
_RUNNING = ("pending", "running")


@dataclass(frozen=True)
class Stale:
    """Why a notice is stale; ``nothing_going``: the instance is running again (ignore)."""

    reason: str
    nothing_going: bool = False


def staleness(
    notice: Notice, info: InstanceInfo | None, settings: Settings, now: datetime
) -> Stale | None:
    """None when ``notice`` is fresh enough to be obeyed as sent."""
    if notice.lifecycle is not None:
        return None
    limit = settings.stale_notice_after
    if notice.kind is Kind.STATE_CHANGE:
        state = info.state if info is not None else None
        if state in _RUNNING:
            return Stale(f"instance {notice.instance_id} is {state} again", nothing_going=True)
        return _older(notice.event_time, limit, now, "the state change")
    if notice.kind in _WARNED:
        return _older(notice.deadline or notice.event_time, limit, now, "its deadline")
    if notice.kind is Kind.SCHEDULED_CHANGE and notice.deadline is not None:
        return _older(notice.deadline, limit, now, "the maintenance's start")
    return None


def _older(moment: datetime, limit: timedelta, now: datetime, what: str) -> Stale | None:
    if now <= moment + limit:
        return None
    late = int((now - moment).total_seconds())
    return Stale(
        f"{late}s past {what} ({format_instant(moment)}), more than {int(limit.total_seconds())}s"
    )

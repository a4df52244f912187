"""NodePool budgets over time: active windows, the limit timeline, the next permitted instant.

See :mod:`lifeboat.budgets` for the rules mirrored from Karpenter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lifeboat.budget_spec import (
    LIFEBOAT_REASON,
    Budget,
    BudgetError,
    applies_to,
    budget_limit,
    check_counts,
    check_reason,
    parse_budgets,
)
from lifeboat.instants import require_utc


def _active_windows(
    budget: Budget, start: datetime, end: datetime
) -> Iterator[tuple[datetime, datetime]]:
    """Maximal intervals ``[a, b)`` within ``[start, end)`` where the budget is active, in order.

    Overlapping or touching windows ``[h, h + duration)`` are merged, so only real changes of
    state are produced. One cron query per separate window; a long window over a frequent
    schedule jumps ``duration`` at a time instead of visiting every hit.
    """
    cron, duration = budget.cron, budget.duration
    if cron is None or duration is None or cron.never_fires:
        yield start, end  # always active (see is_active for the never-firing case)
        return
    if duration <= timedelta(0):
        return  # a zero-length window is never active
    if cron.fires_every_minute and duration >= timedelta(minutes=1):
        yield start, end
        return
    cursor = cron.cursor()
    latest = cursor.last_at_or_before(start)
    if latest is None or latest + duration <= start:
        latest = cursor.next_after(start)
    first = latest
    while latest is not None and first is not None and first < end:
        following = cursor.next_after(latest)
        if following is not None and following <= latest + duration and following < end:
            # Overlapping or touching window: extend, skipping hits inside the window.
            latest = cursor.last_at_or_before(latest + duration) or following
            continue
        yield max(first, start), min(latest + duration, end)
        first = latest = following


@dataclass(frozen=True)
class Segment:
    """A stretch ``[start, end)`` over which the pool's budget limit is constant."""

    start: datetime
    end: datetime
    limit: int | None  # min over active applicable budgets; None = no limit
    active_budget_indexes: tuple[int, ...]  # active budgets that apply to the reason


class _Cursor:
    """Walks one budget's active windows forward in time."""

    def __init__(self, budget: Budget, windows: Iterator[tuple[datetime, datetime]]) -> None:
        self.budget = budget
        self._windows = windows
        self._current = next(windows, None)

    def active_at(self, moment: datetime) -> bool:
        while self._current is not None and self._current[1] <= moment:
            self._current = next(self._windows, None)
        return self._current is not None and self._current[0] <= moment

    def next_change_after(self, moment: datetime) -> datetime | None:
        """After ``active_at(moment)``: when this budget next starts or stops being active."""
        if self._current is None:
            return None
        return self._current[1] if self._current[0] <= moment else self._current[0]


def _iter_segments(
    budgets: Iterable[Budget], node_count: int, start: datetime, end: datetime
) -> Iterator[Segment]:
    """Consecutive segments of ``[start, end)``; adjacent equal segments are merged."""
    cursors = [_Cursor(b, _active_windows(b, start, end)) for b in budgets]
    pending: Segment | None = None
    moment = start
    while moment < end:
        active = [c.budget for c in cursors if c.active_at(moment)]
        changes = (c.next_change_after(moment) for c in cursors)
        following = min((t for t in changes if t is not None and t > moment), default=end)
        following = min(following, end)
        limits = [budget_limit(b, node_count) for b in active]
        segment = Segment(
            moment, following, min(limits) if limits else None, tuple(b.index for b in active)
        )
        if pending is not None and (pending.limit, pending.active_budget_indexes) == (
            segment.limit,
            segment.active_budget_indexes,
        ):
            pending = Segment(
                pending.start, following, pending.limit, pending.active_budget_indexes
            )
        else:
            if pending is not None:
                yield pending
            pending = segment
        moment = following
    if pending is not None:
        yield pending


def window_timeline(
    nodepool: Mapping[str, Any],
    node_count: int,
    start: datetime,
    end: datetime,
    reason: str | None = LIFEBOAT_REASON,
) -> list[Segment]:
    """The pool's budget limit over ``[start, end)`` as consecutive constant segments.

    Only budgets applying to ``reason`` count. Raises ``BudgetError`` for an invalid pool
    (which is blocked throughout; callers show the error instead of a timeline).
    """
    check_reason(reason)
    check_counts(node_count, 0)
    start, end = require_utc(start), require_utc(end)
    if end <= start:
        return []
    budgets = [b for b in parse_budgets(nodepool) if applies_to(b, reason)]
    return list(_iter_segments(budgets, node_count, start, end))


def next_allowed_at(
    nodepool: Mapping[str, Any],
    node_count: int,
    disrupting: int,
    now: datetime,
    until: datetime,
    reason: str | None = LIFEBOAT_REASON,
) -> datetime | None:
    """The earliest ``t`` in ``[now, until)`` at which one more disruption is allowed.

    Assumes ``node_count`` and ``disrupting`` stay as they are, so limits only change at
    window boundaries: the first segment whose limit exceeds ``disrupting`` starts at the
    answer (``now`` if allowed already, the end of a zero-budget window otherwise). None when
    no such instant exists before ``until``: an invalid pool, or an always-active budget used
    up by disrupting nodes (waiting for capacity, not for time).
    """
    check_reason(reason)
    check_counts(node_count, disrupting)
    now, until = require_utc(now), require_utc(until)
    if until <= now:
        return None
    try:
        budgets = [b for b in parse_budgets(nodepool) if applies_to(b, reason)]
    except BudgetError:
        return None
    for segment in _iter_segments(budgets, node_count, now, until):
        if segment.limit is None or segment.limit > disrupting:
            return segment.start
    return None

"""NodePool budgets over time: when each budget is active, the limit timeline, the next
permitted instant. See :mod:`lifeboat.karpenter.budgets` for the rules mirrored from Karpenter.

Activity follows ``Budget.IsActive`` at every instant, robfig's quirks included: a budget is
active at ``t`` iff ``Next(t - duration)`` is not after ``t``, and robfig's ``Next`` returns
the zero time (which is never after anything) when the next hit lies beyond the year
``start.year + 5``. So a schedule with a long gap between hits (29 February across 2100)
makes its budget active for years at a time; computing windows only from hits would call it
inactive there, and a deferral would wake "at the window's end" immediately, in a loop.

The work per query is bounded (``MAX_EDGES``): a search that finds no answer within its
bound says how far it got, so a decision defers to that instant and looks again, instead of
walking every two-minute window up to a deadline in the year 2400.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from lifeboat.errors import BrokenInvariant
from lifeboat.karpenter.budget_spec import (
    LIFEBOAT_REASON,
    Budget,
    BudgetError,
    applies_to,
    budget_limit,
    check_counts,
    check_reason,
    parse_budgets,
)
from lifeboat.karpenter.cron import CronCursor, robfig_horizon_opens
from lifeboat.model.instants import require_utc

__all__ = [
    "MAX_EDGES",
    "BudgetActivity",
    "Opening",
    "Segment",
    "earliest_permitted",
    "next_allowed_at",
    "window_timeline",
]

#: How many window edges one query may visit per budget, and how many changes of the pool's
#: limit a search for the next permitted instant may step through. Enough for a month of
#: daily windows; a decision that needs more defers to where the search stopped.
MAX_EDGES: Final = 256
#: Segments of one timeline at most (a chart of two weeks of two-minute windows fits).
_MAX_SEGMENTS: Final = 20_000


class BudgetActivity:
    """When one budget is active, instant by instant, exactly as ``Budget.IsActive``.

    Not thread-safe (it holds a cron cursor); build one per query.
    """

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        cron, duration = budget.cron, budget.duration
        # No schedule: always active. A schedule that never fires: robfig's zero time, always.
        self._always = cron is None or duration is None or cron.never_fires
        self._every_minute = (
            cron is not None
            and duration is not None
            and cron.fires_every_minute
            and duration >= timedelta(minutes=1)
        )
        self._duration = duration or timedelta(0)
        self._cursor: CronCursor | None = None
        if cron is not None and not self._always:
            self._cursor = cron.cursor()
        # What is known already: active (or not) over [start, end). A search hops over
        # many budgets' windows; each budget's state holds until its own next edge, so it
        # is worked out once per edge, not once per hop (50 budgets: ~300 ms -> a few ms).
        self._known: tuple[datetime, datetime, bool] | None = None

    def active_at(self, moment: datetime) -> bool:
        if self._always or self._every_minute:
            return True
        known = self._known
        if known is not None and known[0] <= moment < known[1]:
            return known[2]
        if self._cursor is None:
            raise BrokenInvariant(
                "lifeboat.karpenter.budget_windows.active_at: self._cursor is None"
            )
        hit = self._cursor.next_after(moment - self._duration)
        if hit is not None and hit > moment:
            # No hit in (moment - duration, moment], none before ``hit``: inactive until it.
            self._known = (moment, hit, False)
            return False
        return True

    def next_change(self, moment: datetime) -> datetime | None:
        """The first instant after ``moment`` at which ``active_at`` may differ from its value
        at ``moment``; None when it never changes. Bounded work: after ``MAX_EDGES`` merged
        windows it returns the instant reached, where the budget may still be active (callers
        ask ``active_at`` again there)."""
        if self._always or self._every_minute:
            return None
        known = self._known
        if known is not None and known[0] <= moment < known[1]:
            return known[1]
        end = self._next_change(moment)
        if end is not None and end > moment:
            self._known = (moment, end, self.active_at(moment))
        return end

    def _next_change(self, moment: datetime) -> datetime | None:
        if self._cursor is None:
            raise BrokenInvariant(
                "lifeboat.karpenter.budget_windows.next_change: self._cursor is None"
            )
        cursor, duration = self._cursor, self._duration
        hit = cursor.next_after(moment - duration)
        if hit is None:
            return self._hidden_hit_visible(moment)
        if hit > moment:
            # Inactive: the next hit opens a window (for a zero duration, an empty one).
            return hit if duration > timedelta(0) else self._zero_duration_change(hit)
        # Inside a window [last, last + duration): extend it over overlapping or touching ones.
        last = cursor.last_at_or_before(moment) or hit
        for _ in range(MAX_EDGES):
            end = last + duration
            following = cursor.next_after(last)  # what robfig's Next(end - duration) returns
            if following is None:
                return self._hidden_hit_visible(end)
            if following > end:
                return end
            last = cursor.last_at_or_before(end) or following
        return last + duration

    def _hidden_hit_visible(self, moment: datetime) -> datetime | None:
        """Active at ``moment`` by robfig's zero time: until ``Next`` can see the next hit."""
        if self._cursor is None:
            raise BrokenInvariant(
                "lifeboat.karpenter.budget_windows._hidden_hit_visible: self._cursor is None"
            )
        hidden = self._cursor.next_beyond_horizon(moment - self._duration)
        if hidden is None:
            return None  # nothing within twelve years: active for as long as we can tell
        return max(robfig_horizon_opens(hidden) + self._duration, moment + timedelta(seconds=1))

    def _zero_duration_change(self, hit: datetime) -> datetime | None:
        """A zero-duration budget is active only in robfig's blind spots: from a hit whose
        successor robfig cannot see. Visit hits (bounded) until one is such a hit."""
        if self._cursor is None:
            raise BrokenInvariant(
                "lifeboat.karpenter.budget_windows._zero_duration_change: self._cursor is None"
            )
        for _ in range(MAX_EDGES):
            following = self._cursor.next_after(hit)
            if following is None:
                return hit
            hit = following
        return hit


@dataclass(frozen=True)
class Segment:
    """A stretch ``[start, end)`` over which the pool's budget limit is constant."""

    start: datetime
    end: datetime
    limit: int | None  # min over active applicable budgets; None = no limit
    active_budget_indexes: tuple[int, ...]  # active budgets that apply to the reason


def _limit(budget: Budget, node_count: int) -> int:
    """A budget's limit; one whose ``nodes`` cannot be evaluated blocks (0) while active."""
    try:
        return budget_limit(budget, node_count)
    except BudgetError:
        return 0


def _fails(budget: Budget, node_count: int) -> bool:
    try:
        budget_limit(budget, node_count)
    except BudgetError:
        return True
    return False


def _relevant(budgets: Iterable[Budget], node_count: int, reason: str | None) -> list[Budget]:
    """Budgets that constrain ``reason``: those applying to it, and any whose ``nodes``
    errors (Karpenter's error blocks the pool for every reason while that budget is active)."""
    return [b for b in budgets if applies_to(b, reason) or _fails(b, node_count)]


class _Tracker:
    """One budget's activity, remembered until its next change (one cron query per edge)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._activity = BudgetActivity(budget)
        self._valid_until: datetime | None = None
        self._known: datetime | None = None
        self._active = False

    def at(self, moment: datetime) -> tuple[bool, datetime | None]:
        """(active at ``moment``, next possible change after it)."""
        known = self._known is not None and self._known <= moment
        if not known or (self._valid_until is not None and moment >= self._valid_until):
            self._active = self._activity.active_at(moment)
            self._valid_until = self._activity.next_change(moment)
            self._known = moment
        return self._active, self._valid_until


def _iter_segments(
    budgets: Iterable[Budget], node_count: int, start: datetime, end: datetime
) -> Iterator[Segment]:
    """Consecutive segments of ``[start, end)``; adjacent equal segments are merged."""
    trackers = [_Tracker(b) for b in budgets]
    pending: Segment | None = None
    moment = start
    for _ in range(_MAX_SEGMENTS):
        if moment >= end:
            break
        states = [(t.budget, *t.at(moment)) for t in trackers]
        active = [budget for budget, is_active, _ in states if is_active]
        following = min((c for _, _, c in states if c is not None and c > moment), default=end)
        following = min(following, end)
        limits = [_limit(b, node_count) for b in active]
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

    Only budgets applying to ``reason`` count (and budgets whose ``nodes`` cannot be evaluated,
    which block while active). Raises ``BudgetError`` for an invalid pool (which is blocked
    throughout; callers show the error instead of a timeline). At most ``_MAX_SEGMENTS``
    changes are followed; a timeline cut short ends before ``end``.
    """
    check_reason(reason)
    check_counts(node_count, 0)
    start, end = require_utc(start), require_utc(end)
    if end <= start:
        return []
    budgets = _relevant(parse_budgets(nodepool), node_count, reason)
    return list(_iter_segments(budgets, node_count, start, end))


@dataclass(frozen=True)
class Opening:
    """When the pool next permits one more disruption, as far as a bounded search can tell.

    ``at``: the first permitted instant found (None: none found). The search covered
    ``[now, searched_until)``; ``complete`` is False when it stopped at its bound before the
    ``until`` asked for: nothing is known beyond ``searched_until`` (decide again there).
    """

    at: datetime | None
    searched_until: datetime
    complete: bool = True


def earliest_permitted(
    nodepool: Mapping[str, Any],
    node_count: int,
    disrupting: int,
    now: datetime,
    until: datetime,
    reason: str | None = LIFEBOAT_REASON,
) -> Opening:
    """The earliest ``t`` in ``[now, until)`` at which one more disruption is allowed, with
    ``node_count`` and ``disrupting`` as they are now.

    Only budgets whose limit does not exceed ``disrupting`` can stand in the way ("blockers");
    the answer is the first instant at which none of them is active. An always-active blocker
    means waiting for capacity, not for time (``at`` None, searched to ``until``). Otherwise
    the search hops from the end of one blocking window to the next, at most ``MAX_EDGES``
    times. An invalid pool: ``at`` None.
    """
    check_reason(reason)
    check_counts(node_count, disrupting)
    now, until = require_utc(now), require_utc(until)
    if until <= now:
        return Opening(None, until)
    try:
        budgets = _relevant(parse_budgets(nodepool), node_count, reason)
    except BudgetError:
        return Opening(None, until)
    blockers = [BudgetActivity(b) for b in budgets if _limit(b, node_count) <= disrupting]
    if any(b.budget.cron is None for b in blockers):
        return Opening(None, until)  # an always-active budget is used up: wait for capacity
    moment = now
    for _ in range(MAX_EDGES):
        active = [b for b in blockers if b.active_at(moment)]
        if not active:
            return Opening(moment, until)
        ends = [b.next_change(moment) for b in active]
        if any(end is None for end in ends):
            return Opening(None, until)  # a blocking budget stays active for good
        moment = max(end for end in ends if end is not None)
        if moment >= until:
            return Opening(None, until)
    return Opening(None, moment, complete=False)


def next_allowed_at(
    nodepool: Mapping[str, Any],
    node_count: int,
    disrupting: int,
    now: datetime,
    until: datetime,
    reason: str | None = LIFEBOAT_REASON,
) -> datetime | None:
    """``earliest_permitted(...).at``: the first permitted instant found, or None."""
    return earliest_permitted(nodepool, node_count, disrupting, now, until, reason).at

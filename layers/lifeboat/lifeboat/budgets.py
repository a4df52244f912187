"""Karpenter NodePool disruption budgets, evaluated exactly as Karpenter v1 evaluates them.

Pure functions: no I/O, the clock is passed in (timezone-aware datetimes, handled in UTC).

Mirrored behaviour (karpenter.sh/v1, ``NodePool.GetAllowedDisruptionsByReason``):

* ``spec.disruption.budgets`` absent (or ``spec.disruption`` absent) means the CRD default,
  one budget ``{nodes: "10%"}``; a budget without ``nodes`` gets the CRD default ``"10%"``.
  An explicit empty list stays empty: no budget, hence no limit.
* ``nodes`` is an integer or a percentage; percentages round up against the pool's node count
  (``intstr.GetScaledValueFromIntOrPercent(..., roundUp=true)``): 5% of 10 nodes is 1.
* A budget without ``schedule``/``duration`` is always active. With them, it is active at
  ``now`` iff ``schedule.Next(now - duration)`` is not after ``now``: each cron hit ``h``
  (UTC) opens the window ``[h, h + duration)``.
* A budget applies to a disruption reason iff its ``reasons`` is unset or lists that reason.
  Lifeboat's voluntary replacements (rebalance recommendation, scheduled maintenance) count
  as ``Drifted``: the node must be replaced, as for drift.
* The allowed number is the minimum over active applicable budgets, minus the pool's nodes
  already disrupting, floored at 0. No active budget means no limit.
* Any invalid budget blocks the whole pool (``MustGetAllowedDisruptions`` returns 0 on error):
  fail closed, and say which budget and why. "Invalid" covers what Karpenter's CRD validation
  or its parser would refuse.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any, Final

from lifeboat.cron import CronError, CronSchedule, parse_cron
from lifeboat.instants import require_utc

__all__ = [
    "DEFAULT_BUDGETS",
    "DISRUPTION_REASONS",
    "LIFEBOAT_REASON",
    "Allowance",
    "Budget",
    "BudgetError",
    "Segment",
    "allowed_disruptions",
    "applies_to",
    "budget_limit",
    "format_go_duration",
    "is_active",
    "next_allowed_at",
    "parse_budgets",
    "parse_go_duration",
    "window_timeline",
]

#: Karpenter's ``DisruptionReason`` enum.
DISRUPTION_REASONS: Final = ("Underutilized", "Empty", "Drifted")
#: The Karpenter reason Lifeboat's voluntary replacements are counted under.
LIFEBOAT_REASON: Final = "Drifted"
#: CRD default of ``spec.disruption.budgets``.
DEFAULT_BUDGETS: Final[tuple[Mapping[str, Any], ...]] = ({"nodes": "10%"},)
_DEFAULT_NODES: Final = "10%"

# CRD patterns of budgets[].nodes and budgets[].duration (karpenter.sh/v1).
_NODES_PATTERN: Final = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_DURATION_PATTERN: Final = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")

_NANOS_PER_UNIT: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_DURATION_PART: Final = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_MAX_GO_DURATION_NS: Final = (1 << 63) - 1


class BudgetError(ValueError):
    """One or more budgets of a NodePool are invalid; the message names each index and why."""


# ---------------------------------------------------------------------------------------------
# Go durations


def parse_go_duration(text: str) -> timedelta:
    """Parse a Go ``time.ParseDuration`` string ("1h30m", "8h", "45s", "1h0m0s", "1.5h").

    Budgets store ``duration`` as a ``metav1.Duration``, which is a Go duration string.
    Sub-microsecond precision is truncated (timedelta has none). Raises ``ValueError``.
    """
    if not isinstance(text, str):
        raise ValueError(f"invalid duration {text!r}: not a string")
    rest, negative = text, False
    if rest[:1] in ("+", "-"):
        negative, rest = rest[0] == "-", rest[1:]
    if rest == "0":
        return timedelta(0)
    if not rest:
        raise ValueError(f'invalid duration "{text}"')
    total = Fraction(0)
    while rest:
        match = _GO_DURATION_PART.match(rest)
        assert match is not None  # the pattern matches the empty string
        whole, fraction, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not fraction:
            raise ValueError(f'invalid duration "{text}"')
        if not unit:
            raise ValueError(f'missing unit in duration "{text}"')
        if unit not in _NANOS_PER_UNIT:
            raise ValueError(f'unknown unit "{unit}" in duration "{text}"')
        value = Fraction(int(whole or "0"))
        if fraction:
            value += Fraction(int(fraction), 10 ** len(fraction))
        total += value * _NANOS_PER_UNIT[unit]
        rest = rest[match.end() :]
    if total > _MAX_GO_DURATION_NS:
        raise ValueError(f'invalid duration "{text}": out of range')
    micros = math.trunc(total / 1000)
    return timedelta(microseconds=-micros if negative else micros)


def format_go_duration(value: timedelta) -> str:
    """Format like Go's ``Duration.String`` ("8h0m0s", "1h30m0s", "45s", "0s")."""
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros == 0:
        return "0s"
    if micros < 1_000_000:
        if micros < 1_000:
            return f"{sign}{micros}µs"
        return f"{sign}{_trim(Fraction(micros, 1_000))}ms"
    hours, micros = divmod(micros, 3_600_000_000)
    minutes, micros = divmod(micros, 60_000_000)
    seconds = _trim(Fraction(micros, 1_000_000)) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return f"{sign}{seconds}"


def _trim(value: Fraction) -> str:
    """A decimal without trailing zeros (value has at most 6 decimals)."""
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return text or "0"


# ---------------------------------------------------------------------------------------------
# Budgets


@dataclass(frozen=True)
class Budget:
    """One entry of ``spec.disruption.budgets``, validated on construction.

    ``reasons`` is None when unset (the budget applies to every reason). An explicit empty
    list is kept as ``()``: Karpenter tests ``Reasons == nil``, so such a budget applies to no
    reason at all. ``cron`` is the parsed ``schedule`` (derived, not compared).
    """

    index: int
    nodes: str = _DEFAULT_NODES
    schedule: str | None = None
    duration: timedelta | None = None
    reasons: tuple[str, ...] | None = None
    cron: CronSchedule | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise BudgetError(f"budget[{self.index}]: {problem}")
        if self.schedule is not None:
            try:
                cron = parse_cron(self.schedule)
            except CronError as err:
                raise BudgetError(
                    f'budget[{self.index}]: schedule "{self.schedule}": {err}'
                ) from None
            object.__setattr__(self, "cron", cron)

    def _problem(self) -> str | None:
        if not _NODES_PATTERN.match(self.nodes):
            return f'nodes "{self.nodes}": must be an integer or a percentage 0%-100%'
        if (self.schedule is None) != (self.duration is None):
            return "'schedule' must be set with 'duration'"
        if self.duration is not None and self.duration < timedelta(0):
            return f"duration {format_go_duration(self.duration)}: must not be negative"
        unknown = [r for r in self.reasons or () if r not in DISRUPTION_REASONS]
        if unknown:
            return f"reasons {unknown}: must be among {list(DISRUPTION_REASONS)}"
        return None

    @property
    def scheduled(self) -> bool:
        """Whether the budget is only active in windows (otherwise always active)."""
        return self.cron is not None

    def describe(self) -> str:
        """Short human form: ``budget[1] "0" (window "0 9 * * mon-fri" for 8h0m0s)``."""
        text = f'budget[{self.index}] "{self.nodes}"'
        if self.schedule is not None and self.duration is not None:
            text += f' (window "{self.schedule}" for {format_go_duration(self.duration)})'
        return text


def _budget_entries(nodepool: Mapping[str, Any]) -> Sequence[Any]:
    """``spec.disruption.budgets`` with Karpenter's CRD defaults applied."""
    spec = nodepool.get("spec") or {}
    disruption = spec.get("disruption") if isinstance(spec, Mapping) else None
    if disruption is None:
        return DEFAULT_BUDGETS
    if not isinstance(disruption, Mapping):
        raise BudgetError("spec.disruption: expected an object")
    entries = disruption.get("budgets")
    if entries is None:
        return DEFAULT_BUDGETS
    if not isinstance(entries, list | tuple):
        raise BudgetError("spec.disruption.budgets: expected a list")
    return entries


def _budget_from_entry(index: int, entry: Any) -> Budget:
    """Build one Budget from its dict form, checking the types the CRD schema would."""
    if not isinstance(entry, Mapping):
        raise BudgetError(f"budget[{index}]: expected an object")
    nodes = entry.get("nodes", _DEFAULT_NODES)
    schedule = entry.get("schedule")
    duration_text = entry.get("duration")
    reasons = entry.get("reasons")
    if not isinstance(nodes, str):
        raise BudgetError(
            f'budget[{index}]: nodes {nodes!r}: must be a string such as "3" or "10%"'
        )
    if schedule is not None and not isinstance(schedule, str):
        raise BudgetError(f"budget[{index}]: schedule {schedule!r}: must be a string")
    if reasons is not None and not (
        isinstance(reasons, list | tuple) and all(isinstance(r, str) for r in reasons)
    ):
        raise BudgetError(f"budget[{index}]: reasons {reasons!r}: must be a list of strings")
    duration = None
    if duration_text is not None:
        if not isinstance(duration_text, str) or not _DURATION_PATTERN.match(duration_text):
            raise BudgetError(
                f"budget[{index}]: duration {duration_text!r}: must be hours and/or minutes "
                'such as "8h", "30m", "1h30m"'
            )
        duration = parse_go_duration(duration_text)
    return Budget(
        index=index,
        nodes=nodes,
        schedule=schedule,
        duration=duration,
        reasons=None if reasons is None else tuple(reasons),
    )


def parse_budgets(nodepool: Mapping[str, Any]) -> list[Budget]:
    """The budgets of a karpenter.sh/v1 NodePool (a dict), defaults applied.

    Raises ``BudgetError`` naming every invalid budget (joined with "; ").
    """
    budgets: list[Budget] = []
    problems: list[str] = []
    for index, entry in enumerate(_budget_entries(nodepool)):
        try:
            budgets.append(_budget_from_entry(index, entry))
        except BudgetError as err:
            problems.append(str(err))
    if problems:
        raise BudgetError("; ".join(problems))
    return budgets


def is_active(budget: Budget, now: datetime) -> bool:
    """Whether the budget is active at ``now`` (Karpenter's ``Budget.IsActive``).

    ``checkPoint := now.UTC().Add(-duration); return !schedule.Next(checkPoint).After(now)``:
    active iff a cron hit ``h`` satisfies ``now - duration < h <= now``. A schedule for which
    robfig finds no hit (it returns the zero time) therefore reads as always active.
    """
    if budget.cron is None or budget.duration is None:
        return True
    now = require_utc(now)
    hit = budget.cron.next_after(now - budget.duration)
    return hit is None or hit <= now


def budget_limit(budget: Budget, node_count: int) -> int:
    """The budget's ``nodes`` for a pool of ``node_count`` nodes; percentages round up."""
    if node_count < 0:
        raise ValueError(f"node_count must not be negative, got {node_count}")
    if budget.nodes.endswith("%"):
        percent = int(budget.nodes[:-1])
        return -(-percent * node_count // 100)  # ceil, as roundUp=true
    return int(budget.nodes)


def applies_to(budget: Budget, reason: str | None) -> bool:
    """Whether the budget constrains disruptions for ``reason``.

    ``reason=None`` selects only budgets without ``reasons``.
    """
    if budget.reasons is None:
        return True
    return reason is not None and reason in budget.reasons


def _check_reason(reason: str | None) -> None:
    if reason is not None and reason not in DISRUPTION_REASONS:
        raise ValueError(f"reason must be one of {DISRUPTION_REASONS} or None, got {reason!r}")


def _check_counts(node_count: int, disrupting: int) -> None:
    if node_count < 0 or disrupting < 0:
        raise ValueError(f"counts must not be negative: nodes={node_count} disrupting={disrupting}")


# ---------------------------------------------------------------------------------------------
# Allowance at one instant


@dataclass(frozen=True)
class Allowance:
    """How many more nodes of a pool may be voluntarily disrupted now, and why."""

    allowed: int | None  # None: no limit
    limit: int | None  # min over active applicable budgets, before subtracting disrupting
    disrupting: int
    reason: str
    blocked_by_error: bool = False
    binding_budget: int | None = None  # index of the budget giving the limit

    @property
    def permits_one(self) -> bool:
        """Whether at least one more node may be disrupted."""
        return self.allowed is None or self.allowed > 0


def _reason_label(reason: str | None) -> str:
    return "reason-less budgets" if reason is None else reason


def allowed_disruptions(
    nodepool: Mapping[str, Any],
    node_count: int,
    disrupting: int,
    now: datetime,
    reason: str | None = LIFEBOAT_REASON,
) -> Allowance:
    """Allowed voluntary disruptions of a pool at ``now``, as Karpenter computes them."""
    _check_reason(reason)
    _check_counts(node_count, disrupting)
    now = require_utc(now)
    try:
        budgets = parse_budgets(nodepool)
    except BudgetError as err:
        return Allowance(0, 0, disrupting, f"pool blocked: {err}", blocked_by_error=True)
    active = [b for b in budgets if applies_to(b, reason) and is_active(b, now)]
    if not active:
        return Allowance(
            None, None, disrupting, f"no active budget for {_reason_label(reason)}: no limit"
        )
    # min() keeps the first of equal limits: the lowest index binds.
    binding = min(active, key=lambda b: budget_limit(b, node_count))
    limit = budget_limit(binding, node_count)
    text = (
        f"{binding.describe()} of {node_count} nodes = {limit}, {disrupting} disrupting"
        if binding.nodes.endswith("%")
        else f"{binding.describe()} = {limit}, {disrupting} disrupting"
    )
    return Allowance(max(0, limit - disrupting), limit, disrupting, text, False, binding.index)


# ---------------------------------------------------------------------------------------------
# Over time: windows, timeline, next allowed instant


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
    _check_reason(reason)
    _check_counts(node_count, 0)
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
    _check_reason(reason)
    _check_counts(node_count, disrupting)
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

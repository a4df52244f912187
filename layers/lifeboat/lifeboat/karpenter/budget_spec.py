"""NodePool disruption budgets: what one budget says, and whether it is active at an instant.

See :mod:`lifeboat.karpenter.budgets` for the rules mirrored from Karpenter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from lifeboat.errors import InvalidInput
from lifeboat.karpenter.cron import CronError, CronSchedule, parse_cron
from lifeboat.karpenter.godurations import format_go_duration, parse_go_duration
from lifeboat.model.instants import require_utc

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
# What Go's strconv.Atoi accepts, and the ranges that matter for intstr.
_GO_INT: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_INT32_OFFSET: Final = 1 << 31


class BudgetError(InvalidInput):
    """One or more budgets of a NodePool are invalid; the message names each index and why."""


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
    """The budget's ``nodes`` for a pool of ``node_count`` nodes, as Karpenter computes it.

    ``Budget.GetAllowedDisruptions``: ``GetIntStrFromValue`` tries ``strconv.Atoi`` first, and
    an integer becomes ``intstr.FromInt``, which keeps its low 32 bits (two's complement):
    ``"4294967296"`` is 0, ``"4294967297"`` is 1, ``"2147483648"`` is -2147483648 (a negative
    limit allows nothing). A string Atoi refuses (a percentage, or an integer beyond 64 bits)
    goes through ``GetScaledValueFromIntOrPercent(..., roundUp=true)``: a percentage rounds up
    against ``node_count``; anything else is an error, raised as ``BudgetError`` (which blocks
    the whole pool while this budget is active).
    """
    if node_count < 0:
        raise ValueError(f"node_count must not be negative, got {node_count}")
    whole = _go_atoi(budget.nodes)
    if whole is not None:
        return (whole + _INT32_OFFSET) % (2 * _INT32_OFFSET) - _INT32_OFFSET
    if not budget.nodes.endswith("%"):
        raise BudgetError(
            f'budget[{budget.index}]: nodes "{budget.nodes}": invalid value for IntOrString: '
            "invalid type: string is not a percentage"
        )
    percent = _go_atoi(budget.nodes[:-1])
    if percent is None:
        raise BudgetError(
            f'budget[{budget.index}]: nodes "{budget.nodes}": invalid value for IntOrString: '
            f'invalid value "{budget.nodes}"'
        )
    return -(-percent * node_count // 100)  # ceil, as roundUp=true


def _go_atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi`` on a 64-bit platform: None where it fails (syntax or range)."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def applies_to(budget: Budget, reason: str | None) -> bool:
    """Whether the budget constrains disruptions for ``reason``.

    ``reason=None`` selects only budgets without ``reasons``.
    """
    if budget.reasons is None:
        return True
    return reason is not None and reason in budget.reasons


def check_reason(reason: str | None) -> None:
    if reason is not None and reason not in DISRUPTION_REASONS:
        raise ValueError(f"reason must be one of {DISRUPTION_REASONS} or None, got {reason!r}")


def check_counts(node_count: int, disrupting: int) -> None:
    if node_count < 0 or disrupting < 0:
        raise ValueError(f"counts must not be negative: nodes={node_count} disrupting={disrupting}")

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
  already disrupting, floored at 0. No active budget means no limit. An integer ``nodes``
  keeps only its low 32 bits, as ``intstr.FromInt`` does (``"4294967296"`` is 0).
* Any invalid budget blocks the whole pool (``MustGetAllowedDisruptions`` returns 0 on error):
  fail closed, and say which budget and why. "Invalid" covers what Karpenter's CRD validation
  or its parser would refuse, and an active budget whose ``nodes`` intstr cannot evaluate
  (an integer beyond 64 bits).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lifeboat.karpenter.budget_spec import (
    DEFAULT_BUDGETS,
    DISRUPTION_REASONS,
    LIFEBOAT_REASON,
    Budget,
    BudgetError,
    applies_to,
    budget_limit,
    check_counts,
    check_reason,
    is_active,
    parse_budgets,
)
from lifeboat.karpenter.budget_windows import (
    Opening,
    Segment,
    earliest_permitted,
    next_allowed_at,
    window_timeline,
)
from lifeboat.karpenter.godurations import format_go_duration, parse_go_duration
from lifeboat.model.instants import require_utc

__all__ = [
    "DEFAULT_BUDGETS",
    "DISRUPTION_REASONS",
    "LIFEBOAT_REASON",
    "Allowance",
    "Budget",
    "BudgetError",
    "Opening",
    "Segment",
    "allowed_disruptions",
    "applies_to",
    "budget_limit",
    "earliest_permitted",
    "format_go_duration",
    "is_active",
    "next_allowed_at",
    "parse_budgets",
    "parse_go_duration",
    "window_timeline",
]


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
    check_reason(reason)
    check_counts(node_count, disrupting)
    now = require_utc(now)
    try:
        budgets = parse_budgets(nodepool)
    except BudgetError as err:
        return Allowance(0, 0, disrupting, f"pool blocked: {err}", blocked_by_error=True)
    # GetAllowedDisruptionsByReason: every *active* budget's value is computed, whatever its
    # reasons, and an error in any of them blocks the pool for every reason.
    limits: dict[int, int] = {}
    errors: list[str] = []
    for budget in budgets:
        if not is_active(budget, now):
            continue
        try:
            limits[budget.index] = budget_limit(budget, node_count)
        except BudgetError as err:
            errors.append(str(err))
    if errors:
        return Allowance(
            0, 0, disrupting, f"pool blocked: {'; '.join(errors)}", blocked_by_error=True
        )
    active = [b for b in budgets if b.index in limits and applies_to(b, reason)]
    if not active:
        return Allowance(
            None, None, disrupting, f"no active budget for {_reason_label(reason)}: no limit"
        )
    # min() keeps the first of equal limits: the lowest index binds.
    binding = min(active, key=lambda b: limits[b.index])
    limit = limits[binding.index]
    text = (
        f"{binding.describe()} of {node_count} nodes = {limit}, {disrupting} disrupting"
        if binding.nodes.endswith("%")
        else f"{binding.describe()} = {limit}, {disrupting} disrupting"
    )
    return Allowance(max(0, limit - disrupting), limit, disrupting, text, False, binding.index)

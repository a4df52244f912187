"""Checks on NodePool disruption budgets and Lifeboat's opt-out, with the budget code Lifeboat
itself decides with (``lifeboat.karpenter.budgets``: Karpenter's ``GetAllowedDisruptionsByReason``).

A pool is judged at its current node count (at least 1: a percentage of an empty pool is 0,
which would read as a freeze). "Never" looks a year ahead; "no limit" looks a week ahead,
which holds every daily and weekly window pattern.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Final

from lifeboat.karpenter.budgets import (
    DEFAULT_BUDGETS,
    DISRUPTION_REASONS,
    LIFEBOAT_REASON,
    BudgetError,
    Segment,
    budget_limit,
    next_allowed_at,
    parse_budgets,
    window_timeline,
)
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.objects import Obj
from lifeboat_local.audit.findings import Issue
from lifeboat_local.audit.view import ClusterView, ref

NEVER_HORIZON: Final = timedelta(days=366)
UNLIMITED_HORIZON: Final = timedelta(days=8)


def _fmt(segment: Segment) -> str:
    return f"{segment.start:%Y-%m-%d %H:%M} to {segment.end:%Y-%m-%d %H:%M} UTC"


def _judged_pools(view: ClusterView) -> Iterator[tuple[Obj, int]]:
    """Pools whose budgets parse, with the node count they are judged at."""
    for pool in view.inventory.nodepools:
        try:
            parse_budgets(pool)
        except BudgetError:
            continue  # invalid_budgets reports it; nothing else can be judged
        yield pool, max(1, len(view.nodes_by_pool.get(nodes.name_of(pool), ())))


def invalid_budgets(view: ClusterView) -> Iterator[Issue]:
    """Budgets Karpenter refuses: it then allows no voluntary disruption in the pool."""
    for pool in view.inventory.nodepools:
        try:
            parse_budgets(pool)
        except BudgetError as error:
            yield Issue(
                ref(pool),
                f"invalid disruption budgets ({error}): Karpenter and Lifeboat allow no "
                "voluntary disruption in this pool until they are fixed (fail closed)",
                "fix the budget named (nodes: an integer or a percentage; schedule with duration)",
            )


def _has_default_budgets(pool: Obj) -> bool:
    """No budgets written (the CRD default applies), or exactly the default, as a live API
    server returns a pool created without budgets."""
    disruption = (pool.get("spec") or {}).get("disruption") or {}
    budgets = disruption.get("budgets")
    return budgets is None or [dict(b) for b in budgets] == [dict(b) for b in DEFAULT_BUDGETS]


def default_budget(view: ClusterView) -> Iterator[Issue]:
    """Pools on Karpenter's CRD default budget: 10% of the nodes, at any hour, any reason."""
    for pool, _ in _judged_pools(view):
        if not _has_default_budgets(pool):
            continue
        size = len(view.nodes_by_pool.get(nodes.name_of(pool), ()))
        now = f"{budget_limit(parse_budgets(pool)[0], size)} of its {size}" if size else "none now"
        yield Issue(
            ref(pool),
            f'the default budget (nodes: "10%"): at most 10% of the pool\'s nodes, rounded up '
            f"({now}; at least 1 of any non-empty pool), may be disrupted at once, at any hour, "
            "for any reason (Drifted, Underutilized, Empty)",
            'write spec.disruption.budgets explicitly (e.g. a count, and "0" in business hours)',
        )


def unlimited_budget(view: ClusterView) -> Iterator[Issue]:
    """Pools where, at times, no budget is active for a reason: no limit at all then."""
    for pool, count in _judged_pools(view):
        start = view.at
        unlimited: dict[str, Segment] = {}
        for reason in DISRUPTION_REASONS:
            segments = window_timeline(pool, count, start, start + UNLIMITED_HORIZON, reason)
            free = next((s for s in segments if s.limit is None), None)
            if free is not None:
                unlimited[reason] = free
        if not unlimited:
            continue
        reasons = ", ".join(unlimited)
        first = min(unlimited.values(), key=lambda s: s.start)
        always = first.start == start and first.end == start + UNLIMITED_HORIZON
        when = "at any time" if always else f"from {_fmt(first)} (and whenever no window is open)"
        yield Issue(
            ref(pool),
            f"no budget limits {reasons} disruptions {when}: Karpenter may then disrupt every "
            "node of the pool at once",
            'add an always-active budget (e.g. nodes: "10%") beside the windowed ones',
        )


def never_allows(view: ClusterView) -> Iterator[Issue]:
    """Pools whose budgets allow no Drifted disruption for a year: Lifeboat's replacements
    and a rotation wait forever (involuntary events still act)."""
    for pool, count in _judged_pools(view):
        start = view.at
        if next_allowed_at(pool, count, 0, start, start + NEVER_HORIZON, LIFEBOAT_REASON):
            continue
        blocking = ", ".join(_zero_budgets(pool, count, start)) or "limit 0"
        yield Issue(
            ref(pool),
            f"its budgets allow no {LIFEBOAT_REASON} disruption at any time in the next "
            f"{NEVER_HORIZON.days} days ({blocking}): Lifeboat's "
            "replacements and rotations wait forever; only involuntary events (Spot, state "
            "changes) and scheduled maintenance at its deadline still act",
            "give the pool a window with a budget above 0, or opt it out (lifeboat.dev/disabled)",
        )


def _zero_budgets(pool: Obj, count: int, at: datetime) -> list[str]:
    """The budgets holding the pool at 0 at ``at``, e.g. ``budget[0] "0"``."""
    budgets = parse_budgets(pool)
    segments = window_timeline(pool, count, at, at + timedelta(minutes=1))
    active = segments[0].active_budget_indexes if segments else ()
    return [budgets[i].describe() for i in active if budget_limit(budgets[i], count) == 0]


def lifeboat_disabled(view: ClusterView) -> Iterator[Issue]:
    """Pools Lifeboat leaves alone (``lifeboat.dev/disabled: "true"``)."""
    for pool in view.inventory.nodepools:
        if node_marks.opted_out(pool):
            yield Issue(
                ref(pool),
                f'{node_marks.OPT_OUT_ANNOTATION}: "true": Lifeboat takes no action on its nodes '
                "(Karpenter's own interruption handling, if enabled, still does)",
                f"remove the {node_marks.OPT_OUT_ANNOTATION} annotation to let Lifeboat handle it",
            )

"""NodePool checks, with Lifeboat's own budget code (Karpenter's GetAllowedDisruptionsByReason):
invalid budgets block the pool, the CRD default is 10%, windows may leave times without any
limit, and budgets may never allow a disruption."""

from __future__ import annotations

from typing import Any

import pytest

from lifeboat_local.audit import nodepools

from .audit_builders import node, nodepool, view

BUSINESS_HOURS_FREEZE = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}


def pool_nodes(pool: str, count: int) -> list[dict[str, Any]]:
    return [node(f"{pool}-{i}", {"karpenter.sh/nodepool": pool}) for i in range(count)]


@pytest.mark.parametrize(
    ("budgets", "named"),
    [
        ([{"nodes": "ten"}], 'budget[0]: nodes "ten"'),
        (
            [{"nodes": "1"}, {"nodes": "0", "schedule": "@daily"}],
            "budget[1]: 'schedule' must be set with 'duration'",
        ),
        ([{"nodes": "0", "schedule": "0 0 * * tue-mon", "duration": "1h"}], "beyond end of range"),
        ([{"nodes": "1", "reasons": ["Expired"]}], "reasons ['Expired']"),
    ],
)
def test_invalid_budgets_block_the_pool(budgets: list[dict[str, Any]], named: str) -> None:
    cluster = view(nodepool("general", budgets))
    [issue] = nodepools.invalid_budgets(cluster)
    assert named in issue.message and "fail closed" in issue.message
    # Nothing else is judged on a pool whose budgets do not parse.
    assert list(nodepools.never_allows(cluster)) == list(nodepools.unlimited_budget(cluster)) == []


def test_default_budget_written_or_not() -> None:
    """No budgets: the CRD default; a live API server returns it written out."""
    absent = nodepool("a")
    written = nodepool("b", [{"nodes": "10%"}])
    explicit = nodepool("c", [{"nodes": "10%"}, BUSINESS_HOURS_FREEZE])
    issues = list(nodepools.default_budget(view(absent, written, explicit, *pool_nodes("a", 12))))
    assert [str(i.object) for i in issues] == ["NodePool a", "NodePool b"]
    assert "(2 of its 12;" in issues[0].message  # 10% of 12 = 1.2, rounded up
    assert "(none now;" in issues[1].message


def test_empty_budget_list_means_no_limit_at_any_time() -> None:
    [issue] = nodepools.unlimited_budget(view(nodepool("general", [])))
    assert "no budget limits Underutilized, Empty, Drifted disruptions at any time" in issue.message


def test_windowed_budgets_alone_leave_the_nights_unlimited() -> None:
    [issue] = nodepools.unlimited_budget(view(nodepool("general", [BUSINESS_HOURS_FREEZE])))
    assert "from 2026-12-01 17:00 to 2026-12-02 09:00 UTC" in issue.message


def test_budget_for_some_reasons_leaves_the_others_unlimited() -> None:
    only_drift = nodepool("general", [{"nodes": "1", "reasons": ["Drifted"]}])
    [issue] = nodepools.unlimited_budget(view(only_drift))
    assert "no budget limits Underutilized, Empty disruptions at any time" in issue.message


def test_an_always_active_budget_bounds_every_moment() -> None:
    pool = nodepool("general", [{"nodes": "20%"}, BUSINESS_HOURS_FREEZE])
    assert list(nodepools.unlimited_budget(view(pool))) == []
    assert list(nodepools.never_allows(view(pool))) == []


@pytest.mark.parametrize(
    "budgets",
    [
        [{"nodes": "0"}],
        [{"nodes": "0%"}],
        [{"nodes": "5"}, {"nodes": "0", "reasons": ["Drifted"]}],
        # A schedule robfig never fires returns the zero time: Karpenter reads the budget as
        # always active (Budget.IsActive), so this "window" freezes the pool for good.
        [{"nodes": "0", "schedule": "0 0 30 2 *", "duration": "1h"}],
        # Overlapping windows that together cover every minute.
        [
            {"nodes": "0", "schedule": "0 0 * * *", "duration": "13h"},
            {"nodes": "0", "schedule": "0 12 * * *", "duration": "13h"},
        ],
    ],
)
def test_never_allows(budgets: list[dict[str, Any]]) -> None:
    [issue] = nodepools.never_allows(view(nodepool("frozen", budgets), *pool_nodes("frozen", 4)))
    assert "allow no Drifted disruption at any time in the next 366 days" in issue.message


def test_zero_budget_for_other_reasons_does_not_freeze_lifeboat() -> None:
    pool = nodepool(
        "general", [{"nodes": "0", "reasons": ["Underutilized", "Empty"]}, {"nodes": "1"}]
    )
    assert list(nodepools.never_allows(view(pool))) == []


def test_zero_window_then_open_is_not_never() -> None:
    """Frozen now, open at 17:00: not "never" (the pool waits, it is not frozen)."""
    pool = nodepool("general", [{"nodes": "1"}, BUSINESS_HOURS_FREEZE])
    assert list(nodepools.never_allows(view(pool))) == []


def test_percentage_of_an_empty_pool_is_judged_at_one_node() -> None:
    """10% of 0 nodes is 0; the audit judges a pool at one node at least, so it is no freeze."""
    assert list(nodepools.never_allows(view(nodepool("empty", [{"nodes": "10%"}])))) == []


def test_lifeboat_disabled() -> None:
    off = nodepool("legacy", [{"nodes": "1"}], {"lifeboat.dev/disabled": "true"})
    on = nodepool("general", [{"nodes": "1"}], {"lifeboat.dev/disabled": "false"})
    [issue] = nodepools.lifeboat_disabled(view(off, on))
    assert str(issue.object) == "NodePool legacy"

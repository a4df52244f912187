"""``bench.budget_scan`` measures what it says (issue 23.5): each case is a NodePool of the
CRD's 50 budgets, decided through ``decide``, with the outcome its name promises. The time
itself is the benchmark's to report (``python -m bench.budget_scan``), never asserted here."""

from __future__ import annotations

import pytest

from bench.budget_scan import CASES
from bench.window_search import NOW, _case
from lifeboat.decide import decide
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings


@pytest.mark.parametrize(
    ("name", "outcome"),
    [
        ("50-freezes-waiting", Outcome.DEFERRED),
        ("50-freezes-permitted", Outcome.DEFERRED),  # 14:05: the "5 */2" freeze is on
        ("50-percent-budgets", Outcome.ACTED),
    ],
)
def test_each_case_has_50_budgets_and_its_outcome(name: str, outcome: Outcome) -> None:
    budgets, nodes, disrupting, deadline = CASES[name]
    assert len(budgets) == 50
    notice, target = _case(budgets, nodes, disrupting, deadline)
    decision = decide(notice, target, Settings(), NOW)
    assert decision.outcome is outcome, decision.reason


def test_the_permitted_case_finds_the_first_minute_no_freeze_covers() -> None:
    """Freezes at minutes 0..48 of even hours: at 14:05 the first free minute is 14:49."""
    notice, target = _case(*CASES["50-freezes-permitted"])
    decision = decide(notice, target, Settings(), NOW)
    assert "next permitted at 2026-12-01T14:49:00Z" in decision.reason

"""``bench.hand_over`` measures what docs/concepts/hand-over.md says of the two hand-overs, on the
replay's Karpenter simulation with its drift running (not a timing: simulated time).

Karpenter counts a node against a budget only once it is disrupting in its own terms
(``BuildDisruptionBudgetMapping``, pkg/controllers/disruption/helpers.go: not Ready, marked
for deletion or deleting), so a node Lifeboat holds cordoned for a when-ready hand-over is
not counted while its replacement boots, and Karpenter's drift takes the budget meanwhile.
"""

from __future__ import annotations

from bench.hand_over import BUDGET, measure
from lifeboat.marks.handover import AT_ONCE, WHEN_READY


def test_at_once_stays_within_the_budget_and_when_ready_leaves_no_pod_pending() -> None:
    at_once = measure(AT_ONCE, lifeboat_first=True)
    when_ready = measure(WHEN_READY, lifeboat_first=True)
    for run in (at_once, when_ready):
        assert run["lifeboat_replacements"] == 2  # both did voluntary work on the pool
        assert run["karpenter_drift_replacements"] >= 1
        assert run["replaced_twice"] == 0
        assert run["hand_overs_given_up"] == 0
    assert at_once["peak_disrupting_lifeboat_count"] <= BUDGET
    assert at_once["pod_pending_seconds"] > 0  # pods waited for a replacement to boot
    assert when_ready["pod_pending_seconds"] == 0
    # The cost of when-ready: Karpenter did not count the held nodes.
    assert when_ready["peak_disrupting_karpenter_count"] > BUDGET

"""The report of a decision carried out: its reason says what act did beside the decision
(a replacement refused, pods held by PodDisruptionBudgets, a NodePool label that disagrees).
Built by the flow after act, so it lives with the flow (model/ keeps the Report itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from lifeboat.decide import Decision
from lifeboat.model.notice import Notice
from lifeboat.model.report import Outcome, Report
from lifeboat.model.target import Target


def decision_report(
    notice: Notice,
    target: Target,
    decision: Decision,
    actions: Sequence[dict[str, Any]],
    *,
    pods_remaining: int = 0,
    dry_run: bool = False,
    cluster: str | None = None,
    recheck_at: datetime | None = None,
) -> Report:
    """The report of a decision carried out (``actions`` are what act did). ``cluster``:
    the instance's, when the target's instance facts do not say (a hand-over's).
    ``recheck_at``: when a deferral is decided again (its follow-up's due time)."""
    reason = decision.reason
    if dry_run and decision.outcome is not Outcome.IGNORED:
        reason = f"dry run, nothing changed: {reason}"
    if pods_remaining:
        reason += f"; {pods_remaining} pod(s) held by PodDisruptionBudgets, retrying"
    if target.node_nodepool_label is not None:
        reason += (
            f"; the Node's label karpenter.sh/nodepool={target.node_nodepool_label} disagrees "
            f"with its NodeClaim's NodePool {target.nodepool_name}: judged by the NodeClaim's"
        )
    for action in actions:
        # A step that could not be done but did not stop the others (a replacement the API
        # server refused): the reason says so, as the action does.
        if action.get("error"):
            reason += f"; {action['type']} not done: {action['error']}"
    return Report.for_notice(
        notice,
        decision.outcome,
        reason,
        node=target.node_name,
        nodepool=target.nodepool_name,
        deferred_until=decision.deferred_until,
        recheck_at=recheck_at if decision.outcome is Outcome.DEFERRED else None,
        actions=tuple(actions),
        cluster=target.info.cluster if target.info else cluster,
        forced=decision.forced,
        gave_up=decision.gave_up,
    )

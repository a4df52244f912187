"""A NodePool's size and disrupting nodes, counted as Karpenter counts them for its budgets.

Karpenter's ``BuildDisruptionBudgetMapping`` (pkg/controllers/disruption/helpers.go) walks its
in-memory cluster state, one entry per instance (keyed by provider ID):

- only **managed, initialized** nodes count: a NodeClaim with the Node's provider ID exists,
  and the Node is labelled ``karpenter.sh/initialized: "true"``. A claim still launching, a
  Node not yet initialized (Lifeboat's own replacement, while it boots) and a deleting claim
  whose Node is already gone hold no slot;
- a claim with ``InstanceTerminating=True`` (drained, instance deleted) counts no more;
- the pool is the Node's ``karpenter.sh/nodepool`` label;
- **disrupting**: the Node is not Ready, or the node is marked for deletion (its claim is
  being deleted, or Karpenter's own command marked it, in memory only).

Pure: the caller lists the pool's Nodes and NodeClaims. Two views of the same objects:

- ``KARPENTER``: what Karpenter itself counts (the replay's simulation uses it, with the
  in-memory marks of its own commands passed as ``marked``);
- ``LIFEBOAT``: Karpenter's count, plus what Lifeboat can see of work Karpenter keeps in
  memory or cannot see at all (:func:`lifeboat.marks.node_marks.disruption_reason`): a Node being
  deleted, Karpenter's ``karpenter.sh/disrupted`` taint and ``DisruptionReason`` condition
  (written before Karpenter launches its replacements), and Lifeboat's own NoSchedule taint.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from enum import Enum

from lifeboat.karpenter import disruption_rules
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.objects import Obj
from lifeboat.model.target import PoolCounts

INSTANCE_TERMINATING = "InstanceTerminating"
DISRUPTION_REASON = "DisruptionReason"


class View(Enum):
    KARPENTER = "karpenter"
    LIFEBOAT = "lifeboat"


def claims_by_provider_id(claims: Iterable[Obj]) -> dict[str, Obj]:
    """Launched claims by ``status.providerID`` (how Karpenter pairs a claim with its Node)."""
    return {
        str(claim["status"]["providerID"]): claim
        for claim in claims
        if (claim.get("status") or {}).get("providerID")
    }


def count_pool(
    pool_nodes: Iterable[Obj],
    claims: Iterable[Obj],
    *,
    view: View = View.LIFEBOAT,
    marked: Collection[str] = (),
) -> PoolCounts:
    """Count one pool from its Nodes and NodeClaims. ``marked``: names of claims Karpenter's
    own commands hold in memory (``Cluster.MarkForDeletion``)."""
    by_provider = claims_by_provider_id(claims)
    size = 0
    disrupting: list[tuple[str, str]] = []
    for node in sorted(pool_nodes, key=nodes.name_of):
        claim = by_provider.get(nodes.provider_id(node) or "")
        if claim is None or not disruption_rules.is_initialized(node):
            continue  # not managed, or not initialized: no slot at all
        if nodes.condition_true(claim, INSTANCE_TERMINATING):
            continue
        size += 1
        why = _why_disrupting(node, claim, view, marked)
        if why is not None:
            disrupting.append((nodes.name_of(node), why))
    return PoolCounts(
        node_count=size, disrupting=len(disrupting), disrupting_nodes=tuple(disrupting)
    )


def _why_disrupting(node: Obj, claim: Obj, view: View, marked: Collection[str]) -> str | None:
    if not nodes.is_ready(node):
        return "node not Ready"
    name = nodes.name_of(claim)
    if nodes.is_deleting(claim):
        return f"NodeClaim {name} deleting"
    if name in marked:
        return f"NodeClaim {name} marked for deletion"
    if view is View.KARPENTER:
        return None
    if nodes.condition_true(claim, DISRUPTION_REASON):
        return f"NodeClaim {name} being disrupted by Karpenter"
    return node_marks.disruption_reason(node)

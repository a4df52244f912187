"""Checks on who owns each node: a NodePool (Karpenter) or a node group. A node nobody owns is
not replaced when Lifeboat drains it, and a node naming a NodePool that is gone is replaced by
nobody either (Lifeboat builds a replacement NodeClaim from the pool's template).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from lifeboat.kube import nodes
from lifeboat.model.objects import Obj
from lifeboat_local.audit.findings import Issue
from lifeboat_local.audit.view import ClusterView, ref

# Labels naming a node's group, and what owns it then.
GROUP_LABELS: Final = (
    (nodes.NODEPOOL_LABEL, "Karpenter NodePool"),
    ("eks.amazonaws.com/nodegroup", "EKS managed node group"),
    ("alpha.eksctl.io/nodegroup-name", "eksctl node group"),
    ("kops.k8s.io/instancegroup", "kOps instance group"),
)
# Fargate "nodes" are not EC2 instances: no interruption reaches them, nothing to own.
_FARGATE: Final = ("eks.amazonaws.com/compute-type", "fargate")


def _claimed(view: ClusterView) -> frozenset[str]:
    """Names and provider IDs of nodes a NodeClaim's status points at."""
    found: set[str] = set()
    for claim in view.inventory.nodeclaims:
        status = claim.get("status") or {}
        found.update(str(v) for v in (status.get("nodeName"), status.get("providerID")) if v)
    return frozenset(found)


def owner_of(node: Obj, view: ClusterView) -> str | None:
    """What owns the node ("Karpenter NodePool", "EKS managed node group", ...), None if nothing
    the audit can see."""
    labels = nodes.labels_of(node)
    for key, owner in GROUP_LABELS:
        if labels.get(key):
            return owner
    for key in view.node_group_labels:
        if labels.get(key):
            return f"node group ({key})"
    if nodes.nodeclaim_owner(node) is not None:
        return "Karpenter NodeClaim"
    claimed = view.memo("claimed-nodes", lambda: _claimed(view))
    if nodes.name_of(node) in claimed or (nodes.provider_id(node) or "") in claimed:
        return "Karpenter NodeClaim"
    if labels.get(_FARGATE[0]) == _FARGATE[1]:
        return "Fargate"
    return None


def without_owner(view: ClusterView) -> Iterator[Issue]:
    """Nodes no NodePool, NodeClaim or node group label owns."""
    for node in view.inventory.nodes:
        if owner_of(node, view) is None:
            yield Issue(
                ref(node),
                "no NodePool, NodeClaim or node group label: nothing replaces it when it is "
                "drained, and a rotation cannot select it by group",
                "label it with its node group (or pass --node-group-label KEY), or replace it "
                "with a NodePool's or node group's node",
            )


def nodepool_missing(view: ClusterView) -> Iterator[Issue]:
    """Nodes labelled with a NodePool that does not exist."""
    if not view.inventory.karpenter:
        return
    for node in view.inventory.nodes:
        pool = nodes.labels_of(node).get(nodes.NODEPOOL_LABEL)
        if pool and pool not in view.nodepools_by_name:
            yield Issue(
                ref(node),
                f"its NodePool {pool} does not exist: Karpenter will not replace it and "
                "Lifeboat cannot build a replacement NodeClaim",
                f"restore NodePool {pool}, or drain the node onto another pool and delete it",
            )

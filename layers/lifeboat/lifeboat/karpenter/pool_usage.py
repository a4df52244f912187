"""A NodePool's resource usage, summed as Karpenter's cluster state sums it for ``spec.limits``.

Karpenter never checks limits against ``NodePool.status.resources`` when it launches:
``Provisioner.Create`` (pkg/controllers/provisioning/provisioner.go) refuses a claim when
``Spec.Limits.ExceededBy(cluster.NodePoolResourcesFor(pool))``, and that usage is kept by
``Cluster.updateNodePoolResources`` (pkg/controllers/state/cluster.go) from every state node:

- one state node per instance: a NodeClaim and its Node paired by provider ID, or a claim not
  launched yet (no provider ID), or a Node with no claim;
- its pool is its ``karpenter.sh/nodepool`` label;
- its ``StateNode.Capacity()``: the Node's ``status.capacity`` once initialized, before that
  the claim's ``status.capacity`` (the Node's non-zero values first, when there is a Node);
- plus ``nodes: 1``;
- nothing for a node marked for deletion (its claim or Node being deleted).

Pure: the caller lists the pool's Nodes and NodeClaims (as it does for the budgets), so the
count is fresh at decision time and needs no status Karpenter may not have written yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.quantities import parse_resources
from lifeboat.kube import nodes
from lifeboat.model.objects import Obj

NODES: str = "nodes"  # resources.Node: every state node counts one


def uncounted(nodepool: Obj) -> bool:
    """Whether the pool has ``spec.limits`` but no ``status.resources`` (Karpenter's counter
    has not written it: a cluster file written by hand, a pool just created): its usage must
    then be summed from its Nodes and NodeClaims, whatever the notice's kind."""
    spec = nodepool.get("spec") or {}
    return bool(spec.get("limits")) and "resources" not in (nodepool.get("status") or {})


def pool_usage(pool_nodes: Iterable[Obj], claims: Iterable[Obj]) -> dict[str, Fraction]:
    """The summed capacity (and node count) of the pool's state nodes."""
    node_list = list(pool_nodes)
    claim_list = list(claims)
    by_provider = {nodes.provider_id(n): n for n in node_list if nodes.provider_id(n)}
    paired: set[str] = set()
    usage: dict[str, Fraction] = {}
    for claim in claim_list:
        provider = str((claim.get("status") or {}).get("providerID") or "")
        node = by_provider.get(provider) if provider else None
        if node is not None:
            paired.add(provider)
        if nodes.is_deleting(claim) or (node is not None and nodes.is_deleting(node)):
            continue
        _add(usage, _capacity(node, claim))
    for node in node_list:
        if nodes.provider_id(node) in paired or nodes.is_deleting(node):
            continue
        _add(usage, _capacity(node, None))
    return usage


def _capacity(node: Obj | None, claim: Obj | None) -> dict[str, Fraction]:
    """``StateNode.Capacity``."""
    node_capacity = parse_resources((node or {}).get("status", {}).get("capacity"))
    if claim is not None and (node is None or not disruption_rules.is_initialized(node)):
        claim_capacity = parse_resources((claim.get("status") or {}).get("capacity"))
        merged = dict(node_capacity)
        for name, quantity in claim_capacity.items():
            if not merged.get(name):
                merged[name] = quantity
        node_capacity = merged
    node_capacity[NODES] = Fraction(1)
    return node_capacity


def _add(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, quantity in more.items():
        total[name] = total.get(name, Fraction(0)) + quantity

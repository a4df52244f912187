"""From instance ids to Kubernetes objects, without scanning the cluster.

Per batch: one DescribeInstances for every instance (``instances``), then per instance one
GET of its Node by name, and one GET per NodePool. Only voluntary notices, which must be
weighed against the pool's budgets, list the pool's nodes and claims (by label) and the
node's pods (by field selector): each of those requests is bounded by the pool or the node,
never by the cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from lifeboat import nodes
from lifeboat.instances import InstanceInfo, instance_id_from_provider_id
from lifeboat.kube import KubeApi
from lifeboat.target import ClaimRef, PoolCounts, Target


class Resolver:
    """Resolves notices against one cluster; caches what a batch shares (NodePools)."""

    def __init__(self, kube: KubeApi) -> None:
        self.kube = kube
        self._nodepools: dict[str, Mapping[str, Any] | None] = {}
        self._lock = threading.Lock()

    def resolve(
        self, instance_id: str, info: InstanceInfo, node: Mapping[str, Any] | None = None
    ) -> Target:
        """The Target of an instance: its node, NodeClaim and NodePool (no lists). ``node``
        is the instance's Node when the caller already has it fresh (it patched it)."""
        found = _Found(node) if node is not None else self._find_node(instance_id, info)
        if found.node is None:
            return Target(instance_id, info)
        claim = self._claim_of(found, instance_id, info)
        pool_name = nodes.labels_of(found.node).get(nodes.NODEPOOL_LABEL) or info.nodepool
        nodepool = self.nodepool(pool_name) if pool_name and claim else None
        return Target(
            instance_id,
            info,
            node=found.node,
            claim=claim,
            nodepool_name=pool_name,
            nodepool=nodepool,
        )

    def _claim_of(self, found: _Found, instance_id: str, info: InstanceInfo) -> ClaimRef | None:
        """The NodeClaim Lifeboat may act on for this instance.

        The Node's ownerReference is Karpenter's own binding (set when the node registered).
        An EC2 tag is not: anyone allowed ``ec2:CreateTags`` could point
        ``karpenter.sh/nodeclaim`` at someone else's claim, so a claim named only by the tag
        is used only when its ``status.providerID`` names this very instance.
        """
        assert found.node is not None
        owner = nodes.nodeclaim_owner(found.node)
        if owner is not None:
            return ClaimRef(*owner)
        if not info.nodeclaim:
            return None
        claim = found.claim if found.claim is not None else self.kube.get_nodeclaim(info.nodeclaim)
        if claim is None or not _runs_on(claim, instance_id):
            return None
        return ClaimRef(nodes.name_of(claim), claim["metadata"].get("uid"))

    def with_budget_state(self, target: Target) -> Target:
        """Add what a voluntary decision weighs: the node's pods and its pool's counts.
        Call it while holding the pool's lease, so the counts are still true when acted on."""
        if target.node is None:
            return target
        pods = tuple(self.kube.list_pods_on_node(nodes.name_of(target.node)))
        counts = self.pool_counts(target.nodepool) if target.nodepool is not None else None
        return replace(target, pods=pods, counts=counts)

    def nodepool(self, name: str) -> Mapping[str, Any] | None:
        """One GET per NodePool per batch, however many of its nodes the batch names."""
        with self._lock:
            if name not in self._nodepools:
                self._nodepools[name] = self.kube.get_nodepool(name)
            return self._nodepools[name]

    def pool_counts(self, nodepool: Mapping[str, Any]) -> PoolCounts:
        """Count the pool's nodes and those already disrupting. Always read fresh: callers
        hold the pool's lease, and a cached count is how budgets get exceeded."""
        name = nodes.name_of(nodepool)
        selector = f"{nodes.NODEPOOL_LABEL}={name}"
        pool_nodes = self.kube.list_nodes(selector)
        claims = self.kube.list_nodeclaims(selector)
        deleting_claims = {
            nodes.name_of(c) for c in claims if c["metadata"].get("deletionTimestamp")
        }
        disrupting: list[tuple[str, str]] = []
        claims_with_nodes: set[str] = set()
        for node in pool_nodes:
            owner = nodes.nodeclaim_owner(node)
            if owner:
                claims_with_nodes.add(owner[0])
            why = nodes.disruption_reason(node)
            if why is None and owner and owner[0] in deleting_claims:
                why = f"NodeClaim {owner[0]} deleting"
            if why is not None:
                disrupting.append((nodes.name_of(node), why))
        # A claim being deleted whose node is already gone still holds its slot until it goes.
        for claim in sorted(deleting_claims - claims_with_nodes):
            disrupting.append((f"(NodeClaim {claim})", "NodeClaim deleting, node gone"))
        return PoolCounts(
            node_count=len(pool_nodes),
            disrupting=len(disrupting),
            disrupting_nodes=tuple(disrupting),
        )

    def _find_node(self, instance_id: str, info: InstanceInfo) -> _Found:
        """GET the node by the name EC2 gave; if that misses (custom hostnames), ask the
        instance's NodeClaim for its node name. Never list all nodes."""
        candidates = [info.node_name] if info.node_name else []
        node = self._get_matching(candidates, instance_id)
        if node is not None or not info.nodeclaim:
            return _Found(node)
        claim = self.kube.get_nodeclaim(info.nodeclaim)
        if claim is None or not _runs_on(claim, instance_id):
            return _Found(None)
        node_name = claim.get("status", {}).get("nodeName")
        if node_name and node_name != info.node_name:
            node = self._get_matching([node_name], instance_id)
        return _Found(node, claim)

    def _get_matching(self, names: list[str], instance_id: str) -> Mapping[str, Any] | None:
        for name in names:
            node = self.kube.get_node(name)
            # A name can be reused by a later instance: trust only a matching providerID.
            if node and instance_id_from_provider_id(nodes.provider_id(node)) == instance_id:
                return node
        return None


@dataclass(frozen=True)
class _Found:
    """A node found for an instance, and the claim read on the way (if one was)."""

    node: Mapping[str, Any] | None
    claim: Mapping[str, Any] | None = None


def _runs_on(claim: Mapping[str, Any], instance_id: str) -> bool:
    """Whether a NodeClaim's instance is ``instance_id`` (its ``status.providerID``)."""
    provider = (claim.get("status") or {}).get("providerID")
    return instance_id_from_provider_id(provider) == instance_id

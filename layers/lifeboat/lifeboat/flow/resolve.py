"""From instance ids to Kubernetes objects, without scanning the cluster.

Per batch: one DescribeInstances for every instance (``instances``), then per instance one
GET of its Node by name and one of its NodeClaim (the NodePool is the claim's, not the
Node's label), and one GET per NodePool. Only voluntary notices, which must be
weighed against the pool's budgets, list the pool's nodes and claims (by label), the node's
pods (by field selector) and the PodDisruptionBudgets of those pods' namespaces: each of
those requests is bounded by the pool or the node, never by the cluster. A pool with limits
and no ``status.resources`` has its nodes and claims listed for every kind (its usage).

Across batches, only each NodePool's opt-out verdict is kept (:class:`OptOutVerdicts`), and
only the taint at once of an involuntary notice reads it: everything else reads the pool
fresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lifeboat.errors import BrokenInvariant
from lifeboat.karpenter.counting import count_pool
from lifeboat.karpenter.forceful import forced_at
from lifeboat.karpenter.pdbs import pdb_namespaces
from lifeboat.karpenter.pool_usage import pool_usage, uncounted
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.marks import node_marks
from lifeboat.model.instances import InstanceInfo, instance_id_from_provider_id
from lifeboat.model.objects import Obj
from lifeboat.model.target import ClaimRef, PoolCounts, Target

# How long a NodePool's opt-out verdict answers the taint at once without a GET: Karpenter's
# own controllers read NodePools from an informer's cache, eventually consistent, and a
# storm's batches (seconds apart) then share one read per pool. An opt-out is honoured by
# the taint at once within this many seconds of being written (the decision, which reads
# the pool fresh, honours it at once).
OPT_OUT_TTL = 10.0


class OptOutVerdicts:
    """Whether each NodePool opted out of Lifeboat, as last read, per cluster and pool name:
    kept for the life of the pipeline (a Lambda environment), not of a batch. Used only to
    decide whether an involuntary notice's node is tainted at once (``Resolver.opted_out``);
    budgets, replacements, decisions and voluntary notices read their pool fresh.

    A verdict older than ``ttl`` seconds of ``clock`` (a monotonic clock; injected) is not
    used: the pool is read again. So is one whose age is negative (a clock gone backwards):
    a verdict is used only when it is known to be recent. An absent pool leaves no verdict
    (read again each batch, as before)."""

    def __init__(self, clock: Callable[[], float], ttl: float = OPT_OUT_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._verdicts: dict[tuple[str | None, str], tuple[bool, float]] = {}
        self._lock = threading.Lock()

    def recent(self, cluster: str | None, name: str) -> bool | None:
        """The pool's verdict if read less than ``ttl`` seconds ago, else None."""
        with self._lock:
            found = self._verdicts.get((cluster, name))
        if found is None:
            return None
        verdict, read_at = found
        age = self._clock() - read_at
        return verdict if 0.0 <= age < self._ttl else None

    def now(self) -> float:
        """The verdicts' clock: read before a GET, so a verdict's age counts the GET's time
        (and retries) too."""
        return self._clock()

    def note(
        self, cluster: str | None, name: str, nodepool: Mapping[str, Any] | None, asked: float
    ) -> None:
        """The pool as read by a GET sent at ``asked`` (``now``); None: absent, its verdict
        forgotten."""
        with self._lock:
            if nodepool is None:
                self._verdicts.pop((cluster, name), None)
            else:
                self._verdicts[(cluster, name)] = (node_marks.opted_out(nodepool), asked)


class Resolver:
    """Resolves notices against one cluster; caches what a batch shares (NodePools)."""

    def __init__(
        self,
        kube: KubeApi,
        verdicts: OptOutVerdicts | None = None,
        cluster: str | None = None,
    ) -> None:
        self.kube = kube
        self._verdicts = verdicts
        self._cluster = cluster
        self._nodepools: dict[str, Mapping[str, Any] | None] = {}
        self._lock = threading.Lock()
        self._reading: dict[str, threading.Lock] = {}  # one per NodePool being read

    def resolve(
        self, instance_id: str, info: InstanceInfo, node: Mapping[str, Any] | None = None
    ) -> Target:
        """The Target of an instance: its node, NodeClaim and NodePool (no lists). ``node``
        is the instance's Node when the caller already has it fresh (it patched it)."""
        found = _Found(node) if node is not None else self._find_node(instance_id, info)
        if found.node is None:
            return Target(instance_id, info)
        claim, claim_pool = self._claim_of(found, instance_id, info)
        node_pool = nodes.labels_of(found.node).get(nodes.NODEPOOL_LABEL)
        # The pool is the claim's: whoever may patch Nodes (or the node's own kubelet) can
        # relabel a Node, and a Node's label must never choose which budget applies or which
        # pool's template a replacement gets. The Node's label only when no claim says.
        pool_name = claim_pool or node_pool or info.nodepool
        mismatch = node_pool if claim_pool and node_pool != claim_pool else None
        nodepool = self.nodepool(pool_name) if pool_name and claim else None
        usage = None
        if nodepool is not None and uncounted(nodepool):
            # Limits with no status.resources: counted here as Karpenter's cluster state
            # counts them, for every kind (voluntary ones recount with the budgets).
            usage = pool_usage(*self._pool_members(nodepool))
        return Target(
            instance_id,
            info,
            node=found.node,
            claim=claim,
            nodepool_name=pool_name,
            nodepool=nodepool,
            usage=usage,
            node_nodepool_label=mismatch,
        )

    def _claim_of(
        self, found: _Found, instance_id: str, info: InstanceInfo
    ) -> tuple[ClaimRef | None, str | None]:
        """The NodeClaim Lifeboat may act on for this instance, and the NodePool its own
        ``karpenter.sh/nodepool`` label names (None when the claim was not read).

        The Node's ownerReference is Karpenter's own binding (set when the node registered);
        the claim it names is read, and taken only when its ``status.providerID`` names this
        very instance (the Node is writable by more than Karpenter). An EC2 tag is not a
        binding either: anyone allowed ``ec2:CreateTags`` could point
        ``karpenter.sh/nodeclaim`` at someone else's claim, so a claim named only by the tag
        is used under the same rule.
        """
        if found.node is None:
            raise BrokenInvariant("lifeboat.flow.resolve._claim_of: found.node is None")
        owner = nodes.nodeclaim_owner(found.node)
        if owner is not None:
            name, uid = owner
            claim = found.claim if _named(found.claim, name) else self.kube.get_nodeclaim(name)
            if claim is None:
                # Gone already (Karpenter finished it): still Karpenter's node; no claim
                # to read the pool from.
                return ClaimRef(name, uid), None
            if runs_on(claim, instance_id):
                ref = ClaimRef(
                    name, uid or claim["metadata"].get("uid"), terminates_by=forced_at(claim)
                )
                return ref, _pool_of(claim)
            # The ownerReference names a claim of another instance: not this node's.
        if not info.nodeclaim:
            return None, None
        claim = (
            found.claim
            if _named(found.claim, info.nodeclaim)
            else self.kube.get_nodeclaim(info.nodeclaim)
        )
        if claim is None or not runs_on(claim, instance_id):
            return None, None
        ref = ClaimRef(
            nodes.name_of(claim), claim["metadata"].get("uid"), terminates_by=forced_at(claim)
        )
        return ref, _pool_of(claim)

    def with_budget_state(self, target: Target) -> Target:
        """Add what a voluntary decision weighs: the node's pods, the PodDisruptionBudgets of
        their namespaces, and its pool's counts. Call it while holding the pool's lease, so
        the counts are still true when acted on."""
        if target.node is None:
            return target
        pods = tuple(self.kube.list_pods_on_node(nodes.name_of(target.node)))
        pdbs = tuple(pdb for ns in pdb_namespaces(pods) for pdb in self.kube.list_pdbs(ns))
        if target.nodepool is None:
            return replace(target, pods=pods, pdbs=pdbs)
        pool_nodes, claims = self._pool_members(target.nodepool)
        claim = target.claim
        if claim is not None:
            mine = next((c for c in claims if nodes.name_of(c) == claim.name), None)
            claim = replace(
                claim, deleting=claim.deleting or bool(mine and nodes.is_deleting(mine))
            )
        counts = count_pool(pool_nodes, claims)
        usage = pool_usage(pool_nodes, claims)
        return replace(target, pods=pods, pdbs=pdbs, counts=counts, claim=claim, usage=usage)

    def nodepool(self, name: str) -> Mapping[str, Any] | None:
        """One GET per NodePool per batch, however many of its nodes the batch names. The
        lanes of a batch read their pools side by side: only readers of the same pool wait
        for each other (one lock for all made a batch's taints wait on each pool's GET in
        turn, issue 36)."""
        with self._lock:
            if name in self._nodepools:
                return self._nodepools[name]
            reading = self._reading.setdefault(name, threading.Lock())
        with reading:
            if name not in self._nodepools:  # not read by the lane this one waited for
                verdicts = self._verdicts
                asked = verdicts.now() if verdicts is not None else 0.0
                nodepool = self.kube.get_nodepool(name)
                if verdicts is not None:
                    verdicts.note(self._cluster, name, nodepool, asked)
                self._nodepools[name] = nodepool
            return self._nodepools[name]

    def opted_out(self, name: str) -> bool:
        """Whether the NodePool opted out, for the taint at once only: its verdict of a read
        less than ``OPT_OUT_TTL`` seconds ago (this batch's or an earlier one's) if there is
        one, else the pool read (``nodepool``). An absent pool did not opt out."""
        if self._verdicts is not None:
            recent = self._verdicts.recent(self._cluster, name)
            if recent is not None:
                return recent
        nodepool = self.nodepool(name)
        return nodepool is not None and node_marks.opted_out(nodepool)

    def pool_counts(self, nodepool: Mapping[str, Any]) -> PoolCounts:
        """Count the pool's nodes and those already disrupting, as Karpenter counts them
        (:mod:`lifeboat.karpenter.counting`). Always read fresh: callers hold the pool's lease, and
        a
        cached count is how budgets get exceeded."""
        return count_pool(*self._pool_members(nodepool))

    def _pool_members(self, nodepool: Mapping[str, Any]) -> tuple[list[Obj], list[Obj]]:
        """The pool's Nodes and NodeClaims: two lists by the ``karpenter.sh/nodepool`` label."""
        selector = f"{nodes.NODEPOOL_LABEL}={nodes.name_of(nodepool)}"
        pool_nodes: list[Obj] = list(self.kube.list_nodes(selector))
        claims: list[Obj] = list(self.kube.list_nodeclaims(selector))
        return pool_nodes, claims

    def _find_node(self, instance_id: str, info: InstanceInfo) -> _Found:
        """GET the node by the name EC2 gave; if that misses (custom hostnames), ask the
        instance's NodeClaim for its node name. Never list all nodes."""
        candidates = [info.node_name] if info.node_name else []
        node = self._get_matching(candidates, instance_id)
        if node is not None or not info.nodeclaim:
            return _Found(node)
        claim = self.kube.get_nodeclaim(info.nodeclaim)
        if claim is None or not runs_on(claim, instance_id):
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


def _named(claim: Mapping[str, Any] | None, name: str) -> bool:
    return claim is not None and nodes.name_of(claim) == name


def _pool_of(claim: Mapping[str, Any]) -> str | None:
    """The NodePool of a NodeClaim: its ``karpenter.sh/nodepool`` label, set by Karpenter when
    it made the claim from the pool's template (``NodeClaimTemplate``)."""
    return nodes.labels_of(claim).get(nodes.NODEPOOL_LABEL) or None


def runs_on(claim: Mapping[str, Any], instance_id: str) -> bool:
    """Whether a NodeClaim's instance is ``instance_id`` (its ``status.providerID``)."""
    provider = (claim.get("status") or {}).get("providerID")
    return instance_id_from_provider_id(provider) == instance_id

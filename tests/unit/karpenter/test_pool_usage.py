"""The pool's usage as Karpenter's cluster state sums it (``Cluster.updateNodePoolResources``
and ``StateNode.Capacity``, pkg/controllers/state), and the NodePool readiness Karpenter's
provisioner requires (``Provisioner.NewScheduler``)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from lifeboat.karpenter.pool_usage import pool_usage
from lifeboat.karpenter.replacement import nodepool_not_ready, replacement_blocker

Obj = dict[str, Any]


def _node(provider: str, cpu: str, *, initialized: bool = True, deleting: bool = False) -> Obj:
    labels = {"karpenter.sh/initialized": "true"} if initialized else {}
    meta: Obj = {"name": provider[-3:], "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    return {
        "metadata": meta,
        "spec": {"providerID": provider},
        "status": {"capacity": {"cpu": cpu}},
    }


def _claim(provider: str | None, cpu: str, *, deleting: bool = False) -> Obj:
    meta: Obj = {"name": f"claim-{provider}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    status: Obj = {"capacity": {"cpu": cpu, "memory": "8Gi"}}
    if provider:
        status["providerID"] = provider
    return {"metadata": meta, "status": status}


def test_usage_sums_state_nodes_as_karpenters_cluster_state() -> None:
    """An initialized node counts its Node's capacity; a claim still launching (no Node) its
    claim's capacity; a node not initialized the Node's non-zero values, the claim's for the
    rest; a claim being deleted nothing (``MarkedForDeletion``); a Node with no claim its own
    capacity. Every state node counts one ``nodes``."""
    pool_nodes = [
        _node("aws:///a/i-1", "4"),
        _node("aws:///a/i-2", "0", initialized=False),
        _node("aws:///a/i-3", "8"),
        _node("aws:///a/i-9", "16"),  # no claim
    ]
    claims = [
        _claim("aws:///a/i-1", "2"),  # initialized: the Node's 4 wins
        _claim("aws:///a/i-2", "2"),  # not initialized, Node says 0: the claim's 2
        _claim("aws:///a/i-3", "8", deleting=True),  # marked for deletion: nothing
        _claim(None, "1"),  # launching
    ]
    usage = pool_usage(pool_nodes, claims)
    assert usage["cpu"] == Fraction(4 + 2 + 1 + 16)
    assert usage["nodes"] == 4
    assert usage["memory"] == 2 * 8 * 2**30  # claims i-2 and the launching one


def test_limits_use_the_counted_usage_over_status() -> None:
    """``Limits.ExceededBy``: only usage above a limit blocks (at the limit is fine)."""
    pool: Obj = {
        "metadata": {"name": "general"},
        "spec": {"limits": {"cpu": "10", "nodes": "3"}},
        "status": {"resources": {"cpu": "1"}},  # stale: the count wins
    }
    node = _node("aws:///a/i-1", "4")
    assert replacement_blocker(pool, node, {"cpu": Fraction(10), "nodes": Fraction(3)}) is None
    why = replacement_blocker(pool, node, {"cpu": Fraction(21, 2), "nodes": Fraction(3)})
    assert why == "NodePool general is past its limit cpu: 10.5 used of 10"
    del pool["status"]
    assert replacement_blocker(pool, node, {"cpu": Fraction(2), "nodes": Fraction(1)}) is None


def _pool(*conditions: tuple[str, str]) -> Obj:
    return {
        "metadata": {"name": "general"},
        "spec": {},
        "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]},
    }


def test_nodepool_readiness_as_the_provisioner_requires_it() -> None:
    assert nodepool_not_ready(_pool(("Ready", "True"), ("NodeClassReady", "True"))) is None
    assert nodepool_not_ready({"metadata": {"name": "general"}, "spec": {}}) is None
    assert nodepool_not_ready(_pool(("NodeClassReady", "False"), ("Ready", "False"))) == (
        "NodePool general is not Ready: NodeClassReady False"
    )
    assert nodepool_not_ready(_pool(("Ready", "Unknown"))) == (
        "NodePool general is not Ready: Unknown"
    )
    assert nodepool_not_ready(_pool(("ValidationSucceeded", "True"))) == (
        "NodePool general is not Ready: no Ready condition"
    )

"""Pure pieces that mirror Karpenter rule for rule: the pool count, the PDB candidate filter,
the NodePool hash. Each test names the Karpenter function it was checked against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from lifeboat.karpenter.counting import View, count_pool
from lifeboat.karpenter.nodepool_hash import hash_annotations, nodepool_hash
from lifeboat.karpenter.pdbs import pdb_blocker, pdb_namespaces
from lifeboat.karpenter.quantities import parse_quantity
from tests.support import cyaml

NOW = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)


# -- counting: BuildDisruptionBudgetMapping -----------------------------------------------------


def claim(name: str, *, deleting: bool = False, conditions: Sequence[str] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T17:00:00Z"
    return {
        "kind": "NodeClaim",
        "metadata": meta,
        "status": {
            "providerID": f"aws:///us-east-1a/i-{name}",
            "conditions": [{"type": c, "status": "True"} for c in conditions],
        },
    }


def node(
    name: str,
    *,
    ready: bool = True,
    initialized: bool = True,
    taints: Sequence[Mapping[str, str]] = (),
    deleting: bool = False,
) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": "general"}
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T17:00:00Z"
    return {
        "kind": "Node",
        "metadata": meta,
        "spec": {"providerID": f"aws:///us-east-1a/i-{name}", "taints": list(taints)},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_only_managed_initialized_nodes_count_and_not_ready_is_disrupting() -> None:
    """``BuildDisruptionBudgetMapping``: ``!node.Managed() || !node.Initialized()`` skipped;
    disrupting iff the Ready condition is not True or ``MarkedForDeletion``."""
    counts = count_pool(
        [
            node("a"),
            node("b", ready=False),
            node("c", initialized=False, ready=False),  # a replacement still booting
            node("d"),  # no NodeClaim with its provider ID: not managed
        ],
        [claim("a"), claim("b"), claim("c")],
    )
    assert (counts.node_count, counts.disrupting) == (2, 1)
    assert counts.disrupting_nodes == (("b", "node not Ready"),)


def test_deleting_and_terminating_claims_as_karpenter_counts_them() -> None:
    """A deleting claim is disrupting (``MarkedForDeletion`` via ``Deleted()``); one with
    ``InstanceTerminating`` no longer counts at all; a deleting claim whose Node is gone is no
    state node with a Node, so it holds no slot."""
    counts = count_pool(
        [node("a"), node("b"), node("c")],
        [
            claim("a", deleting=True),
            claim("b", conditions=["InstanceTerminating"]),
            claim("c"),
            claim("gone", deleting=True),
        ],
    )
    assert (counts.node_count, counts.disrupting) == (2, 1)
    assert counts.disrupting_nodes == (("a", "NodeClaim a deleting"),)


def test_karpenters_in_flight_commands_count_for_lifeboat_not_in_karpenters_own_math() -> None:
    """Karpenter counts its own commands in memory (``MarkForDeletion``); Lifeboat sees them
    by the karpenter.sh/disrupted taint and the DisruptionReason condition (markDisrupted).
    Lifeboat's own NoSchedule taint is invisible to Karpenter."""
    nodes_ = [
        node("tainted", taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]),
        node("reason"),
        node(
            "ours",
            taints=[{"key": "lifeboat.dev/rebalance-recommendation", "effect": "NoSchedule"}],
        ),
        node(
            "waiting",
            taints=[{"key": "lifeboat.dev/rebalance-recommendation", "effect": "PreferNoSchedule"}],
        ),
        node("marked"),
    ]
    claims = [
        claim("tainted"),
        claim("reason", conditions=["DisruptionReason"]),
        claim("ours"),
        claim("waiting"),
        claim("marked"),
    ]
    lifeboat = count_pool(nodes_, claims)
    assert [n for n, _ in lifeboat.disrupting_nodes] == ["ours", "reason", "tainted"]
    karpenter = count_pool(nodes_, claims, view=View.KARPENTER, marked={"marked"})
    assert [n for n, _ in karpenter.disrupting_nodes] == ["marked"]
    assert lifeboat.node_count == karpenter.node_count == 5


# -- PDBs: pdb.Limits.CanEvictPods ------------------------------------------------------------


def pod(name: str, labels: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop", "labels": dict(labels)}
    meta.update(extra.pop("meta", {}))
    pod_: dict[str, Any] = {
        "metadata": meta,
        "spec": {"nodeName": "n"},
        "status": {"phase": "Running"},
    }
    for key, value in extra.items():
        pod_[key] = value
    return pod_


def pdb(name: str, app: str, allowed: int | None, **spec: Any) -> dict[str, Any]:
    status = {} if allowed is None else {"disruptionsAllowed": allowed}
    return {
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
        "status": status,
    }


def test_a_pdb_allowing_no_disruption_blocks_the_node() -> None:
    why = pdb_blocker([pod("web-1", {"app": "web"})], [pdb("web", "web", 0)], NOW)
    assert why == "PDB shop/web allows no disruption now (pod shop/web-1)"
    assert pdb_blocker([pod("web-1", {"app": "web"})], [pdb("web", "web", 1)], NOW) is None


def test_a_pdb_without_status_blocks_as_karpenter_reads_zero() -> None:
    assert pdb_blocker([pod("web-1", {"app": "web"})], [pdb("web", "web", None)], NOW)


def test_two_pdbs_on_one_pod_block_as_the_eviction_api_refuses_them() -> None:
    why = pdb_blocker([pod("web-1", {"app": "web"})], [pdb("a", "web", 3), pdb("b", "web", 3)], NOW)
    assert why is not None and "does not support multiple PDBs" in why


def test_only_evictable_pods_are_checked() -> None:
    """``IsEvictable``: not terminal, not terminating, not a mirror pod, not tolerating the
    disrupted taint, no active do-not-disrupt; and AlwaysAllow lets an unready pod go."""
    budget = [pdb("web", "web", 0)]
    exempt = [
        pod("done", {"app": "web"}, status={"phase": "Succeeded"}),
        pod("going", {"app": "web"}, meta={"deletionTimestamp": "2026-12-01T17:59:00Z"}),
        pod(
            "mirror",
            {"app": "web"},
            meta={"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n"}]},
        ),
        pod(
            "tolerant",
            {"app": "web"},
            spec={"nodeName": "n", "tolerations": [{"operator": "Exists"}]},
        ),
        pod("kept", {"app": "web"}, meta={"annotations": {"karpenter.sh/do-not-disrupt": "true"}}),
    ]
    assert pdb_blocker(exempt, budget, NOW) is None
    unready = pod(
        "sick",
        {"app": "web"},
        status={"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
    )
    assert (
        pdb_blocker(
            [unready], [pdb("web", "web", 0, unhealthyPodEvictionPolicy="AlwaysAllow")], NOW
        )
        is None
    )
    assert pdb_blocker([unready], budget, NOW) is not None


def test_pdbs_are_read_only_in_the_namespaces_of_pods_a_drain_evicts() -> None:
    pods = [
        pod("web-1", {"app": "web"}),
        {
            **pod("done", {}),
            "metadata": {"name": "done", "namespace": "batch"},
            "status": {"phase": "Failed"},
        },
        {**pod("dns", {}), "metadata": {"name": "dns", "namespace": "kube-system"}},
    ]
    assert pdb_namespaces(pods) == ["kube-system", "shop"]


# -- the NodePool hash: NodePool.Hash() ---------------------------------------------------------


EKS_GENERAL_PURPOSE = {
    "metadata": {"name": "general-purpose"},
    "spec": {
        "template": {
            "metadata": {},
            "spec": {
                "expireAfter": "336h",
                "nodeClassRef": {
                    "group": "eks.amazonaws.com",
                    "kind": "NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
                ],
                "terminationGracePeriod": "24h0m0s",
            },
        }
    },
}


def test_hash_reproduces_a_live_annotation() -> None:
    """EKS Auto Mode's built-in NodePool "general-purpose" carries the annotation
    karpenter.sh/nodepool-hash: "4012513481623584108" (hashstructure v2, FormatV2,
    SlicesAsSets, IgnoreZeroValue, ZeroNil, over spec.template)."""
    assert nodepool_hash(EKS_GENERAL_PURPOSE) == "4012513481623584108"


def test_hash_depends_on_what_karpenter_hashes_only() -> None:
    base = nodepool_hash(EKS_GENERAL_PURPOSE)
    changed = cyaml.safe_load(cyaml.safe_dump(EKS_GENERAL_PURPOSE))
    changed["spec"]["template"]["spec"]["requirements"] = []  # hash:"ignore"
    changed["spec"]["disruption"] = {"budgets": [{"nodes": "1"}]}  # not in the template
    assert nodepool_hash(changed) == base
    changed["spec"]["template"]["spec"]["terminationGracePeriod"] = "24h"  # same duration
    assert nodepool_hash(changed) == base
    changed["spec"]["template"]["metadata"]["labels"] = {}  # {} is not nil: hashed
    assert nodepool_hash(changed) != base
    never = cyaml.safe_load(cyaml.safe_dump(EKS_GENERAL_PURPOSE))
    never["spec"]["template"]["spec"]["expireAfter"] = "Never"  # a nil duration: skipped
    assert nodepool_hash(never) != base
    # Left out, expireAfter is what the API server stores by the CRD default: 720h.
    absent = cyaml.safe_load(cyaml.safe_dump(EKS_GENERAL_PURPOSE))
    del absent["spec"]["template"]["spec"]["expireAfter"]
    explicit = cyaml.safe_load(cyaml.safe_dump(absent))
    explicit["spec"]["template"]["spec"]["expireAfter"] = "720h"
    assert nodepool_hash(absent) == nodepool_hash(explicit) != base


def test_sample_cluster_pools_carry_the_hash_karpenter_would_write() -> None:
    """events/cluster.yaml is live-shaped: each NodePool's annotation equals NodePool.Hash()
    of its template, and hash_annotations gives a claim exactly that pair."""
    from pathlib import Path

    cluster = Path(__file__).resolve().parents[3] / "events" / "cluster.yaml"
    pools = [o for o in cyaml.safe_load(cluster.read_text())["items"] if o["kind"] == "NodePool"]
    assert len(pools) == 3  # general, batch, gpu
    for pool in pools:
        annotations = pool["metadata"]["annotations"]
        assert hash_annotations(pool) == {
            "karpenter.sh/nodepool-hash": annotations["karpenter.sh/nodepool-hash"],
            "karpenter.sh/nodepool-hash-version": "v3",
        }


# -- quantities ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3920m", "3.92"),
        ("15896988Ki", str(15896988 * 1024)),
        ("8Gi", str(8 * 2**30)),
        ("1e3", "1000"),
        ("16G", str(16 * 10**9)),
        ("12", "12"),
        ("0.5", "0.5"),
    ],
)
def test_quantities_parse_exactly(text: str, value: str) -> None:
    from fractions import Fraction

    assert parse_quantity(text) == Fraction(value)


def test_a_quantity_that_is_not_one_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity("12 cores")

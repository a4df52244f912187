"""``replacement_nodeclaim()``: what Karpenter itself would put on a claim for the pool."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from lifeboat.replacement import replacement_name, replacement_nodeclaim
from tests.support import kube

INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def nodepool(requirements: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    return kube.nodepool(
        uid="pool-uid-1",
        annotations={"unrelated.example.com/note": "not copied"},
        template_labels={"team": "platform"},
        template_annotations={"example.com/owner": "platform"},
        # capacity-type spot or on-demand, instance-category c, m or r
        requirements=kube.REQUIREMENTS[:2] if requirements is None else requirements,
        taints=[{"key": "workload", "value": "web", "effect": "NoSchedule"}],
        startup_taints=[{"key": "cilium.io/agent-not-ready", "effect": "NoExecute"}],
        expire_after="720h",
        termination_grace_period="48h",
    )


def node(
    capacity_type: str = "spot",
    instance_type: str = "m5.large",
    allocatable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return kube.node(
        capacity_type=capacity_type,
        instance_type=instance_type,
        allocatable={"cpu": "1930m", "memory": "7220Mi"} if allocatable is None else allocatable,
    )


def build(pool: Mapping[str, Any] | None = None, the_node: Mapping[str, Any] | None = None) -> Any:
    return replacement_nodeclaim(
        pool if pool is not None else nodepool(),
        the_node if the_node is not None else node(),
        "general-7xkqz",
        "evt-1#i-0a1b2c3d4e5f60001",
    )


def type_requirements(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in claim["spec"]["requirements"] if r["key"] == INSTANCE_TYPE]


def test_copies_the_template() -> None:
    pool = nodepool()
    template = pool["spec"]["template"]["spec"]
    claim = build(pool, node(capacity_type="on-demand"))
    assert claim["apiVersion"] == "karpenter.sh/v1"
    assert claim["kind"] == "NodeClaim"
    spec = claim["spec"]
    assert spec["nodeClassRef"] == template["nodeClassRef"]
    assert spec["requirements"] == template["requirements"]
    assert spec["taints"] == template["taints"]
    assert spec["startupTaints"] == template["startupTaints"]
    assert spec["expireAfter"] == "720h"
    assert spec["terminationGracePeriod"] == "48h"
    # Copies, not aliases: changing the claim leaves the cached NodePool untouched.
    spec["requirements"][0]["values"].append("reserved")
    spec["nodeClassRef"]["name"] = "other"
    assert template["requirements"][0]["values"] == ["spot", "on-demand"]
    assert template["nodeClassRef"]["name"] == "default"


def test_metadata_name_labels_annotations_owner() -> None:
    meta = build()["metadata"]
    # Named after the claim it replaces (issue 10.1: one old claim, one replacement).
    assert meta["name"] == replacement_name("general", "general-7xkqz")
    assert "generateName" not in meta
    assert meta["labels"] == {
        "team": "platform",
        "karpenter.sh/nodepool": "general",
        "lifeboat.dev/replaces": "general-7xkqz",
    }
    assert meta["annotations"]["example.com/owner"] == "platform"
    assert meta["annotations"]["karpenter.sh/nodepool-hash"] == "6821555240594823858"
    assert meta["annotations"]["karpenter.sh/nodepool-hash-version"] == "v3"
    assert meta["annotations"]["lifeboat.dev/notice"] == "evt-1#i-0a1b2c3d4e5f60001"
    assert "unrelated.example.com/note" not in meta["annotations"]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "name": "general",
            "uid": "pool-uid-1",
            "blockOwnerDeletion": True,
        }
    ]


def test_optional_template_fields_absent_stay_absent() -> None:
    pool = nodepool()
    for field in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        del pool["spec"]["template"]["spec"][field]
    spec = build(pool)["spec"]
    for field in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        assert field not in spec


def test_spot_instance_type_is_excluded_with_notin_when_the_pool_does_not_name_types() -> None:
    claim = build()
    assert type_requirements(claim) == [
        {"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["m5.large"]}
    ]


def test_spot_instance_type_is_filtered_from_an_in_list() -> None:
    pool = nodepool(
        [{"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m5a.large", "m6i.large"]}]
    )
    claim = build(pool)
    assert type_requirements(claim) == [
        {"key": INSTANCE_TYPE, "operator": "In", "values": ["m5a.large", "m6i.large"]}
    ]
    # The pool's own requirement is not changed.
    assert pool["spec"]["template"]["spec"]["requirements"][0]["values"] == [
        "m5.large",
        "m5a.large",
        "m6i.large",
    ]


def test_spot_instance_type_is_appended_to_a_notin_list() -> None:
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["t3.micro"]}])
    assert type_requirements(build(pool)) == [
        {"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["t3.micro", "m5.large"]}
    ]


def test_spot_instance_type_already_in_notin_is_not_repeated() -> None:
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["m5.large"]}])
    assert type_requirements(build(pool)) == [
        {"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["m5.large"]}
    ]


def test_single_type_pool_keeps_its_type() -> None:
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}])
    assert type_requirements(build(pool)) == [
        {"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}
    ]


def test_on_demand_requirements_are_untouched() -> None:
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m6i.large"]}])
    claim = build(pool, node(capacity_type="on-demand"))
    assert claim["spec"]["requirements"] == pool["spec"]["template"]["spec"]["requirements"]


@pytest.mark.parametrize(
    ("allocatable", "expected"),
    [
        ({"cpu": "1930m", "memory": "7220Mi"}, {"cpu": "1737m", "memory": "6498Mi"}),
        ({"cpu": "2", "memory": "8Gi"}, {"cpu": "1800m", "memory": "7372Mi"}),
        ({"cpu": "3.5", "memory": "15728640Ki"}, {"cpu": "3150m", "memory": "13824Mi"}),
        ({"cpu": "4", "memory": "16G"}, {"cpu": "3600m", "memory": "13732Mi"}),
        ({"cpu": "4"}, {"cpu": "3600m"}),
    ],
)
def test_requests_are_ninety_percent_of_allocatable(
    allocatable: Mapping[str, str], expected: Mapping[str, str]
) -> None:
    claim = build(the_node=node(allocatable=allocatable))
    assert claim["spec"]["resources"] == {"requests": expected}


def test_no_allocatable_means_no_requests() -> None:
    assert "resources" not in build(the_node=node(allocatable={}))["spec"]


def test_replacement_name_derives_from_the_old_claim_only() -> None:
    """The same old claim always gives the same name, so a second create (another notice,
    a redelivery, a concurrent invocation) is 409 AlreadyExists; another claim, another name.
    Shaped like Karpenter's ``<nodepool>-<suffix>`` and a valid DNS-1123 subdomain."""
    first = replacement_name("general", "general-7xkqz")
    assert first == replacement_name("general", "general-7xkqz")
    assert first != replacement_name("general", "general-8abcd")
    assert re.fullmatch(r"general-[0-9a-f]{10}", first)

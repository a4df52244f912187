"""``replacement_nodeclaim()``: the claim Karpenter's provisioner would build for the pool.

Checked against Karpenter v1 (kubernetes-sigs/karpenter): ``NewNodeClaimTemplate`` and
``NodeClaimTemplate.ToNodeClaim`` (pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go),
``Requirement.Intersection`` and ``Any`` (pkg/scheduling/requirement.go), ``NodePool.Hash``,
the drift controller's ``areRequirementsDrifted`` (pkg/controllers/nodeclaim/disruption/drift.go)
and the NodeClaim CRD's validation rules (pkg/apis/crds/karpenter.sh_nodeclaims.yaml).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from lifeboat.karpenter.nodepool_hash import nodepool_hash
from lifeboat.karpenter.replacement import (
    replacement_blocker,
    replacement_name,
    replacement_nodeclaim,
)
from lifeboat.karpenter.requirements import WELL_KNOWN_LABELS, Requirement

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = {
    "key": "karpenter.sh/capacity-type",
    "operator": "In",
    "values": ["spot", "on-demand"],
}
CATEGORY = {
    "key": "karpenter.k8s.aws/instance-category",
    "operator": "In",
    "values": ["c", "m", "r"],
}


def nodepool(
    requirements: Sequence[Mapping[str, Any]] | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": [
            dict(r)
            for r in (requirements if requirements is not None else [CAPACITY_TYPE, CATEGORY])
        ],
        "taints": [{"key": "workload", "value": "web", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "cilium.io/agent-not-ready", "effect": "NoExecute"}],
        "expireAfter": "720h",
        "terminationGracePeriod": "48h",
    }
    pool: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {
            "name": "general",
            "uid": "pool-uid-1",
            "annotations": dict(
                annotations
                if annotations is not None
                else {"karpenter.sh/nodepool-hash": "1", "karpenter.sh/nodepool-hash-version": "v3"}
            ),
        },
        "spec": {
            "template": {
                "metadata": {
                    "labels": dict(labels if labels is not None else {"team": "platform"}),
                    "annotations": {"example.com/owner": "platform"},
                },
                "spec": template_spec,
            },
            **dict(spec or {}),
        },
    }
    return pool


def node(
    capacity_type: str = "spot",
    instance_type: str = "m5.large",
    allocatable: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "ip-10-0-1-11.ec2.internal",
            "labels": {
                "karpenter.sh/capacity-type": capacity_type,
                INSTANCE_TYPE: instance_type,
                "karpenter.sh/nodepool": "general",
                "kubernetes.io/arch": "amd64",
                "karpenter.k8s.aws/instance-category": "m",
                **dict(labels or {}),
            },
        },
        "spec": {"providerID": "aws:///us-east-1a/i-0a1b2c3d4e5f60001"},
        "status": {
            "allocatable": dict(
                allocatable if allocatable is not None else {"cpu": "1930m", "memory": "7220Mi"}
            )
        },
    }


def build(pool: Mapping[str, Any] | None = None, the_node: Mapping[str, Any] | None = None) -> Any:
    built = replacement_nodeclaim(
        pool if pool is not None else nodepool(),
        the_node if the_node is not None else node(),
        "general-7xkqz",
        "evt-1#i-0a1b2c3d4e5f60001",
    )
    assert built.claim is not None, built.note
    return built.claim


def requirement(claim: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [r for r in claim["spec"]["requirements"] if r["key"] == key]


def requirements_drifted(pool: Mapping[str, Any], claim_labels: Mapping[str, str]) -> list[str]:
    """``areRequirementsDrifted``: ``NewLabelRequirements(claim.Labels).Compatible(pool
    requirements)`` without AllowUndefined: every pool requirement with In, Exists, Gt, Lt,
    Gte or Lte needs the label, and a label present must satisfy the requirement."""
    drifted = []
    for raw in pool["spec"]["template"]["spec"]["requirements"]:
        parsed = Requirement.parse(raw)
        value = claim_labels.get(parsed.key)
        if value is None:
            if raw["operator"] not in ("NotIn", "DoesNotExist"):
                drifted.append(parsed.key)
        elif not parsed.allows(value):
            drifted.append(parsed.key)
    return drifted


def launched(claim: Mapping[str, Any], the_node: Mapping[str, Any]) -> dict[str, str]:
    """The claim's labels after launch (``PopulateNodeClaimDetails``): the well-known labels
    come from the instance, the claim's own labels win."""
    instance = {k: v for k, v in the_node["metadata"]["labels"].items() if k in WELL_KNOWN_LABELS}
    return {**instance, **claim["metadata"]["labels"]}


# -- metadata -------------------------------------------------------------------------------


def test_labels_are_the_ones_karpenter_puts_on_a_claim_at_creation() -> None:
    """``NewNodeClaimTemplate``: template labels, ``karpenter.sh/nodepool`` and
    ``NodeClassLabelKey(group/kind)``; no well-known label (those come from the instance)."""
    labels = build()["metadata"]["labels"]
    assert labels == {
        "team": "platform",
        "karpenter.sh/nodepool": "general",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "lifeboat.dev/replaces": "general-7xkqz",
    }


def test_annotations_owner_and_no_finalizer_or_status() -> None:
    pool = nodepool()
    claim = build(pool)
    meta = claim["metadata"]
    # Named after the claim it replaces (issue 10.1: one old claim, one replacement).
    assert meta["name"] == replacement_name("general", "general-7xkqz")
    assert meta["annotations"] == {
        "example.com/owner": "platform",
        "karpenter.sh/nodepool-hash": nodepool_hash(pool),
        "karpenter.sh/nodepool-hash-version": "v3",
        "karpenter.sh/nodeclaim-min-values-relaxed": "false",
        "lifeboat.dev/notice": "evt-1#i-0a1b2c3d4e5f60001",
    }
    # ToNodeClaim: BlockOwnerDeletion, no Controller.
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "name": "general",
            "uid": "pool-uid-1",
            "blockOwnerDeletion": True,
        }
    ]
    # The lifecycle controller adds karpenter.sh/termination; a claim Karpenter does not
    # manage must not be stuck on a finalizer nobody removes.
    assert "finalizers" not in meta
    assert "status" not in claim


def test_hash_is_computed_from_the_template_as_karpenter_computes_it() -> None:
    """``NewNodeClaimTemplate`` stamps ``nodePool.Hash()``, not the pool's annotation (which
    may lag an edit): a stale annotation on the pool does not end up on the claim."""
    stale = nodepool(
        annotations={
            "karpenter.sh/nodepool-hash": "123",
            "karpenter.sh/nodepool-hash-version": "v3",
        }
    )
    annotations = build(stale)["metadata"]["annotations"]
    assert annotations["karpenter.sh/nodepool-hash"] == nodepool_hash(stale) != "123"


def test_hash_of_another_version_or_unsupported_template_is_copied_from_the_pool() -> None:
    later = nodepool(
        annotations={"karpenter.sh/nodepool-hash": "99", "karpenter.sh/nodepool-hash-version": "v4"}
    )
    assert build(later)["metadata"]["annotations"]["karpenter.sh/nodepool-hash"] == "99"
    timed = nodepool()
    timed["spec"]["template"]["spec"]["taints"][0]["timeAdded"] = "2026-01-01T00:00:00Z"
    annotations = build(timed)["metadata"]["annotations"]
    assert annotations["karpenter.sh/nodepool-hash"] == "1"  # the pool's own


# -- requirements -----------------------------------------------------------------------------


def test_requirements_gain_the_labels_as_in_requirements() -> None:
    """``nct.Requirements.Add(NewLabelRequirements(nct.Labels))``: every label of the claim is
    also an ``In`` requirement (the lifeboat.dev/replaces label is Lifeboat's, added after)."""
    claim = build()
    keys = {r["key"]: r for r in claim["spec"]["requirements"]}
    assert keys["karpenter.sh/nodepool"] == {
        "key": "karpenter.sh/nodepool",
        "operator": "In",
        "values": ["general"],
    }
    assert keys["karpenter.k8s.aws/ec2nodeclass"]["values"] == ["default"]
    assert keys["team"]["values"] == ["platform"]
    assert "lifeboat.dev/replaces" not in keys
    assert keys["karpenter.sh/capacity-type"]["values"] == ["on-demand", "spot"]  # sorted


def test_template_label_narrows_a_requirement_on_the_same_key() -> None:
    pool = nodepool(
        [{"key": "team", "operator": "In", "values": ["data", "platform"]}],
        labels={"team": "platform"},
    )
    assert requirement(build(pool), "team") == [
        {"key": "team", "operator": "In", "values": ["platform"]}
    ]


def test_beta_keys_are_normalised_and_bounds_kept() -> None:
    pool = nodepool(
        [
            {"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
            {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["65"]},
        ]
    )
    claim = build(pool)
    assert requirement(claim, "kubernetes.io/arch") == [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
    ]
    assert not requirement(claim, "beta.kubernetes.io/arch")
    assert requirement(claim, "karpenter.k8s.aws/instance-generation") == [
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]}
    ]
    assert requirement(claim, "karpenter.k8s.aws/instance-cpu")[0]["values"] == ["65"]


def test_the_issues_min_values_pool_keeps_both_types_instead_of_breaking_the_crd() -> None:
    """Issue 11.1: ``In [m5.large, m5a.large] minValues: 2`` on a Spot m5.large. Dropping
    m5.large leaves one value, which the CRD rule "requirements with 'minValues' must have at
    least that many values" rejects (422); the exclusion is skipped and the claim says why."""
    pool = nodepool(
        [
            {
                "key": INSTANCE_TYPE,
                "operator": "In",
                "values": ["m5.large", "m5a.large"],
                "minValues": 2,
            }
        ]
    )
    built = replacement_nodeclaim(pool, node(), "general-7xkqz", "evt")
    assert built.claim is not None
    assert requirement(built.claim, INSTANCE_TYPE) == [
        {
            "key": INSTANCE_TYPE,
            "operator": "In",
            "values": ["m5.large", "m5a.large"],
            "minValues": 2,
        }
    ]
    assert "fewer than minValues 2" in built.note


def test_exclusion_applies_when_min_values_still_hold() -> None:
    pool = nodepool(
        [
            {
                "key": INSTANCE_TYPE,
                "operator": "In",
                "values": ["m5.large", "m5a.large", "m6i.large"],
                "minValues": 2,
            }
        ]
    )
    assert requirement(build(pool), INSTANCE_TYPE) == [
        {
            "key": INSTANCE_TYPE,
            "operator": "In",
            "values": ["m5a.large", "m6i.large"],
            "minValues": 2,
        }
    ]


def test_spot_instance_type_is_excluded_with_notin_when_the_pool_does_not_name_types() -> None:
    assert requirement(build(), INSTANCE_TYPE) == [
        {"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["m5.large"]}
    ]


def test_spot_instance_type_is_added_to_a_notin_list_once() -> None:
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["t3.micro"]}])
    assert requirement(build(pool), INSTANCE_TYPE)[0]["values"] == ["m5.large", "t3.micro"]
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "NotIn", "values": ["m5.large"]}])
    assert requirement(build(pool), INSTANCE_TYPE)[0]["values"] == ["m5.large"]


def test_single_type_pool_keeps_its_type() -> None:
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]}])
    assert requirement(build(pool), INSTANCE_TYPE)[0]["values"] == ["m5.large"]


def test_on_demand_node_excludes_nothing() -> None:
    pool = nodepool([{"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m6i.large"]}])
    claim = build(pool, node(capacity_type="on-demand"))
    assert requirement(claim, INSTANCE_TYPE)[0]["values"] == ["m5.large", "m6i.large"]


def test_never_more_than_the_crds_100_requirements() -> None:
    """The CRD's ``maxItems: 100``: a pool with 99 requirements and three template labels
    would give 103 (labels become requirements); the label-derived ones go first (the labels
    themselves stay), the pool's own are all kept."""
    own = [{"key": f"example.com/k{i}", "operator": "Exists"} for i in range(99)]
    pool = nodepool(own, labels={"team": "platform", "tier": "web", "zone-class": "a"})
    built = replacement_nodeclaim(pool, node(capacity_type="on-demand"), "general-7xkqz", "evt")
    assert built.claim is not None
    spec_keys = [r["key"] for r in built.claim["spec"]["requirements"]]
    assert len(spec_keys) == 100
    assert {r["key"] for r in own} <= set(spec_keys)
    assert built.claim["metadata"]["labels"]["tier"] == "web"
    assert "left out to stay within 100" in built.note


def test_a_malformed_bound_yields_no_claim_instead_of_an_exception() -> None:
    """A replacement never holds up the notice: a template Karpenter could not use either
    (a Gt without an integer) gives no claim and says why, it does not raise."""
    pool = nodepool([{"key": "example.com/gen", "operator": "Gt", "values": ["four"]}])
    built = replacement_nodeclaim(pool, node(), "general-7xkqz", "evt")
    assert built.claim is None
    assert "needs one integer value" in built.note


def test_a_template_that_no_value_satisfies_yields_no_claim() -> None:
    pool = nodepool(
        [{"key": "team", "operator": "In", "values": ["data"]}], labels={"team": "platform"}
    )
    built = replacement_nodeclaim(pool, node(), "general-7xkqz", "evt")
    assert built.claim is None
    assert "team" in built.note


# -- labels from requirements (no drift at once) -------------------------------------------


def test_custom_requirement_keys_get_labels_so_the_claim_is_not_requirements_drifted() -> None:
    """Issue 11.2: without labels for custom keys Karpenter's drift controller marks the claim
    RequirementsDrifted and replaces it again. ``resolveCustomLabelsFromRequirements`` sets one
    for every key that is not well known; the value follows ``Requirement.Any``."""
    pool = nodepool(
        [
            CAPACITY_TYPE,
            CATEGORY,
            {"key": "example.com/team", "operator": "In", "values": ["web"]},
            {"key": "tier", "operator": "In", "values": ["gold", "silver"]},
            {"key": "example.com/slot", "operator": "Exists"},
            {"key": "example.com/gen", "operator": "Gt", "values": ["4"]},
            {"key": "example.com/not-zero", "operator": "NotIn", "values": ["0"]},
            {"key": "example.com/never", "operator": "DoesNotExist"},
        ]
    )
    old = node(labels={"tier": "silver", "example.com/slot": "7"})
    claim = build(pool, old)
    labels = claim["metadata"]["labels"]
    assert labels["example.com/team"] == "web"
    assert labels["tier"] == "silver"  # the old node's value: its pods may select it
    assert labels["example.com/slot"] == "7"
    assert labels["example.com/gen"] == "5"
    assert labels["example.com/not-zero"] == "1"
    assert "example.com/never" not in labels
    for key in WELL_KNOWN_LABELS:
        assert key == "karpenter.sh/nodepool" or key not in labels
    assert requirements_drifted(pool, launched(claim, old)) == []


def test_without_the_custom_labels_the_same_claim_would_be_drifted() -> None:
    """The test above would catch the bug: drop the custom labels and the check fails."""
    pool = nodepool(
        [CAPACITY_TYPE, {"key": "example.com/team", "operator": "In", "values": ["web"]}]
    )
    claim = build(pool)
    labels = {k: v for k, v in launched(claim, node()).items() if k != "example.com/team"}
    assert requirements_drifted(pool, labels) == ["example.com/team"]


def test_multi_valued_custom_key_without_an_old_value_picks_the_smallest() -> None:
    pool = nodepool([{"key": "tier", "operator": "In", "values": ["silver", "gold"]}])
    assert build(pool)["metadata"]["labels"]["tier"] == "gold"


# -- spec fields ------------------------------------------------------------------------------


def test_spec_copies_the_template_as_karpenter_serialises_it() -> None:
    pool = nodepool()
    template = pool["spec"]["template"]["spec"]
    spec = build(pool, node(capacity_type="on-demand"))["spec"]
    assert spec["nodeClassRef"] == template["nodeClassRef"]
    assert spec["taints"] == template["taints"]
    assert spec["startupTaints"] == template["startupTaints"]
    assert spec["expireAfter"] == "720h"  # NillableDuration keeps its raw form
    assert spec["terminationGracePeriod"] == "48h0m0s"  # metav1.Duration: Go's String()
    # Copies, not aliases: changing the claim leaves the cached NodePool untouched.
    spec["nodeClassRef"]["name"] = "other"
    assert template["nodeClassRef"]["name"] == "default"


def test_optional_template_fields_absent_stay_absent() -> None:
    pool = nodepool()
    for field in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        del pool["spec"]["template"]["spec"][field]
    spec = build(pool)["spec"]
    for field in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        assert field not in spec


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
    assert re.fullmatch(r"general-[0-9a-f]{20}", first)
    # From the old claim's uid when it is known (issue 23.5): 80 bits of the API server's
    # random uid, not 40 of a name anyone can choose.
    by_uid = replacement_name("general", "general-7xkqz", "8f5e2c1a-0000-4000-8000-000000000002")
    assert by_uid != first
    assert by_uid == replacement_name(
        "general", "other-name", "8f5e2c1a-0000-4000-8000-000000000002"
    )


# -- when Karpenter would not want a replacement (issue 11.2) ---------------------------------


def test_static_nodepool_gets_no_replacement() -> None:
    """Static NodePools (``spec.replicas``): static provisioning keeps the count itself, and
    static deprovisioning deletes an extra claim, unlaunched ones first."""
    why = replacement_blocker(nodepool(spec={"replicas": 3}), node())
    assert why is not None and "static" in why


def test_nodepool_being_deleted_gets_no_replacement() -> None:
    pool = nodepool()
    pool["metadata"]["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    assert replacement_blocker(pool, node()) is not None


@pytest.mark.parametrize(
    ("limits", "usage", "blocked"),
    [
        ({"cpu": "1000"}, {"cpu": "12", "memory": "48Gi", "nodes": "6"}, False),
        ({"cpu": "12"}, {"cpu": "12", "memory": "48Gi", "nodes": "6"}, False),  # at the limit
        ({"cpu": "10"}, {"cpu": "12", "memory": "48Gi", "nodes": "6"}, True),  # lowered below
        ({"nodes": "6"}, {"cpu": "12", "nodes": "6"}, False),
        ({"nodes": "5"}, {"cpu": "12", "nodes": "6"}, True),
        ({"memory": "40Gi"}, {"cpu": "12", "memory": "48Gi"}, True),
        ({"nvidia.com/gpu": "4"}, {"cpu": "12"}, False),  # nothing counted: 0 used
    ],
)
def test_limits_are_respected_as_karpenters_scheduler_respects_them(
    limits: Mapping[str, str], usage: Mapping[str, str], blocked: bool
) -> None:
    """``filterByRemainingResources``: an instance type fits if its capacity is within
    ``limits - usage of the other nodes``. A like-for-like replacement for a node that leaves
    fits exactly while the pool's usage (``status.resources``, the nodepool counter's) is
    within every limit."""
    pool = nodepool(spec={"limits": dict(limits)})
    pool["status"] = {"resources": dict(usage)}
    assert (replacement_blocker(pool, node()) is not None) is blocked


def test_limits_without_usage_counted_yet_get_no_replacement() -> None:
    pool = nodepool(spec={"limits": {"cpu": "100"}})
    why = replacement_blocker(pool, node())
    assert why is not None and "not counted" in why
    assert replacement_blocker(nodepool(), node()) is None  # no limits, nothing to count

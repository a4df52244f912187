"""The shared builders make what a live cluster holds, so tests built on them mean the same
thing against a real API server: the sample cluster's first Karpenter node comes out field
for field where the two should agree, a NodeClaim and its Node are linked the way Karpenter
links them, and the API server treats them as it would Karpenter's (the termination
finalizer holds a deleted NodeClaim until Karpenter lets it go)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.resolve import Resolver
from lifeboat.karpenter.nodepool_hash import nodepool_hash
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat_local.directory import directory_from_objects
from tests.support import kube
from tests.support.paths import SAMPLE_CLUSTER


def _sample(kind: str, name: str) -> dict[str, Any]:
    return next(
        o
        for o in load_cluster_file(SAMPLE_CLUSTER)
        if o["kind"] == kind and nodes.name_of(o) == name
    )


# Where a live cluster and the hand-written sample differ, the builders follow Karpenter:
# the node class label is set on every claim at creation (nodeclaimtemplate.go), and the
# registered/initialized labels are the Node's (registration.go, initialization.go).
LIFECYCLE_LABELS = {"karpenter.sh/registered", "karpenter.sh/initialized"}
NODE_CLASS_LABEL = {"karpenter.k8s.aws/ec2nodeclass": "default"}
# What Karpenter itself puts on a claim (nodeclaimtemplate.go, the launch) and on its Node
# (registration.go, initialization.go), and the drift hashes (nodepool/hash controller).
_CLAIM_LABELS = {
    "karpenter.sh/nodepool",
    "karpenter.k8s.aws/ec2nodeclass",
    "karpenter.sh/capacity-type",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
}
KARPENTER_SET = {"NodeClaim": _CLAIM_LABELS, "Node": _CLAIM_LABELS | LIFECYCLE_LABELS}


@pytest.mark.parametrize(
    ("built", "kind", "name"),
    [
        (kube.nodeclaim(labels={"team": "platform"}), "NodeClaim", kube.NODECLAIM),
        (kube.node(labels={"team": "platform"}), "Node", kube.NODE),
    ],
)
def test_the_defaults_are_the_sample_clusters_first_karpenter_node(
    built: dict[str, Any], kind: str, name: str
) -> None:
    """events/cluster.yaml: the shape of a ``kubectl get -o yaml`` of a live cluster."""
    sample = _sample(kind, name)
    expected = dict(sample["metadata"]["labels"]) | NODE_CLASS_LABEL
    if kind == "NodeClaim":
        expected = {k: v for k, v in expected.items() if k not in LIFECYCLE_LABELS}
    labels = built["metadata"]["labels"]
    # The sample is a full dump (the AWS provider's instance-type labels, the kubelet's
    # beta labels, ...); the builders make the labels Lifeboat and Karpenter's scheduling
    # read, each with the sample's value, and those include every label Karpenter sets.
    assert {k: expected.get(k) for k in labels} == labels
    assert KARPENTER_SET[kind] <= set(labels)
    assert built["metadata"]["ownerReferences"] == sample["metadata"]["ownerReferences"]
    annotations = dict(built["metadata"].get("annotations") or {})
    sample_annotations = sample["metadata"].get("annotations") or {}
    if kind == "NodeClaim":
        # Not drifted from the pool it was built from (the builders' default NodePool is
        # smaller than the sample's): the hash Karpenter's nodepool/hash controller computes.
        assert annotations.pop("karpenter.sh/nodepool-hash") == nodepool_hash(kube.nodepool())
        assert annotations.pop("karpenter.sh/nodepool-hash-version") == "v3"
    assert {k: sample_annotations.get(k) for k in annotations} == annotations
    if kind == "NodeClaim":
        assert built["status"]["providerID"] == sample["status"]["providerID"]
        assert built["status"]["nodeName"] == sample["status"]["nodeName"]
        # The lifecycle conditions (the sample also has ConsistentStateFound, which only
        # Karpenter's consistency controller reads).
        assert {c["type"] for c in built["status"]["conditions"]} <= {
            c["type"] for c in sample["status"]["conditions"]
        }
    else:
        assert built["spec"] == sample["spec"]


def test_a_nodeclaim_and_its_node_are_linked_as_karpenter_links_them() -> None:
    claim, node = kube.nodeclaim_and_node(
        name="batch-x2k9d", nodepool="batch", instance_id="i-0123456789abcdef0", zone="us-east-1b"
    )
    assert node["spec"]["providerID"] == claim["status"]["providerID"]
    assert node["spec"]["providerID"] == "aws:///us-east-1b/i-0123456789abcdef0"
    assert nodes.nodeclaim_owner(node) == ("batch-x2k9d", claim["metadata"]["uid"])
    assert nodes.name_of(node) == claim["status"]["nodeName"]
    # The Node carries the claim's labels and annotations (registration.go syncs them) and
    # its own lifecycle labels; both hold the termination finalizer.
    assert nodes.labels_of(claim).items() <= nodes.labels_of(node).items()
    assert nodes.annotations_of(claim) == nodes.annotations_of(node)
    assert nodes.labels_of(node).keys() >= LIFECYCLE_LABELS
    assert not LIFECYCLE_LABELS & nodes.labels_of(claim).keys()
    assert node["metadata"]["finalizers"] == claim["metadata"]["finalizers"]
    assert claim["metadata"]["finalizers"] == ["karpenter.sh/termination"]
    info = directory_from_objects([claim, node]).describe(["i-0123456789abcdef0"])
    assert (info["i-0123456789abcdef0"].nodeclaim, info["i-0123456789abcdef0"].nodepool) == (
        "batch-x2k9d",
        "batch",
    )


def test_lifeboat_resolves_a_built_cluster_like_the_sample() -> None:
    objects = [kube.nodepool(), *kube.nodeclaim_and_node()]
    info = directory_from_objects(objects).describe([kube.INSTANCE])[kube.INSTANCE]
    with Emulator(objects) as emulator:
        target = Resolver(KubeApi(emulator.api_client())).resolve(kube.INSTANCE, info)
    assert target.node is not None and nodes.name_of(target.node) == kube.NODE
    assert target.claim is not None and target.claim.name == kube.NODECLAIM
    assert target.nodepool is not None and nodes.name_of(target.nodepool) == kube.NODEPOOL


def test_a_deleted_nodeclaim_waits_for_karpenters_finalizer() -> None:
    """What the termination finalizer means to the API server: DELETE sets
    deletionTimestamp and the claim stays until Karpenter's termination controller removes
    the finalizer (tests that watch a deletion land build their claim without it)."""
    with Emulator([kube.nodeclaim(), kube.nodeclaim(name="bare", finalizers=())]) as emulator:
        api = k8s.CustomObjectsApi(emulator.api_client())
        for name in (kube.NODECLAIM, "bare"):
            api.delete_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", name)
        held = emulator.get_object("NodeClaim", kube.NODECLAIM)
        assert held is not None and held["metadata"].get("deletionTimestamp")
        assert emulator.get_object("NodeClaim", "bare") is None


def test_overrides_merge_deep_and_remove() -> None:
    claim = kube.nodeclaim(
        overrides={
            "metadata": {"labels": {"team": "data"}, "annotations": kube.REMOVE},
            "spec": {"expireAfter": "Never"},
        }
    )
    assert claim["metadata"]["labels"]["team"] == "data"
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == kube.NODEPOOL  # kept
    assert "annotations" not in claim["metadata"]
    assert claim["spec"]["expireAfter"] == "Never"
    # Every call builds anew: a change to one object never reaches another test's.
    claim["spec"]["requirements"][0]["values"].append("reserved")
    assert kube.nodeclaim()["spec"]["requirements"][0]["values"] == ["spot", "on-demand"]

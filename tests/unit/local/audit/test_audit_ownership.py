"""Node ownership: a NodePool (label or NodeClaim) or a node group label; else nothing
replaces the node when it is drained."""

from __future__ import annotations

import pytest

from lifeboat_local.audit import ownership
from lifeboat_local.audit.inventory import Inventory
from lifeboat_local.audit.view import ClusterView

from .audit_builders import AT, node, nodepool, view


@pytest.mark.parametrize(
    "labels",
    [
        {"karpenter.sh/nodepool": "general"},
        {"eks.amazonaws.com/nodegroup": "ng-1"},
        {"alpha.eksctl.io/nodegroup-name": "ng-1"},
        {"kops.k8s.io/instancegroup": "nodes"},
        {"eks.amazonaws.com/compute-type": "fargate"},
    ],
)
def test_owned_by_label(labels: dict[str, str]) -> None:
    assert list(ownership.without_owner(view(nodepool("general", []), node("n1", labels)))) == []


def test_owned_by_nodeclaim() -> None:
    by_ref = node("n1")
    by_ref["metadata"]["ownerReferences"] = [
        {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": "c1", "uid": "u"}
    ]
    by_status = node("n2")
    by_provider = node("n3", providerID="aws:///us-east-1a/i-3")
    claims = [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "c2"},
            "status": {"nodeName": "n2"},
        },
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "c3"},
            "status": {"providerID": "aws:///us-east-1a/i-3"},
        },
    ]
    assert list(ownership.without_owner(view(by_ref, by_status, by_provider, *claims))) == []


def test_node_group_label_flag() -> None:
    custom = node("n1", {"example.com/asg": "legacy"})
    assert len(list(ownership.without_owner(view(custom)))) == 1
    assert list(ownership.without_owner(view(custom, node_group_labels=["example.com/asg"]))) == []


def test_node_without_owner() -> None:
    [issue] = ownership.without_owner(view(node("n1", {"kubernetes.io/os": "linux"})))
    assert str(issue.object) == "Node n1" and "nothing replaces it" in issue.message


def test_nodepool_missing() -> None:
    orphan = node("n1", {"karpenter.sh/nodepool": "retired"})
    [issue] = ownership.nodepool_missing(view(nodepool("general", []), orphan))
    assert "its NodePool retired does not exist" in issue.message
    # Without the Karpenter API (or a file without NodePools) the pools are unknown: quiet.
    no_karpenter = Inventory(nodes=(orphan,), karpenter=False)
    assert list(ownership.nodepool_missing(ClusterView(no_karpenter, AT))) == []
    assert list(ownership.nodepool_missing(view(orphan))) == []

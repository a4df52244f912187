"""What would hold a migration from node groups to NodePools (audit.migration): pods pinned
to their group, and pods no NodePool would take (nodeSelector, taints per
``v1.Toleration.ToleratesTaint``)."""

from __future__ import annotations

from typing import Any

import pytest

from lifeboat_local.audit import migration

from .audit_builders import Obj, node, nodepool, owner, pod, view

GROUP_NODE = node("n1", {"eks.amazonaws.com/nodegroup": "legacy"})


def with_spec(obj: Obj, **spec: Any) -> Obj:
    obj["spec"].update(spec)
    return obj


def names(issues: Any) -> list[str]:
    return [issue.object.name for issue in issues]


def test_a_pod_selecting_its_node_group_is_pinned() -> None:
    pinned = with_spec(pod("a"), nodeSelector={"eks.amazonaws.com/nodegroup": "legacy"})
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "alpha.eksctl.io/nodegroup-name", "operator": "Exists"}
                        ]
                    }
                ]
            }
        }
    }
    by_affinity = with_spec(pod("b"), affinity=affinity)
    free = pod("c")
    cluster = view(GROUP_NODE, pinned, by_affinity, free)
    assert names(migration.pinned_to_node_group(cluster)) == ["a", "b"]


def test_daemonset_pods_and_karpenter_nodes_are_left_out() -> None:
    daemon = with_spec(
        pod("ds", controller=owner("DaemonSet", "agent")),
        nodeSelector={"eks.amazonaws.com/nodegroup": "legacy"},
    )
    karpenter_node = node(
        "n2", {"karpenter.sh/nodepool": "general", "eks.amazonaws.com/nodegroup": "x"}
    )
    on_karpenter = with_spec(pod("k", node="n2"), nodeSelector={"eks.amazonaws.com/nodegroup": "x"})
    assert (
        names(
            migration.pinned_to_node_group(view(GROUP_NODE, karpenter_node, daemon, on_karpenter))
        )
        == []
    )


@pytest.mark.parametrize(
    ("template", "fits"),
    [
        ({"metadata": {"labels": {"team": "sre"}}}, True),
        ({"spec": {"requirements": [{"key": "team", "operator": "In", "values": ["sre"]}]}}, True),
        ({"spec": {"requirements": [{"key": "team", "operator": "In", "values": ["web"]}]}}, False),
        ({"metadata": {"labels": {"team": "web"}}}, False),
    ],
)
def test_a_pod_whose_selector_no_pool_provides_is_flagged(template: Obj, fits: bool) -> None:
    selecting = with_spec(pod("a"), nodeSelector={"team": "sre"})
    cluster = view(nodepool("converted", [], **template), GROUP_NODE, selecting)
    assert names(migration.no_nodepool_fits(cluster)) == ([] if fits else ["a"])


@pytest.mark.parametrize(
    ("tolerations", "fits"),
    [
        ([], False),
        (
            [{"key": "dedicated", "operator": "Equal", "value": "shop", "effect": "NoSchedule"}],
            True,
        ),
        ([{"key": "dedicated", "operator": "Equal", "value": "other"}], False),
        ([{"key": "dedicated", "operator": "Exists"}], True),
        ([{"operator": "Exists"}], True),
        ([{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], False),
    ],
)
def test_a_pool_taint_the_pod_does_not_tolerate_is_flagged(
    tolerations: list[Obj], fits: bool
) -> None:
    taint = {"key": "dedicated", "value": "shop", "effect": "NoSchedule"}
    pool = nodepool("converted", [], spec={"taints": [taint]})
    tolerating = with_spec(pod("a"), tolerations=tolerations)
    assert names(migration.no_nodepool_fits(view(pool, GROUP_NODE, tolerating))) == (
        [] if fits else ["a"]
    )


def test_without_nodepools_nothing_is_judged() -> None:
    selecting = with_spec(pod("a"), nodeSelector={"team": "sre"})
    assert names(migration.no_nodepool_fits(view(GROUP_NODE, selecting))) == []

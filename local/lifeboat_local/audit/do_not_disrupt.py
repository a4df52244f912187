"""Checks on ``karpenter.sh/do-not-disrupt``: what it cannot protect (Spot), what Karpenter
ignores (values it cannot parse), and which nodes it holds out of a rotation.

Karpenter (pkg/utils/pod ``IsDoNotDisruptActive``; state node ``Annotations()``): on a pod the
value is "true" or a positive Go duration; anything else is treated as absent. On a node only
"true" counts. It guards voluntary disruption only: a Spot interruption takes the instance
two minutes after its warning, annotation or not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.budgets import parse_go_duration
from lifeboat.kube import nodes
from lifeboat.model.objects import Obj
from lifeboat_local.audit.findings import Issue
from lifeboat_local.audit.view import ClusterView, ref

# Capacity-type labels of Spot nodes: Karpenter's, and EKS managed node groups'.
SPOT_LABELS: Final = (
    ("karpenter.sh/capacity-type", "spot"),
    ("eks.amazonaws.com/capacityType", "SPOT"),
)
# do_not_disrupt_blocker judges a node and its pods; this node has no annotation of its own,
# so it judges the pods alone.
_BARE_NODE: Final[Obj] = {"metadata": {"name": ""}}


def is_spot(node: Obj) -> bool:
    labels = nodes.labels_of(node)
    return any(labels.get(key) == value for key, value in SPOT_LABELS)


def _pod_blocks(pod: Obj, view: ClusterView) -> bool:
    """Whether the pod's annotation is active now (Lifeboat's reading of Karpenter's rule)."""
    return disruption_rules.do_not_disrupt_blocker(_BARE_NODE, [pod], view.at) is not None


def _node_marked(node: Obj) -> bool:
    return nodes.annotations_of(node).get(nodes.DO_NOT_DISRUPT) == "true"


def on_spot(view: ClusterView) -> Iterator[Issue]:
    """do-not-disrupt pods (and nodes) on Spot capacity: Spot does not wait for them."""
    for node in view.inventory.nodes:
        if not is_spot(node):
            continue
        name = nodes.name_of(node)
        if _node_marked(node):
            yield Issue(
                ref(node),
                f"{nodes.DO_NOT_DISRUPT}=true on a Spot node: a Spot interruption reclaims it "
                "two minutes after the warning regardless",
                "keep what must not be interrupted on on-demand capacity",
            )
        for pod in view.pods_by_node.get(name, ()):
            if _pod_blocks(pod, view):
                value = nodes.annotations_of(pod)[nodes.DO_NOT_DISRUPT]
                yield Issue(
                    ref(pod),
                    f"{nodes.DO_NOT_DISRUPT}={value} on Spot node {name}: a Spot interruption "
                    "gives two minutes and does not wait for it",
                    "schedule it on on-demand capacity (nodeSelector karpenter.sh/capacity-type: "
                    "on-demand), or make it tolerate a two-minute notice",
                )


def invalid_values(view: ClusterView) -> Iterator[Issue]:
    """Annotation values Karpenter ignores: the workload believes it is protected and is not."""
    for node in view.inventory.nodes:
        value = nodes.annotations_of(node).get(nodes.DO_NOT_DISRUPT)
        if value is not None and value != "true":
            yield Issue(
                ref(node),
                f'{nodes.DO_NOT_DISRUPT}="{value}" on a node: only "true" counts there',
                'set it to "true", or remove it',
            )
    for pod in view.live_pods:
        value = nodes.annotations_of(pod).get(nodes.DO_NOT_DISRUPT)
        if value is None or value == "true":
            continue
        try:
            valid = parse_go_duration(value).total_seconds() > 0
        except ValueError:
            valid = False
        if not valid:
            yield Issue(
                ref(pod),
                f'{nodes.DO_NOT_DISRUPT}="{value}": neither "true" nor a positive duration, so '
                "Karpenter treats the pod as unprotected",
                'use "true" or a duration such as "2h"',
            )


def blocks_rotation(view: ClusterView) -> Iterator[Issue]:
    """Nodes held out of voluntary replacement until an annotation goes (not Spot: above)."""
    for node in view.inventory.nodes:
        if is_spot(node):
            continue
        name = nodes.name_of(node)
        if _node_marked(node):
            yield Issue(
                ref(node),
                f"{nodes.DO_NOT_DISRUPT}=true: Lifeboat and Karpenter leave this node out of "
                "voluntary replacement (rebalance, maintenance before its deadline, rotation)",
                "remove the annotation before rotating, or expect the node to be skipped",
            )
        for pod in view.pods_by_node.get(name, ()):
            if nodes.annotations_of(pod).get(nodes.DO_NOT_DISRUPT) == "true":
                yield Issue(
                    ref(pod),
                    f"{nodes.DO_NOT_DISRUPT}=true holds node {name} out of voluntary "
                    "replacement until it is removed or the pod ends",
                    "remove the annotation (or use a duration) before rotating",
                )

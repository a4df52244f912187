"""Checks on what would hold a migration from node groups to NodePools: pods on node-group
nodes that no Karpenter node would take once their group is rotated away.

- pinned to the group: a ``nodeSelector`` or required node affinity on a label only the
  group's nodes carry (``eks.amazonaws.com/nodegroup`` and its kin): Karpenter's nodes never
  have it, so the pod stays Pending after its node is drained;
- no NodePool fits: with NodePools in the file (``lifeboat convert``'s output, say), the pod's
  ``nodeSelector`` is satisfied by no pool (its template labels, its single-valued ``In``
  requirements, or a requirement on the key that allows the value), or it does not tolerate
  a pool's ``NoSchedule``/``NoExecute`` taints (``v1.Toleration.ToleratesTaint``) on every
  pool that would otherwise fit. DaemonSet pods and pods already done are left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from lifeboat.kube import nodes
from lifeboat.model.objects import Obj
from lifeboat_local.audit.findings import Issue
from lifeboat_local.audit.ownership import GROUP_LABELS
from lifeboat_local.audit.view import ClusterView, controller_of, is_terminal, ref

NODE_GROUP_LABELS: Final = (
    *(key for key, _ in GROUP_LABELS if key != nodes.NODEPOOL_LABEL),
    "eks.amazonaws.com/nodegroup-image",
    "eks.amazonaws.com/sourceLaunchTemplateId",
)


def _group_pods(view: ClusterView) -> Iterator[tuple[Obj, Obj]]:
    """(pod, node) for the live, non-DaemonSet pods of node-group nodes."""
    for node in view.inventory.nodes:
        labels = nodes.labels_of(node)
        if nodes.NODEPOOL_LABEL in labels or not any(k in labels for k in NODE_GROUP_LABELS):
            continue
        for pod in view.pods_by_node.get(nodes.name_of(node), ()):
            owner = controller_of(pod) or {}
            if is_terminal(pod) or owner.get("kind") == "DaemonSet":
                continue
            yield pod, node


def _required_terms(pod: Obj) -> list[dict[str, Any]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return list(required.get("nodeSelectorTerms") or [])


def _pinned_keys(pod: Obj) -> list[str]:
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    keys = [k for k in selector if k in NODE_GROUP_LABELS]
    for term in _required_terms(pod):
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") in NODE_GROUP_LABELS and expression.get("operator") in (
                "In",
                "Exists",
            ):
                keys.append(str(expression["key"]))
    return sorted(set(keys))


def pinned_to_node_group(view: ClusterView) -> Iterator[Issue]:
    for pod, node in _group_pods(view):
        keys = _pinned_keys(pod)
        if keys:
            yield Issue(
                ref(pod),
                f"on node {nodes.name_of(node)}, it requires node label(s) {', '.join(keys)}, "
                "which only the node group's nodes carry: once they are rotated to Karpenter "
                "nodes it stays Pending",
                "select a label the NodePool sets (its template labels, or "
                "karpenter.sh/nodepool), or drop the selector",
            )


def _allows(pool: Obj, key: str, value: str) -> bool:
    template = (pool.get("spec") or {}).get("template") or {}
    if ((template.get("metadata") or {}).get("labels") or {}).get(key) == value:
        return True
    if key == nodes.NODEPOOL_LABEL:
        return nodes.name_of(pool) == value
    for requirement in (template.get("spec") or {}).get("requirements") or []:
        if requirement.get("key") != key:
            continue
        operator, values = requirement.get("operator"), requirement.get("values") or []
        return (operator == "In" and value in values) or (
            operator == "NotIn" and value not in values
        )
    return False


def _tolerates(pod: Obj, taint: dict[str, Any]) -> bool:
    """``ToleratesTaint``: effect empty or equal; key empty with Exists, or equal; Exists, or
    Equal with the same value."""
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if not key and operator == "Exists":
            return True
        if key != taint.get("key"):
            continue
        if operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _pool_taints(pool: Obj) -> list[dict[str, Any]]:
    spec = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [t for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")]


def no_nodepool_fits(view: ClusterView) -> Iterator[Issue]:
    pools = view.inventory.nodepools
    if not pools:
        return
    for pod, node in _group_pods(view):
        if _pinned_keys(pod):
            continue  # pinned_to_node_group says why
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        selected = [p for p in pools if all(_allows(p, k, str(v)) for k, v in selector.items())]
        if not selected:
            wanted = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
            yield Issue(
                ref(pod),
                f"on node {nodes.name_of(node)}: no NodePool provides its nodeSelector "
                f"({wanted}): once its node group is rotated away it stays Pending",
                "add the label to a NodePool's template labels (or a requirement), or change "
                "the selector",
            )
            continue
        if not any(all(_tolerates(pod, t) for t in _pool_taints(p)) for p in selected):
            taints = sorted(
                {f"{t.get('key')}:{t.get('effect')}" for p in selected for t in _pool_taints(p)}
            )
            yield Issue(
                ref(pod),
                f"on node {nodes.name_of(node)}: every NodePool that fits taints its nodes "
                f"({', '.join(taints)}) and the pod does not tolerate it: it stays Pending "
                "once its node group is rotated away",
                "add the toleration to the pod, or a pool without the taint",
            )

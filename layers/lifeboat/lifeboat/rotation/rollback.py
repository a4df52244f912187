"""Carrying out a rollback (``plan.rollback`` decides which nodes): each node the rotation
took out of service that still exists, with the same instance, is returned to service in
one guarded JSON patch (``node_patches.rollback_operations``: Lifeboat's taints off,
uncordoned, the load balancer exclusion Lifeboat added taken off). What cannot be undone is
said, never hidden: a node gone (its instance terminated), a Karpenter node whose NodeClaim
is being deleted (Karpenter terminates it whatever its taints), and a replacement NodeClaim
left running (extra capacity Karpenter consolidates once it is empty)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, KubeError
from lifeboat.kube.node_patches import rollback_operations
from lifeboat.kube.objects import MutableObj, Obj
from lifeboat.rotation.model import Rotation

PATCH_ATTEMPTS = 3


@dataclass(frozen=True)
class Restored:
    name: str
    undone: bool  # back in service (or nothing of Lifeboat's was left on it)
    note: str  # what was done, or why it could not be


def _same_instance(node: Obj, instance_id: str) -> bool:
    """The node name may be reused by a new instance: only the one rotated is ours."""
    return not instance_id or (nodes.provider_id(node) or "").endswith(f"/{instance_id}")


def restore(kube: KubeApi, rotation: Rotation, names: Sequence[str]) -> list[Restored]:
    results: list[Restored] = []
    for name in names:
        node = rotation.node(name)
        current = kube.get_node(name)
        if current is None or not _same_instance(current, node.instance_id):
            results.append(Restored(name, False, "not undone: the node is gone"))
            continue
        if node.nodeclaim is not None:
            claim = kube.get_nodeclaim(node.nodeclaim)
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                why = f"not undone: its NodeClaim {node.nodeclaim} is being deleted"
                results.append(Restored(name, False, why))
                continue
        results.append(_patch(kube, name, current))
    return results


def _patch(kube: KubeApi, name: str, node: MutableObj) -> Restored:
    for attempt in range(PATCH_ATTEMPTS):
        operations = rollback_operations(node)
        if not operations:
            return Restored(name, True, "returned to service")
        try:
            kube.patch_node(name, operations)
            return Restored(name, True, "returned to service")
        except KubeError as error:
            if error.status not in (409, 422) or attempt == PATCH_ATTEMPTS - 1:
                return Restored(name, False, f"not undone: {error}")
        fresh = kube.get_node(name)
        if fresh is None:
            return Restored(name, False, "not undone: the node is gone")
        node = fresh
    return Restored(name, False, "not undone: the node kept changing")

"""Carrying out a rollback (``plan.rollback`` decides which nodes): each node the rotation
took out of service that still exists, with the same instance, has the rotation's own marks
undone in one guarded JSON patch (``node_patches.rollback_operations``: the rotation's taint
off; uncordoned and the load balancer exclusion Lifeboat added taken off, unless another of
Lifeboat's holds keeps the node out of service: an AWS notice's, which stays and is
reported). A when-ready hand-over still waiting for the node's replacement is cancelled
first (the hold on the old node and the protection of its replacement removed; its wake-up
then finds the rotation rolled back and deletes nothing), or the node is reported as not
restorable. What cannot be undone is said, never hidden: a node gone (its instance
terminated, or its name reused by another instance), a Karpenter node whose NodeClaim is
being deleted (Karpenter terminates it whatever its taints), and a replacement NodeClaim
left running (extra capacity Karpenter consolidates once it is empty)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, KubeError
from lifeboat.marks import node_marks
from lifeboat.marks.handover import PROTECTED_ANNOTATION, unprotect_operations
from lifeboat.marks.node_patches import other_hold, rollback_operations
from lifeboat.model.notice import Kind
from lifeboat.model.objects import MutableObj, Obj
from lifeboat.rotation.model import Rotation, RotationNode

PATCH_ATTEMPTS = 3
ROTATION_TAINT = node_marks.taint_key(Kind.ROTATION)
GONE = "not undone: the node is gone"


@dataclass(frozen=True)
class Restored:
    name: str
    undone: bool  # back in service (or nothing of the rotation's was left on it)
    note: str  # what was done, or why it could not be


def _same_instance(node: Obj, instance_id: str) -> bool:
    """The node name may be reused by a new instance: only the one rotated is ours."""
    return not instance_id or (nodes.provider_id(node) or "").endswith(f"/{instance_id}")


def restore(kube: KubeApi, rotation: Rotation, names: Sequence[str]) -> list[Restored]:
    return [_restore_one(kube, rotation.node(name)) for name in names]


def _restore_one(kube: KubeApi, node: RotationNode) -> Restored:
    name = node.name
    current = kube.get_node(name)
    if current is None or not _same_instance(current, node.instance_id):
        return Restored(name, False, GONE)
    if node.nodeclaim is not None:
        claim = kube.get_nodeclaim(node.nodeclaim)
        if claim is None or claim["metadata"].get("deletionTimestamp"):
            why = f"not undone: its NodeClaim {node.nodeclaim} is being deleted"
            return Restored(name, False, why)
        problem = _cancel_hand_over(kube, node.nodeclaim, current)
        if problem is not None:
            why = f"not undone: its pending hand-over could not be cancelled ({problem})"
            return Restored(name, False, why)
        fresh = kube.get_node(name)
        if fresh is None:
            return Restored(name, False, GONE)
        current = fresh
    return _patch(kube, name, current)


def _cancel_hand_over(kube: KubeApi, claim: str, node: Obj) -> str | None:
    """Cancel a when-ready hand-over that still waits for ``claim``'s replacement (the old
    node carries Lifeboat's hold, ``handover.hold_operations``): the hold comes off the old
    node, and the protection off its replacements (labelled ``lifeboat.dev/replaces``), so
    Karpenter may consolidate them. None when done (or nothing waited); else why not."""
    if nodes.annotations_of(node).get(PROTECTED_ANNOTATION) != "true":
        return None
    try:
        kube.patch_node(nodes.name_of(node), unprotect_operations(node))
        for replacement in kube.list_nodeclaims(f"{node_marks.REPLACES_LABEL}={claim}"):
            operations = unprotect_operations(replacement)
            if operations:
                kube.patch_nodeclaim(nodes.name_of(replacement), operations)
            registered = (replacement.get("status") or {}).get("nodeName")
            joined = kube.get_node(registered) if registered else None
            if joined is not None and unprotect_operations(joined):
                kube.patch_node(nodes.name_of(joined), unprotect_operations(joined))
    except KubeError as error:
        return str(error)
    return None


def _patch(kube: KubeApi, name: str, node: MutableObj) -> Restored:
    for attempt in range(PATCH_ATTEMPTS):
        operations = rollback_operations(node, ROTATION_TAINT)
        try:
            if operations:
                kube.patch_node(name, operations)
            return _result(name, node)
        except KubeError as error:
            if error.status not in (409, 422) or attempt == PATCH_ATTEMPTS - 1:
                return Restored(name, False, f"not undone: {error}")
        fresh = kube.get_node(name)
        if fresh is None:
            return Restored(name, False, GONE)
        node = fresh
    return Restored(name, False, "not undone: the node kept changing")  # pragma: no cover


def _result(name: str, node: Obj) -> Restored:
    """Back in service, or (another of Lifeboat's holds on it) the rotation's marks off
    and the node kept out of service by that hold, reported."""
    hold = other_hold(node, ROTATION_TAINT)
    if hold is None:
        return Restored(name, True, "returned to service")
    why = (
        f"the rotation's marks removed, but it stays out of service: Lifeboat's {hold} "
        "taint (an AWS notice about its instance) keeps it cordoned"
    )
    return Restored(name, False, why)

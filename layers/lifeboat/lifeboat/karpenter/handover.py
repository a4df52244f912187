"""The ``when-ready`` hand-over of a voluntary notice (docs/concepts/hand-over.md): the old
NodeClaim is deleted only once its replacement is initialized, and until then the
replacement is kept out of Karpenter's consolidation.

What protects it is Karpenter's own rule: ``StateNode.ValidateNodeDisruptable`` refuses a
candidate whose annotations carry ``karpenter.sh/do-not-disrupt: "true"``, and
``StateNode.Annotations`` reads them from the NodeClaim until the node is registered, from
the Node after. Registration (``Registration.syncNode``) copies the claim's annotations onto
the Node (``lo.Assign``: it adds, never removes), so the hand-over removes the annotation
from both. ``lifeboat.dev/protected-until-hand-over`` records that Lifeboat put it there: an
annotation that came from the NodePool's template is the operator's and stays.

Bounded as Karpenter bounds its own replace-then-delete commands (``Queue.waitOrTerminate``:
``minRetryDuration``, 10 minutes): a replacement not initialized by then is given up on;
the old claim is kept, the old node's taint and cordon are taken off, and the replacement
loses its protection (Karpenter's liveness deletes a claim that never registers).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from lifeboat.kube import nodes
from lifeboat.kube.node_patches import release_operations
from lifeboat.kube.objects import Obj

AT_ONCE = "at-once"
WHEN_READY = "when-ready"
HAND_OVERS = (AT_ONCE, WHEN_READY)
PROTECTED_ANNOTATION = f"{nodes.DOMAIN}/protected-until-hand-over"
# Karpenter's disruption queue gives a command's replacements at least this long to
# initialize (``minRetryDuration``) before it rolls the command back.
PATIENCE = timedelta(minutes=10)

Operation = dict[str, Any]


def protect(claim: Obj) -> dict[str, Any]:
    """A replacement about to be created, annotated do-not-disrupt and as Lifeboat's to
    remove. A claim whose template already says do-not-disrupt keeps it as the operator's."""
    metadata = dict(claim.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    if annotations.get(nodes.DO_NOT_DISRUPT) != "true":
        annotations[nodes.DO_NOT_DISRUPT] = "true"
        annotations[PROTECTED_ANNOTATION] = "true"
    return {**claim, "metadata": {**metadata, "annotations": annotations}}


def hold_operations(node: Obj) -> list[Operation]:
    """The JSON patch that keeps the old node out of Karpenter's own disruption while its
    hand-over waits: do-not-disrupt and Lifeboat's marker ([] when the node already says
    do-not-disrupt). Tainted by Lifeboat only, the node would otherwise stay a drift or
    consolidation candidate, and Karpenter would launch a second replacement for it."""
    annotations = nodes.annotations_of(node)
    if annotations.get(nodes.DO_NOT_DISRUPT) == "true":
        return []
    if node.get("metadata", {}).get("annotations") is None:
        value = {nodes.DO_NOT_DISRUPT: "true", PROTECTED_ANNOTATION: "true"}
        return [{"op": "add", "path": "/metadata/annotations", "value": value}]
    return [
        {"op": "add", "path": _pointer(nodes.DO_NOT_DISRUPT), "value": "true"},
        {"op": "add", "path": _pointer(PROTECTED_ANNOTATION), "value": "true"},
    ]


def initialized(claim: Obj) -> bool:
    """Karpenter's ``Initialized`` condition on the NodeClaim (what the disruption queue
    waits for before it deletes a drifted claim)."""
    return nodes.condition_true(claim, "Initialized")


def unprotect_operations(obj: Obj) -> list[Operation]:
    """The JSON patch that removes the protection Lifeboat added to a claim or its node
    ([] when there is none of ours). The marker is tested, so a concurrent change fails the
    patch (422) rather than remove an annotation Lifeboat did not add."""
    annotations = nodes.annotations_of(obj)
    if annotations.get(PROTECTED_ANNOTATION) != "true":
        return []
    marker = _pointer(PROTECTED_ANNOTATION)
    operations: list[Operation] = [
        {"op": "test", "path": marker, "value": "true"},
        {"op": "remove", "path": marker},
    ]
    if nodes.DO_NOT_DISRUPT in annotations:
        operations.append({"op": "remove", "path": _pointer(nodes.DO_NOT_DISRUPT)})
    return operations


def give_back_operations(node: Obj, key: str) -> list[Operation]:
    """The JSON patch that puts a node back in service after a hand-over given up on:
    Lifeboat's taint ``key`` off, uncordoned, and the load balancer exclusion Lifeboat
    added released. [] when none of it is there."""
    existing = nodes.taints(node)
    kept = [t for t in existing if t.get("key") != key]
    operations: list[Operation] = []
    if len(kept) != len(existing):
        operations += [
            {"op": "test", "path": "/spec/taints", "value": existing},
            {"op": "replace", "path": "/spec/taints", "value": kept},
        ]
    if node.get("spec", {}).get("unschedulable"):
        operations.append({"op": "replace", "path": "/spec/unschedulable", "value": False})
    return operations + release_operations(node)


def _pointer(key: str) -> str:
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")

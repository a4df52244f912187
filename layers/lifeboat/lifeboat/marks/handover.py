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

Nothing protected without an owner (issue 33.3): the hand-over's wake-up owns what it holds,
but a wake-up can fail to be scheduled, or be dead-lettered. So the old node and the
replacement also carry the hand-over itself: :data:`HAND_OVER_ANNOTATION` holds its wake-up
(as the queue carries it) and :data:`HAND_OVER_LABEL` the instant the wake-up chain must have
ended by, ``PATIENCE`` + :data:`SWEEP_GRACE` after it began. Each instance status sweep lists
the objects labelled so (``lifeboat.flow.handover_sweep``) and does, for those past that
instant, what the wake-up would have done: finish the hand-over or give it up. Both go when
the protection is removed (:func:`unprotect_operations`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.marks.node_patches import release_operations
from lifeboat.model.objects import Obj

PROTECTED_ANNOTATION = f"{node_marks.DOMAIN}/protected-until-hand-over"
# Karpenter's disruption queue gives a command's replacements at least this long to
# initialize (``minRetryDuration``) before it rolls the command back.
PATIENCE = timedelta(minutes=10)
# How long after a hand-over's own give-up the sweep waits before it takes over: a wake-up
# due then is delivered by Scheduler within a minute and handled in seconds, so only a chain
# that broke (a schedule never created, a wake-up dead-lettered) is still pending by then.
SWEEP_GRACE = timedelta(minutes=5)
# On the old node and the replacement claim while a hand-over waits: the instant the sweep
# takes over (label value ``20261201T141500Z``), and the hand-over's wake-up (JSON).
HAND_OVER_LABEL = f"{node_marks.DOMAIN}/hand-over-until"
HAND_OVER_ANNOTATION = f"{node_marks.DOMAIN}/hand-over"
_LABEL_FORMAT = "%Y%m%dT%H%M%SZ"

Operation = dict[str, Any]


@dataclass(frozen=True)
class Record:
    """A hand-over as its objects carry it: when the sweep takes over, and its wake-up."""

    until: datetime
    wakeup: str

    @property
    def label(self) -> str:
        return self.until.astimezone(UTC).strftime(_LABEL_FORMAT)


def taken_over_at(obj: Obj) -> datetime | None:
    """When the sweep takes over the hand-over ``obj`` carries (None: none, or unreadable)."""
    value = nodes.labels_of(obj).get(HAND_OVER_LABEL)
    try:
        return datetime.strptime(str(value), _LABEL_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def protect(claim: Obj, record: Record | None = None) -> dict[str, Any]:
    """A replacement about to be created, annotated do-not-disrupt and as Lifeboat's to
    remove, and carrying its hand-over's ``record``. A claim whose template already says
    do-not-disrupt keeps it as the operator's."""
    metadata = dict(claim.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    labels = dict(metadata.get("labels") or {})
    if annotations.get(nodes.DO_NOT_DISRUPT) != "true":
        annotations[nodes.DO_NOT_DISRUPT] = "true"
        annotations[PROTECTED_ANNOTATION] = "true"
    if record is not None:
        annotations[HAND_OVER_ANNOTATION] = record.wakeup
        labels[HAND_OVER_LABEL] = record.label
    return {**claim, "metadata": {**metadata, "annotations": annotations, "labels": labels}}


def hold_operations(node: Obj, record: Record | None = None) -> list[Operation]:
    """The JSON patch that keeps the old node out of Karpenter's own disruption while its
    hand-over waits: do-not-disrupt and Lifeboat's marker (not when the node already says
    do-not-disrupt), and the hand-over's ``record`` (unless it carries one: the first stays).
    Tainted by Lifeboat only, the node would otherwise stay a drift or consolidation
    candidate, and Karpenter would launch a second replacement for it."""
    added: dict[str, str] = {}
    if nodes.annotations_of(node).get(nodes.DO_NOT_DISRUPT) != "true":
        added = {nodes.DO_NOT_DISRUPT: "true", PROTECTED_ANNOTATION: "true"}
    fresh = record is not None and HAND_OVER_LABEL not in nodes.labels_of(node)
    if record is not None and fresh:
        added[HAND_OVER_ANNOTATION] = record.wakeup
    operations = _adds(node, "annotations", added)
    if record is not None and fresh:
        operations += _adds(node, "labels", {HAND_OVER_LABEL: record.label})
    return operations


def _adds(obj: Obj, field: str, values: dict[str, str]) -> list[Operation]:
    """JSON patch adds of ``values`` to ``metadata.<field>`` (created when absent)."""
    if not values:
        return []
    if obj.get("metadata", {}).get(field) is None:
        return [{"op": "add", "path": f"/metadata/{field}", "value": values}]
    base = f"/metadata/{field}/"
    return [{"op": "add", "path": base + _escape(k), "value": v} for k, v in values.items()]


def initialized(claim: Obj) -> bool:
    """Karpenter's ``Initialized`` condition on the NodeClaim (what the disruption queue
    waits for before it deletes a drifted claim)."""
    return nodes.condition_true(claim, "Initialized")


def unprotect_operations(obj: Obj) -> list[Operation]:
    """The JSON patch that removes the protection Lifeboat added to a claim or its node,
    and the hand-over's record ([] when there is none of ours). The marker is tested, so a
    concurrent change fails the patch (422) rather than remove an annotation Lifeboat did
    not add."""
    annotations = nodes.annotations_of(obj)
    operations: list[Operation] = []
    if annotations.get(PROTECTED_ANNOTATION) == "true":
        marker = _pointer(PROTECTED_ANNOTATION)
        operations += [
            {"op": "test", "path": marker, "value": "true"},
            {"op": "remove", "path": marker},
        ]
        if nodes.DO_NOT_DISRUPT in annotations:
            operations.append({"op": "remove", "path": _pointer(nodes.DO_NOT_DISRUPT)})
    if HAND_OVER_ANNOTATION in annotations:
        operations.append({"op": "remove", "path": _pointer(HAND_OVER_ANNOTATION)})
    if HAND_OVER_LABEL in nodes.labels_of(obj):
        operations.append({"op": "remove", "path": "/metadata/labels/" + _escape(HAND_OVER_LABEL)})
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
    return "/metadata/annotations/" + _escape(key)


def _escape(key: str) -> str:
    """A key as a JSON pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")

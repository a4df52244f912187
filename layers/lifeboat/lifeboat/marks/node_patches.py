"""The JSON patches (RFC 6902) Lifeboat sends to Nodes. Pure: built from what is known.

``spec.taints`` is an atomic list (``+listType=atomic``): a merge or strategic-merge patch
replaces it whole, so a writer that read the list before another changed it would lose the
other's taint. Lifeboat therefore sends JSON patches, guarded by ``test`` operations, and
the API server (evanphx/json-patch) applies them to the object as stored, all or nothing:
422 when a test fails.

A node about to go is also labelled ``node.kubernetes.io/exclude-from-external-load-balancers``
in that same patch (Kubernetes' well-known label, "Well-Known Labels, Annotations and Taints":
the service controller and the AWS Load Balancer Controller take a node carrying it out of
load balancers' target groups), so traffic is drained from it before its pods stop. The
label is Lifeboat's to remove only if Lifeboat put it there, which
``lifeboat.dev/excluded-from-load-balancers`` records, in the same patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import (
    Hold,
    ended_holds,
    holds_of,
    holds_operations,
    with_hold,
)
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.objects import Obj

Operation = dict[str, Any]


def taint_operations(
    node: Obj,
    key: str,
    effect: str,
    cordon: bool,
    exclude_from_load_balancers: bool = False,
    ec2_maintenance: str | None = None,
    hold: Hold | None = None,
) -> list[Operation]:
    """The JSON patch that puts Lifeboat's taint on ``node``, cordons it and (when asked)
    excludes it from load balancers ([] if done); ``ec2_maintenance``: the start of the EC2
    scheduled event acted on, set as ``lifeboat.dev/ec2-maintenance`` in the same patch;
    ``hold``: the maintenance the node is held for, added to its record
    (``lifeboat.marks.maintenance_holds``) in the same patch.

    ``spec.taints`` is an atomic list in the API (a patch replaces it whole), so the patch
    tests the list it read: a concurrent writer makes it fail rather than lose its taint.
    """
    existing = nodes.taints(node)
    wanted = {"key": key, "effect": effect}
    ours = [t for t in existing if t.get("key") == key]
    operations: list[Operation] = []
    if not (len(ours) == 1 and ours[0].get("effect") == effect):
        updated = [t for t in existing if t.get("key") != key] + [wanted]
        if "taints" in node.get("spec", {}):
            operations.append({"op": "test", "path": "/spec/taints", "value": existing})
            operations.append({"op": "replace", "path": "/spec/taints", "value": updated})
        else:
            version = node["metadata"].get("resourceVersion")
            operations.append({"op": "test", "path": "/metadata/resourceVersion", "value": version})
            operations.append({"op": "add", "path": "/spec/taints", "value": updated})
    if cordon and not node.get("spec", {}).get("unschedulable"):
        operations.append({"op": "add", "path": "/spec/unschedulable", "value": True})
    if hold is not None:
        recorded = holds_operations(node, with_hold(holds_of(node), hold))
        operations += recorded
        node = _with_annotations_map(node, recorded)
    if exclude_from_load_balancers:
        operations += exclusion_operations(node)
    if ec2_maintenance is not None:
        operations += _set_label(node, node_marks.EC2_MAINTENANCE_LABEL, ec2_maintenance)
    return operations


def ec2_maintenance_operations(
    node: Obj, start: datetime, code: str | None = None
) -> list[Operation]:
    """Label a node Lifeboat already acted on or marked for a maintenance (its scheduled-
    change taint, any effect) with the EC2 event's ``start`` ([] if it carries no such taint
    or the label already): the maintenance was first told by AWS Health, and the sweep has
    now seen EC2's event for it, so it may end by that event vanishing. EC2's ``code`` is
    added to the maintenance's entry in the node's holds (when one is recorded)."""
    key = node_marks.taint_key(Kind.SCHEDULED_CHANGE)
    if not any(t.get("key") == key for t in nodes.taints(node)):
        return []
    operations: list[Operation] = []
    holds = holds_of(node)
    if holds:
        operations += holds_operations(node, with_hold(holds, Hold(start, code=code)))
    value = node_marks.ec2_maintenance_value(start)
    return operations + _set_label(node, node_marks.EC2_MAINTENANCE_LABEL, value)


def _with_annotations_map(node: Obj, operations: list[Operation]) -> Obj:
    """``node`` as seen after ``operations`` added its annotations map (if they did), so
    that later operations of the same patch do not add the map a second time."""
    added = [op for op in operations if op["path"] == "/metadata/annotations" and op["op"] == "add"]
    if not added:
        return node
    return {
        **node,
        "metadata": {**node.get("metadata", {}), "annotations": dict(added[0]["value"])},
    }


def _set_label(node: Obj, key: str, value: str) -> list[Operation]:
    """Set label ``key`` ([] if it has that value already)."""
    metadata = node.get("metadata", {})
    if metadata.get("labels") is None:
        return [
            {"op": "test", "path": "/metadata/labels", "value": None},
            {"op": "add", "path": "/metadata/labels", "value": {key: value}},
        ]
    if metadata["labels"].get(key) == value:
        return []
    return [{"op": "add", "path": _pointer("labels", key), "value": value}]


def exclusion_operations(node: Obj) -> list[Operation]:
    """Label ``node`` out of load balancers and record that Lifeboat did ([] if it carries
    the label already: the operator's, or ours from an earlier delivery, left as it is).

    The label's absence is tested in the patch itself: an operator labelling the node
    between our read and our write makes the patch fail (422, read again), so a label we
    did not put there is never recorded as ours.
    """
    if nodes.excluded_from_load_balancers(node):
        return []
    metadata = node.get("metadata", {})
    return _add_member(metadata, "labels") + _add_member(metadata, "annotations")


def untaint_operations(node: Obj, key: str) -> list[Operation]:
    """The JSON patch that removes the PreferNoSchedule mark ``key`` ([] if absent), and
    with it the load balancer exclusion Lifeboat added, unless the node stays out of
    service under another of Lifeboat's taints."""
    existing = nodes.taints(node)
    kept = _without_mark(existing, key)
    if len(kept) == len(existing):
        return []
    operations: list[Operation] = [
        {"op": "test", "path": "/spec/taints", "value": existing},
        {"op": "replace", "path": "/spec/taints", "value": kept},
    ]
    if not any(_out_of_service(t) for t in kept):
        operations += release_operations(node)
    return operations


def restore_operations(
    node: Obj,
    key: str,
    ended: str | None = None,
    end: tuple[Notice, datetime] | None = None,
) -> list[Operation]:
    """The JSON patch that undoes Lifeboat's taint ``key`` (any effect) on a node that stays
    ([] if it carries none): the taint removed and, unless another of Lifeboat's taints
    keeps it out of service, the node uncordoned and its exclusion label (if Lifeboat put it
    there) taken off. The cordon Lifeboat set with the taint is undone with it. ``ended``:
    the maintenance's start, recorded in ``lifeboat.dev/maintenance-ended``.

    ``end``: the notice of the maintenance that ended, and when. With holds recorded on the
    node (``lifeboat.marks.maintenance_holds``) only the entries it names end; while another
    maintenance still holds the node, only the record changes and the node stays out."""
    existing = nodes.taints(node)
    kept = [t for t in existing if t.get("key") != key]
    if len(kept) == len(existing):
        return []
    holds = holds_of(node) if end is not None else []
    after = ended_holds(holds, *end) if end is not None else []
    if holds and after == holds:
        return []  # names no maintenance the node is held for: decide said so already
    operations: list[Operation] = holds_operations(node, after) if holds else []
    if ended is not None:
        operations += _set_annotation(node, node_marks.MAINTENANCE_ENDED_ANNOTATION, ended)
    if any(hold.active for hold in after):
        return operations  # still held for another maintenance: the node stays out
    operations = [
        {"op": "test", "path": "/spec/taints", "value": existing},
        {"op": "replace", "path": "/spec/taints", "value": kept},
        *operations,
    ]
    if (
        key == node_marks.taint_key(Kind.SCHEDULED_CHANGE)
        and node_marks.EC2_MAINTENANCE_LABEL in nodes.labels_of(node)
        and not any(hold.code for hold in after)
    ):
        # Undone, and no EC2 event's end to remember: no longer one of the nodes each sweep
        # looks at (lifeboat.flow.sweep_holds). An ended EC2 hold keeps the label, so that the
        # sweep tells a re-listed event for a new hold.
        operations.append(
            {"op": "remove", "path": _pointer("labels", node_marks.EC2_MAINTENANCE_LABEL)}
        )
    if any(_out_of_service(t) for t in kept):
        return operations
    if node.get("spec", {}).get("unschedulable"):
        operations += [
            {"op": "test", "path": "/spec/unschedulable", "value": True},
            {"op": "remove", "path": "/spec/unschedulable"},
        ]
    return operations + release_operations(node)


def _set_annotation(node: Obj, key: str, value: str) -> list[Operation]:
    metadata = node.get("metadata", {})
    if metadata.get("annotations") is None:
        return [
            {"op": "test", "path": "/metadata/annotations", "value": None},
            {"op": "add", "path": "/metadata/annotations", "value": {key: value}},
        ]
    return [{"op": "add", "path": _pointer("annotations", key), "value": value}]


def releases_exclusion(node: Obj, key: str) -> bool:
    """Whether ``untaint_operations(node, key)`` takes Lifeboat's exclusion label off."""
    existing = nodes.taints(node)
    kept = _without_mark(existing, key)
    return (
        len(kept) < len(existing)
        and not any(_out_of_service(t) for t in kept)
        and node_marks.excluded_by_lifeboat(node)
        and nodes.excluded_from_load_balancers(node)
    )


def _without_mark(taints: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [
        t for t in taints if not (t.get("key") == key and t.get("effect") == "PreferNoSchedule")
    ]


def release_operations(node: Obj) -> list[Operation]:
    """Take the exclusion label off ``node`` if Lifeboat put it there ([] otherwise: an
    operator's label is theirs). The recorded ownership is tested in the patch, so a
    concurrent change makes it fail (422, read again) rather than remove the wrong label."""
    if not node_marks.excluded_by_lifeboat(node):
        return []
    annotation = _pointer("annotations", node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION)
    owned = nodes.annotations_of(node)[node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION]
    operations: list[Operation] = [
        {"op": "test", "path": annotation, "value": owned},
        {"op": "remove", "path": annotation},
    ]
    if nodes.excluded_from_load_balancers(node):
        label = _pointer("labels", nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL)
        value = nodes.labels_of(node)[nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL]
        operations += [
            {"op": "test", "path": label, "value": value},
            {"op": "remove", "path": label},
        ]
    return operations


def _out_of_service(taint: Mapping[str, Any]) -> bool:
    """One of Lifeboat's taints that takes a node out of service (not a waiting mark)."""
    key = str(taint.get("key", ""))
    return key.startswith(f"{node_marks.DOMAIN}/") and taint.get("effect") != "PreferNoSchedule"


def _pointer(field: str, key: str) -> str:
    """The JSON pointer (RFC 6901: "~" and "/" escaped) of ``metadata.<field>[key]``."""
    return f"/metadata/{field}/" + key.replace("~", "~0").replace("/", "~1")


# What the exclusion adds: the well-known label, and the record that Lifeboat added it.
_EXCLUSION = {
    "labels": nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL,
    "annotations": node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION,
}


def _add_member(metadata: Obj | None, field: str) -> list[Operation]:
    """Set the exclusion's member of ``metadata.<field>`` to "true". ``add`` replaces what
    is there, so the label is first tested absent (see ``exclusion_operations``); without
    the map (``metadata`` None: not read, taken to have one), the whole map is added, first
    tested absent as well."""
    key = _EXCLUSION[field]
    if metadata is not None and metadata.get(field) is None:
        path = f"/metadata/{field}"
        return [
            {"op": "test", "path": path, "value": None},
            {"op": "add", "path": path, "value": {key: "true"}},
        ]
    path = _pointer(field, key)
    added: Operation = {"op": "add", "path": path, "value": "true"}
    if field == "labels":
        return [{"op": "test", "path": path, "value": None}, added]
    return [added]


def unread_taint_variants(
    provider_id: str, key: str, effect: str, exclude_from_load_balancers: bool = False
) -> tuple[list[Operation], list[Operation]]:
    """Two JSON patches that taint and cordon a Node that was not read first, each valid for
    one shape of the node: (no ``spec.taints`` yet, some taints already).

    Reading the node before patching it costs a request on the hottest path (two minutes
    of warning). Both patches first test ``spec.providerID``: node names are reused, so they
    apply only to the node of this very instance. The first tests ``spec.taints`` against
    null, which json-patch answers true for a missing member, then adds the list; the second
    appends to the list the node has (``/-``), which the API server applies to the list as
    stored, so a concurrent writer's taint is kept. If our taint is there already, the
    second is refused (a duplicate taint is invalid) and the caller reads the node instead.

    With ``exclude_from_load_balancers`` both also label the node out of load balancers and
    record that Lifeboat did, after testing that the label is absent: a node the operator
    labelled already fits neither, and is read and patched without touching its label (two
    requests more, only for such a node). Nodes always have labels (the kubelet registers
    them with ``kubernetes.io/hostname``) and annotations (the attach-detach one); one
    without the latter fits neither either, and is read.
    """
    guard: Operation = {"op": "test", "path": "/spec/providerID", "value": provider_id}
    # Nor to a node already being deleted (Karpenter's termination controller drains it):
    # tested null, as json-patch answers for a missing member; it then is read, and decide
    # adds nothing to Karpenter's deletion.
    alive: Operation = {"op": "test", "path": "/metadata/deletionTimestamp", "value": None}
    taint = {"key": key, "effect": effect}
    cordon: Operation = {"op": "add", "path": "/spec/unschedulable", "value": True}
    no_taints_yet: list[Operation] = [
        guard,
        alive,
        {"op": "test", "path": "/spec/taints", "value": None},
        {"op": "add", "path": "/spec/taints", "value": [taint]},
        cordon,
    ]
    some_taints: list[Operation] = [
        guard,
        alive,
        {"op": "add", "path": "/spec/taints/-", "value": taint},
        cordon,
    ]
    if exclude_from_load_balancers:
        exclusion = _add_member(None, "labels") + _add_member(None, "annotations")
        no_taints_yet += exclusion
        some_taints += exclusion
    return no_taints_yet, some_taints


def rollback_operations(node: Obj, key: str) -> list[Operation]:
    """The JSON patch that undoes a rotation's marks on ``node`` after its rollback ([] if
    none is left): its taints (``key``: out of service, and its waiting mark) removed; and,
    unless another of Lifeboat's holds keeps the node out of service (an AWS notice's taint:
    :func:`other_hold`), uncordoned and the load balancer exclusion taken off if Lifeboat put
    it there. The taint list read is tested, as everywhere."""
    existing = nodes.taints(node)
    kept = [t for t in existing if t.get("key") != key]
    operations: list[Operation] = []
    if len(kept) < len(existing):
        operations += [
            {"op": "test", "path": "/spec/taints", "value": existing},
            {"op": "replace", "path": "/spec/taints", "value": kept},
        ]
    if other_hold(node, key) is not None:
        return operations  # cordon and exclusion belong to that hold now
    if node.get("spec", {}).get("unschedulable"):
        operations += [
            {"op": "test", "path": "/spec/unschedulable", "value": True},
            {"op": "remove", "path": "/spec/unschedulable"},
        ]
    return operations + release_operations(node)


def other_hold(node: Obj, key: str) -> str | None:
    """The key of a taint of Lifeboat's other than ``key`` that takes ``node`` out of
    service (another notice's hold: an AWS Health retirement, a Spot warning), if any."""
    for taint in nodes.taints(node):
        if _out_of_service(taint) and taint.get("key") != key:
            return str(taint.get("key"))
    return None

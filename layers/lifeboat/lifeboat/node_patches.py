"""The JSON patches (RFC 6902) Lifeboat sends to Nodes. Pure: built from what is known.

``spec.taints`` is an atomic list (``+listType=atomic``): a merge or strategic-merge patch
replaces it whole, so a writer that read the list before another changed it would lose the
other's taint. Lifeboat therefore sends JSON patches, guarded by ``test`` operations, and
the API server (evanphx/json-patch) applies them to the object as stored, all or nothing:
422 when a test fails.
"""

from __future__ import annotations

from typing import Any

from lifeboat import nodes
from lifeboat.objects import Obj

Operation = dict[str, Any]


def taint_operations(node: Obj, key: str, effect: str, cordon: bool) -> list[Operation]:
    """The JSON patch that puts Lifeboat's taint on ``node`` and cordons it ([] if done).

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
    return operations


def untaint_operations(node: Obj, key: str) -> list[Operation]:
    """The JSON patch that removes the PreferNoSchedule mark ``key`` ([] if absent)."""
    existing = nodes.taints(node)
    kept = [
        t for t in existing if not (t.get("key") == key and t.get("effect") == "PreferNoSchedule")
    ]
    if len(kept) == len(existing):
        return []
    return [
        {"op": "test", "path": "/spec/taints", "value": existing},
        {"op": "replace", "path": "/spec/taints", "value": kept},
    ]


def unread_taint_variants(
    provider_id: str, key: str, effect: str
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
    """
    guard: Operation = {"op": "test", "path": "/spec/providerID", "value": provider_id}
    taint = {"key": key, "effect": effect}
    cordon: Operation = {"op": "add", "path": "/spec/unschedulable", "value": True}
    no_taints_yet: list[Operation] = [
        guard,
        {"op": "test", "path": "/spec/taints", "value": None},
        {"op": "add", "path": "/spec/taints", "value": [taint]},
        cordon,
    ]
    some_taints: list[Operation] = [
        guard,
        {"op": "add", "path": "/spec/taints/-", "value": taint},
        cordon,
    ]
    return no_taints_yet, some_taints

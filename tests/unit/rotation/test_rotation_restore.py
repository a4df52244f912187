"""lifeboat.rotation.rollback.restore against a scripted API (issue 35, item 5: the mutants
that survived the rotation tests): a node name reused by another instance is not ours; a
node whose NodeClaim is being deleted is not restored; a patch refused with 409 or 422 is
retried on a fresh read, any other error is reported; a pending hand-over is cancelled
first, and a node it cannot be cancelled for is reported as not restorable."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from kubemu.patch import apply_json_patch
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, KubeError
from lifeboat.marks import node_marks
from lifeboat.marks.handover import PROTECTED_ANNOTATION
from lifeboat.rotation.model import NodePhase, Rotation, RotationNode
from lifeboat.rotation.request import RotationSpec
from lifeboat.rotation.rollback import restore

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
TAINT = {"key": "lifeboat.dev/rotation", "effect": "NoSchedule"}


class Api:
    """Nodes and NodeClaims by name; ``refuse``: statuses the next node patches fail with."""

    def __init__(self, objects: list[dict[str, Any]], refuse: list[int] | None = None) -> None:
        self.objects = {(o["kind"], o["metadata"]["name"]): o for o in objects}
        self.refuse = list(refuse or [])
        self.patches: list[str] = []

    def get_node(self, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.objects.get(("Node", name)))

    def get_nodeclaim(self, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.objects.get(("NodeClaim", name)))

    def list_nodeclaims(self, selector: str) -> list[dict[str, Any]]:
        key, value = selector.split("=")
        return [
            copy.deepcopy(o)
            for (kind, _), o in self.objects.items()
            if kind == "NodeClaim" and nodes.labels_of(o).get(key) == value
        ]

    def _patch(self, kind: str, name: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
        self.patches.append(f"{kind}/{name}")
        if kind == "Node" and self.refuse:
            raise KubeError(self.refuse.pop(0), "refused")
        patched: dict[str, Any] = apply_json_patch(self.objects[(kind, name)], operations)
        self.objects[(kind, name)] = patched
        return patched

    def patch_node(self, name: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
        return self._patch("Node", name, operations)

    def patch_nodeclaim(self, name: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
        return self._patch("NodeClaim", name, operations)


def node(name: str = "n-1", instance: str = "i-1", **annotations: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {}, "annotations": dict(annotations)},
        "spec": {
            "providerID": f"aws:///us-east-1a/{instance}",
            "taints": [TAINT],
            "unschedulable": True,
        },
    }


def claim(
    name: str, *, deleting: bool = False, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(labels or {}), "annotations": {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    return {"kind": "NodeClaim", "metadata": meta, "spec": {}, "status": {}}


def rotation(nodeclaim: str | None = None) -> Rotation:
    spec = RotationSpec("r", labels={"a": "b"})
    taken = RotationNode("n-1", "i-1", nodeclaim, NodePhase.REPLACING, since=NOW)
    return Rotation(spec, "request-1", NOW, (taken,))


def run(api: Api, nodeclaim: str | None = None) -> tuple[bool, str]:
    [result] = restore(cast(KubeApi, api), rotation(nodeclaim), ["n-1"])
    return result.undone, result.note


def test_a_node_name_reused_by_another_instance_is_not_restored() -> None:
    api = Api([node(instance="i-2")])
    assert run(api) == (False, "not undone: the node is gone")
    assert api.patches == []
    assert run(Api([])) == (False, "not undone: the node is gone")


def test_a_node_whose_claim_is_being_deleted_is_not_restored() -> None:
    api = Api([node(), claim("c-1", deleting=True)])
    assert run(api, "c-1") == (False, "not undone: its NodeClaim c-1 is being deleted")
    assert api.patches == []
    assert run(Api([node()]), "c-1")[0] is False  # the claim gone altogether
    assert run(Api([node(), claim("c-1")]), "c-1") == (True, "returned to service")


@pytest.mark.parametrize("status", [409, 422])
def test_a_conflicting_patch_is_retried_on_a_fresh_read(status: int) -> None:
    api = Api([node()], refuse=[status])
    assert run(api) == (True, "returned to service")
    assert api.patches == ["Node/n-1", "Node/n-1"]
    restored = api.objects[("Node", "n-1")]
    assert nodes.taints(restored) == [] and not restored["spec"].get("unschedulable")


def test_other_errors_and_a_conflict_on_every_attempt_are_reported() -> None:
    api = Api([node()], refuse=[403])
    undone, note = run(api)
    assert not undone and note.startswith("not undone: ") and api.patches == ["Node/n-1"]
    api = Api([node()], refuse=[409, 409, 409])
    undone, note = run(api)
    assert not undone and note.startswith("not undone: ") and len(api.patches) == 3


def test_a_pending_hand_over_is_cancelled_before_the_node_returns() -> None:
    held = node(**{nodes.DO_NOT_DISRUPT: "true", PROTECTED_ANNOTATION: "true"})
    replacement = claim("c-2", labels={node_marks.REPLACES_LABEL: "c-1"})
    replacement["metadata"]["annotations"] = {
        nodes.DO_NOT_DISRUPT: "true",
        PROTECTED_ANNOTATION: "true",
    }
    api = Api([held, claim("c-1"), replacement])
    assert run(api, "c-1") == (True, "returned to service")
    assert nodes.annotations_of(api.objects[("Node", "n-1")]) == {}
    assert nodes.annotations_of(api.objects[("NodeClaim", "c-2")]) == {}
    # Refused: the node is reported as not restorable, its marks left as they were.
    api = Api([held, claim("c-1")], refuse=[403])
    undone, note = run(api, "c-1")
    assert not undone and note.startswith("not undone: its pending hand-over could not be")
    assert nodes.taints(api.objects[("Node", "n-1")]) == [TAINT]


@pytest.mark.parametrize("phase", ["Succeeded", "Unknown", "Pending", "Failed"])
def test_only_a_running_pod_is_serving_whatever_its_stale_ready_condition(phase: str) -> None:
    """observe.is_serving (a surviving mutant, ``phase >= "Running"``): a pod whose node
    went silent keeps its last Ready condition while its phase is Unknown; it serves no one."""
    from lifeboat.rotation.observe import is_serving

    def pod(phase: str) -> dict[str, Any]:
        ready = [{"type": "Ready", "status": "True"}]
        return {"metadata": {"name": "p"}, "status": {"phase": phase, "conditions": ready}}

    assert not is_serving(pod(phase))
    assert is_serving(pod("Running"))


@pytest.mark.parametrize(
    ("effect", "going"), [("PreferNoSchedule", False), ("NoSchedule", True), ("NoExecute", True)]
)
def test_another_notices_waiting_mark_does_not_make_a_node_already_going(
    effect: str, going: bool
) -> None:
    """observe.snapshot (a surviving mutant, ``effect <= "PreferNoSchedule"``): a node
    another notice only marks (PreferNoSchedule: waiting for its window) is rotated; one
    another notice took out of service is already going, and skipped."""
    from lifeboat.rotation.observe import snapshot

    marked = node()
    marked["spec"]["taints"] = [{"key": "lifeboat.dev/rebalance-recommendation", "effect": effect}]
    api = Api([marked])
    api.list_pods_on_node = lambda name: []  # type: ignore[attr-defined]
    taken = rotation().nodes[0]
    seen = snapshot(cast(KubeApi, api), taken)
    assert seen.present
    assert (seen.going is not None) is going

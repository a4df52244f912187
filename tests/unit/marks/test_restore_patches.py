"""node_patches.rollback_operations: what a rotation's rollback sends a node (issue 28),
applied with the emulator's RFC 6902 implementation (as the API server applies it)."""

from __future__ import annotations

from typing import Any

import pytest

from kubemu import ApiError
from kubemu.patch import apply_json_patch
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.marks.node_patches import other_hold, rollback_operations


def node(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": {}, "annotations": {}}, "spec": spec}


ROTATION = "lifeboat.dev/rotation"


def test_the_rotations_taint_goes_others_stay_and_the_node_is_uncordoned() -> None:
    """Issue 35, item 3: only the rotation's own marks go (another notice's waiting mark
    stays: it is that notice's)."""
    taints = [
        {"key": "lifeboat.dev/rotation", "effect": "NoSchedule"},
        {"key": "lifeboat.dev/spot-interruption", "effect": "PreferNoSchedule"},
        {"key": "dedicated", "value": "shop", "effect": "NoSchedule"},
    ]
    before = node(taints=taints, unschedulable=True)
    before["metadata"]["labels"][nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL] = "true"
    before["metadata"]["annotations"][node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION] = "true"
    after = apply_json_patch(before, rollback_operations(before, ROTATION))
    assert after["spec"] == {"taints": taints[1:]}
    assert after["metadata"] == {"name": "n", "labels": {}, "annotations": {}}


def test_a_node_an_aws_notice_holds_stays_cordoned_and_excluded() -> None:
    """Issue 35, item 3: ``--rollback`` stripped every lifeboat.dev/* taint, so a node facing
    an AWS Health retirement in 2 days went back into service."""
    retirement = {"key": "lifeboat.dev/scheduled-change", "effect": "NoSchedule"}
    taints = [{"key": ROTATION, "effect": "NoSchedule"}, retirement]
    before = node(taints=taints, unschedulable=True)
    before["metadata"]["labels"][nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL] = "true"
    before["metadata"]["annotations"][node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION] = "true"
    assert other_hold(before, ROTATION) == "lifeboat.dev/scheduled-change"
    after = apply_json_patch(before, rollback_operations(before, ROTATION))
    assert after["spec"] == {"taints": [retirement], "unschedulable": True}
    assert after["metadata"] == before["metadata"]
    assert other_hold(node(taints=taints[:1]), ROTATION) is None


def test_an_operators_load_balancer_label_is_left_alone() -> None:
    before = node(unschedulable=True)
    before["metadata"]["labels"][nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL] = "true"
    after = apply_json_patch(before, rollback_operations(before, ROTATION))
    assert after["metadata"]["labels"] == {nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL: "true"}
    assert "unschedulable" not in after["spec"]


def test_a_node_with_nothing_of_lifeboats_needs_no_patch() -> None:
    assert rollback_operations(node(taints=[{"key": "a", "effect": "NoSchedule"}]), ROTATION) == []


def test_the_patch_tests_what_it_read() -> None:
    before = node(taints=[{"key": "lifeboat.dev/rotation", "effect": "NoSchedule"}])
    changed = node(
        taints=[
            {"key": "lifeboat.dev/rotation", "effect": "NoSchedule"},
            {"key": "x", "effect": "NoSchedule"},
        ]
    )
    with pytest.raises(ApiError):
        apply_json_patch(changed, rollback_operations(before, ROTATION))

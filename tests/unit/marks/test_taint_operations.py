"""``taint_operations()``: the JSON patch that taints and cordons a node, guarded by a test.

Patches are applied with the Kubernetes emulator's RFC 6902 implementation (what the
integration tests' API server applies).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kubemu import ApiError
from kubemu.patch import apply_json_patch
from lifeboat.marks.node_patches import taint_operations, unread_taint_variants

KEY = "lifeboat.dev/spot-interruption"


def node(
    taints: Sequence[Mapping[str, Any]] | None = None, unschedulable: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {"providerID": "aws:///us-east-1a/i-1"}
    if taints is not None:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": "n1", "resourceVersion": "42"}, "spec": spec}


def test_existing_taints_are_tested_then_replaced() -> None:
    other = {"key": "workload", "value": "batch", "effect": "NoSchedule"}
    ops = taint_operations(node([other]), KEY, "NoSchedule", cordon=True)
    assert ops == [
        {"op": "test", "path": "/spec/taints", "value": [other]},
        {
            "op": "replace",
            "path": "/spec/taints",
            "value": [other, {"key": KEY, "effect": "NoSchedule"}],
        },
        {"op": "add", "path": "/spec/unschedulable", "value": True},
    ]


def test_no_taints_tests_the_resource_version_then_adds() -> None:
    ops = taint_operations(node(), KEY, "NoSchedule", cordon=True)
    assert ops == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "add", "path": "/spec/taints", "value": [{"key": KEY, "effect": "NoSchedule"}]},
        {"op": "add", "path": "/spec/unschedulable", "value": True},
    ]


def test_already_tainted_and_cordoned_needs_nothing() -> None:
    done = node([{"key": KEY, "effect": "NoSchedule"}], unschedulable=True)
    assert taint_operations(done, KEY, "NoSchedule", cordon=True) == []


def test_already_tainted_but_schedulable_only_cordons() -> None:
    tainted = node([{"key": KEY, "effect": "NoSchedule"}])
    assert taint_operations(tainted, KEY, "NoSchedule", cordon=True) == [
        {"op": "add", "path": "/spec/unschedulable", "value": True}
    ]


def test_pending_prefer_no_schedule_taint_of_the_same_key_is_replaced() -> None:
    other = {"key": "workload", "value": "batch", "effect": "NoSchedule"}
    pending = {"key": KEY, "effect": "PreferNoSchedule"}
    ops = taint_operations(node([pending, other]), KEY, "NoSchedule", cordon=True)
    assert ops[0] == {"op": "test", "path": "/spec/taints", "value": [pending, other]}
    assert ops[1] == {
        "op": "replace",
        "path": "/spec/taints",
        "value": [other, {"key": KEY, "effect": "NoSchedule"}],
    }


def test_mark_pending_does_not_cordon() -> None:
    ops = taint_operations(node([]), KEY, "PreferNoSchedule", cordon=False)
    assert [op["op"] for op in ops] == ["test", "replace"]
    assert ops[1]["value"] == [{"key": KEY, "effect": "PreferNoSchedule"}]
    assert not any(op["path"] == "/spec/unschedulable" for op in ops)


@pytest.mark.parametrize(
    "before",
    [
        node(),
        node([]),
        node([{"key": "workload", "value": "batch", "effect": "NoSchedule"}]),
        node([{"key": KEY, "effect": "PreferNoSchedule"}]),
        node([{"key": KEY, "effect": "NoSchedule"}, {"key": KEY, "effect": "NoExecute"}]),
    ],
)
def test_applying_the_patch_gives_exactly_one_taint_and_a_cordon(before: dict[str, Any]) -> None:
    after = apply_json_patch(before, taint_operations(before, KEY, "NoSchedule", True))
    ours = [t for t in after["spec"]["taints"] if t["key"] == KEY]
    assert ours == [{"key": KEY, "effect": "NoSchedule"}]
    assert after["spec"]["unschedulable"] is True
    # Other taints survive.
    others = [t for t in before["spec"].get("taints") or [] if t["key"] != KEY]
    assert [t for t in after["spec"]["taints"] if t["key"] != KEY] == others
    # And a second pass finds nothing left to do.
    assert taint_operations(after, KEY, "NoSchedule", True) == []


def test_stale_read_makes_the_patch_fail() -> None:
    read = node([{"key": "workload", "value": "batch", "effect": "NoSchedule"}])
    ops = taint_operations(read, KEY, "NoSchedule", True)
    current = node([{"key": "other.example.com/new", "effect": "NoSchedule"}])
    with pytest.raises(ApiError) as failed:
        apply_json_patch(current, ops)
    assert failed.value.code == 422


def test_untaint_removes_only_the_pending_mark_of_its_key() -> None:
    from lifeboat.marks.node_patches import untaint_operations

    taints = [
        {"key": "lifeboat.dev/rebalance-recommendation", "effect": "PreferNoSchedule"},
        {"key": "workload", "value": "batch", "effect": "NoSchedule"},
    ]
    node = {"metadata": {"name": "n", "resourceVersion": "7"}, "spec": {"taints": taints}}
    operations = untaint_operations(node, "lifeboat.dev/rebalance-recommendation")
    assert operations == [
        {"op": "test", "path": "/spec/taints", "value": taints},
        {"op": "replace", "path": "/spec/taints", "value": [taints[1]]},
    ]
    assert untaint_operations(node, "lifeboat.dev/scheduled-change") == []


# -- tainting a node that was not read (issue 13.4) ------------------------------------------

PROVIDER = "aws:///us-east-1a/i-0a1b2c3d4e5f60001"


def unread_node(taints: list[dict[str, Any]] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"providerID": PROVIDER}
    if taints is not None:
        spec["taints"] = taints
    return {"metadata": {"name": "n", "resourceVersion": "7"}, "spec": spec}


def test_the_first_unread_patch_fits_a_node_without_taints() -> None:
    """json-patch (evanphx, as the API server runs it) tests a missing member equal to
    null: the first variant adds the whole list only when there was none."""
    first, second = unread_taint_variants(PROVIDER, KEY, "NoSchedule")
    after = apply_json_patch(unread_node(None), first)
    assert after["spec"]["taints"] == [{"key": KEY, "effect": "NoSchedule"}]
    assert after["spec"]["unschedulable"] is True
    with pytest.raises(ApiError):  # no list to append to
        apply_json_patch(unread_node(None), second)


def test_the_second_unread_patch_appends_to_the_taints_a_node_has() -> None:
    other = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    first, second = unread_taint_variants(PROVIDER, KEY, "NoSchedule")
    with pytest.raises(ApiError):  # the list exists: the null test fails
        apply_json_patch(unread_node([other]), first)
    after = apply_json_patch(unread_node([other]), second)
    assert after["spec"]["taints"] == [other, {"key": KEY, "effect": "NoSchedule"}]


def test_an_unread_patch_never_applies_to_another_instances_node() -> None:
    """Node names (EC2's private DNS names) are reused: the providerID guard refuses."""
    for variant in unread_taint_variants(
        "aws:///us-east-1a/i-0fffffffffffffff0", KEY, "NoSchedule"
    ):
        with pytest.raises(ApiError):
            apply_json_patch(unread_node(None), variant)
        with pytest.raises(ApiError):
            apply_json_patch(unread_node([]), variant)


def test_an_unread_patch_never_applies_to_a_node_being_deleted() -> None:
    """Karpenter deletes the NodeClaim and then the Node, which its termination finalizer
    keeps while it drains: such a node is read instead, and gets nothing more."""
    no_taints: tuple[list[dict[str, Any]] | None, ...] = (None, [])
    for taints in no_taints:
        node = unread_node(taints)
        node["metadata"]["deletionTimestamp"] = "2026-12-01T17:59:00Z"
        for variant in unread_taint_variants(PROVIDER, KEY, "NoSchedule"):
            with pytest.raises(ApiError):
                apply_json_patch(node, variant)

"""The load balancer exclusion in Lifeboat's node patches.

Kubernetes' well-known label ``node.kubernetes.io/exclude-from-external-load-balancers``
("Well-Known Labels, Annotations and Taints"; ``LabelNodeExcludeBalancers`` in k8s.io/api):
the service controller's ``nodeIncludedPredicate`` and the AWS Load Balancer Controller leave
a node carrying it, whatever its value, out of load balancers' targets. Lifeboat adds it in
the patch that taints and cordons a node about to go, records that it did, and removes it on
release only if it did. Patches are applied with the emulator's RFC 6902 implementation
(evanphx/json-patch's semantics, what the API server runs).
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from kubemu import ApiError
from kubemu.patch import apply_json_patch
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.marks.node_patches import (
    releases_exclusion,
    taint_operations,
    unread_taint_variants,
    untaint_operations,
)

KEY = "lifeboat.dev/spot-interruption"
MARK = "lifeboat.dev/rebalance-recommendation"
LABEL = nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL
OWNED = node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION
PROVIDER = "aws:///us-east-1a/i-0a1b2c3d4e5f60001"


def node(
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "n", "resourceVersion": "7"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {"providerID": PROVIDER}
    if taints is not None:
        spec["taints"] = taints
    return {"metadata": metadata, "spec": spec}


def labelled_by_us(**extra: Any) -> dict[str, Any]:
    return node({"kubernetes.io/hostname": "n", LABEL: "true"}, {OWNED: "true"}, **extra)


def test_the_label_and_its_ownership_go_in_the_taint_and_cordon_patch() -> None:
    before = node({"kubernetes.io/hostname": "n"}, {"other": "x"})
    ops = taint_operations(before, KEY, "NoSchedule", True, exclude_from_load_balancers=True)
    label = "/metadata/labels/node.kubernetes.io~1exclude-from-external-load-balancers"
    owned = "/metadata/annotations/lifeboat.dev~1excluded-from-load-balancers"
    # One patch: the taint (test + add), the cordon, then the label, tested absent first.
    assert [op["op"] for op in ops[:3]] == ["test", "add", "add"]
    assert ops[3:] == [
        {"op": "test", "path": label, "value": None},
        {"op": "add", "path": label, "value": "true"},
        {"op": "add", "path": owned, "value": "true"},
    ]
    after = apply_json_patch(before, ops)
    assert after["metadata"]["labels"] == {"kubernetes.io/hostname": "n", LABEL: "true"}
    assert after["metadata"]["annotations"] == {"other": "x", OWNED: "true"}
    assert after["spec"]["taints"] == [{"key": KEY, "effect": "NoSchedule"}]
    assert after["spec"]["unschedulable"] is True
    # Done: a second pass (a redelivery) finds nothing to do.
    assert taint_operations(after, KEY, "NoSchedule", True, exclude_from_load_balancers=True) == []


def test_a_node_without_label_or_annotation_maps_gets_both_maps() -> None:
    before = node()
    ops = taint_operations(before, KEY, "NoSchedule", True, exclude_from_load_balancers=True)
    after = apply_json_patch(before, ops)
    assert after["metadata"]["labels"] == {LABEL: "true"}
    assert after["metadata"]["annotations"] == {OWNED: "true"}


def test_an_operator_label_is_left_alone_and_not_claimed() -> None:
    before = node({LABEL: "ops-team"}, {})
    ops = taint_operations(before, KEY, "NoSchedule", True, exclude_from_load_balancers=True)
    after = apply_json_patch(before, ops)
    assert after["metadata"]["labels"] == {LABEL: "ops-team"}
    assert OWNED not in after["metadata"]["annotations"]


def test_a_label_set_between_read_and_write_fails_the_patch_rather_than_being_claimed() -> None:
    read = node({"kubernetes.io/hostname": "n"}, {}, taints=[])
    ops = taint_operations(read, KEY, "NoSchedule", True, exclude_from_load_balancers=True)
    current = node({"kubernetes.io/hostname": "n", LABEL: ""}, {}, taints=[])
    with pytest.raises(ApiError) as failed:
        apply_json_patch(current, ops)
    assert failed.value.code == 422


def test_setting_off_adds_nothing() -> None:
    before = node({"kubernetes.io/hostname": "n"}, {})
    ops = taint_operations(before, KEY, "NoSchedule", True, exclude_from_load_balancers=False)
    after = apply_json_patch(before, ops)
    assert after["metadata"] == before["metadata"]


def test_a_deferred_mark_does_not_exclude_but_acting_on_it_later_does() -> None:
    """The PreferNoSchedule mark keeps the node in service: Lifeboat's act passes
    ``exclude_from_load_balancers`` only with the cordon; the later TAINT_AND_CORDON adds it."""
    before = node({"kubernetes.io/hostname": "n"}, {})
    marked = apply_json_patch(before, taint_operations(before, MARK, "PreferNoSchedule", False))
    assert LABEL not in marked["metadata"]["labels"]
    acting = taint_operations(marked, MARK, "NoSchedule", True, exclude_from_load_balancers=True)
    acted = apply_json_patch(marked, acting)
    assert acted["spec"]["taints"] == [{"key": MARK, "effect": "NoSchedule"}]
    assert acted["metadata"]["labels"][LABEL] == "true"
    assert acted["metadata"]["annotations"][OWNED] == "true"


# -- release ---------------------------------------------------------------------------------


def test_letting_a_notice_go_removes_the_label_lifeboat_added() -> None:
    before = labelled_by_us(taints=[{"key": MARK, "effect": "PreferNoSchedule"}])
    assert releases_exclusion(before, MARK)
    after = apply_json_patch(before, untaint_operations(before, MARK))
    assert after["spec"]["taints"] == []
    assert after["metadata"]["labels"] == {"kubernetes.io/hostname": "n"}
    assert after["metadata"]["annotations"] == {}


def test_letting_a_notice_go_keeps_an_operator_label() -> None:
    before = node({LABEL: "true"}, {}, taints=[{"key": MARK, "effect": "PreferNoSchedule"}])
    assert not releases_exclusion(before, MARK)
    after = apply_json_patch(before, untaint_operations(before, MARK))
    assert after["spec"]["taints"] == []
    assert after["metadata"]["labels"] == {LABEL: "true"}


def test_the_label_stays_while_another_lifeboat_taint_keeps_the_node_out_of_service() -> None:
    """A deferred rebalance let go after a Spot warning acted on the node: the node is still
    going, so it stays out of load balancers."""
    taints = [
        {"key": MARK, "effect": "PreferNoSchedule"},
        {"key": KEY, "effect": "NoSchedule"},
    ]
    before = labelled_by_us(taints=taints)
    assert not releases_exclusion(before, MARK)
    after = apply_json_patch(before, untaint_operations(before, MARK))
    assert after["spec"]["taints"] == [taints[1]]
    assert after["metadata"]["labels"][LABEL] == "true"
    assert after["metadata"]["annotations"][OWNED] == "true"


def test_no_pending_mark_no_release() -> None:
    before = labelled_by_us(taints=[])
    assert untaint_operations(before, MARK) == []
    assert not releases_exclusion(before, MARK)


def test_a_release_built_from_a_stale_read_fails_rather_than_removing_the_wrong_label() -> None:
    """The ownership annotation is tested in the patch: if it went (another writer released
    the label, and the operator then set their own), nothing of theirs is removed."""
    read = labelled_by_us(taints=[{"key": MARK, "effect": "PreferNoSchedule"}])
    ops = untaint_operations(read, MARK)
    current = node(
        {"kubernetes.io/hostname": "n", LABEL: "true"},
        {},
        taints=[{"key": MARK, "effect": "PreferNoSchedule"}],
    )
    with pytest.raises(ApiError) as failed:
        apply_json_patch(current, ops)
    assert failed.value.code == 422


# -- the unread patches of involuntary notices -----------------------------------------------


@pytest.mark.parametrize("taints", [None, [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]])
def test_one_unread_variant_labels_a_node_without_the_label(
    taints: list[dict[str, Any]] | None,
) -> None:
    before = node({"kubernetes.io/hostname": "n"}, {"a": "b"}, taints=taints)
    applied = []
    for variant in unread_taint_variants(PROVIDER, KEY, "NoSchedule", True):
        with contextlib.suppress(ApiError):
            applied.append(apply_json_patch(before, variant))
    [after] = applied
    assert after["metadata"]["labels"][LABEL] == "true"
    assert after["metadata"]["annotations"] == {"a": "b", OWNED: "true"}
    assert after["spec"]["unschedulable"] is True


@pytest.mark.parametrize("taints", [None, [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]])
def test_no_unread_variant_fits_a_node_the_operator_labelled(
    taints: list[dict[str, Any]] | None,
) -> None:
    """Neither claims an operator's label: both refuse, and the caller reads the node."""
    before = node({LABEL: "true"}, {}, taints=taints)
    for variant in unread_taint_variants(PROVIDER, KEY, "NoSchedule", True):
        with pytest.raises(ApiError):
            apply_json_patch(before, variant)
    # Read, the node gets its taint and cordon, its label untouched and unclaimed.
    ops = taint_operations(before, KEY, "NoSchedule", True, exclude_from_load_balancers=True)
    after = apply_json_patch(before, ops)
    assert after["metadata"] == {**before["metadata"], "labels": {LABEL: "true"}}


def test_unread_variants_without_the_setting_touch_no_metadata() -> None:
    for variant in unread_taint_variants(PROVIDER, KEY, "NoSchedule", False):
        # Tests only (the node must not be deleting): nothing of metadata is written.
        assert not any(op["path"].startswith("/metadata") and op["op"] != "test" for op in variant)

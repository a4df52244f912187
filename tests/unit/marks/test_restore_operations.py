"""Undoing Lifeboat's marks on a node that stays: ``restore_operations`` (a maintenance that
ended, a cordon-only rebalance released) and ``rollback_operations`` (a rotation rolled
back), and the bounds of ``untaint_operations`` / ``releases_exclusion``.

Each patch is applied with the emulator's RFC 6902 implementation (evanphx/json-patch's
semantics, what the API server runs), so a wrong ``test`` operation fails the patch here as
it would fail it there (422), and the node is checked as the API server would store it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemu import ApiError
from kubemu.patch import apply_json_patch
from lifeboat.events.notice import Kind
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.marks.node_patches import (
    ec2_maintenance_operations,
    releases_exclusion,
    restore_operations,
    rollback_operations,
    untaint_operations,
)

MAINTENANCE = node_marks.taint_key(Kind.SCHEDULED_CHANGE)
REBALANCE = node_marks.taint_key(Kind.REBALANCE_RECOMMENDATION)
ROTATION = node_marks.taint_key(Kind.ROTATION)
LABEL = nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL
OWNED = node_marks.EXCLUDED_BY_LIFEBOAT_ANNOTATION
# An operator's taints on both sides of Lifeboat's keys in sort order ("a..." < "lifeboat.dev/"
# < "z..."), so a filter that compares keys by order, not equality, is seen.
BEFORE = {"key": "a.example.com/dedicated", "value": "gpu", "effect": "NoSchedule"}
AFTER = {"key": "z.example.com/batch", "effect": "NoSchedule"}


START = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)


def node(
    *taints: dict[str, Any],
    cordoned: bool = True,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"providerID": "aws:///us-east-1a/i-0a1b2c3d4e5f60001"}
    spec["taints"] = [dict(t) for t in taints]
    if cordoned:
        spec["unschedulable"] = True
    metadata: dict[str, Any] = {"name": "n", "resourceVersion": "7"}
    metadata["labels"] = {"kubernetes.io/hostname": "n", **(labels or {})}
    if annotations is not None:
        metadata["annotations"] = annotations
    # As read from the API server: decoded JSON, no string shared with Lifeboat's constants
    # (a key compared by identity, not equality, would then never match).
    decoded: dict[str, Any] = json.loads(json.dumps({"metadata": metadata, "spec": spec}))
    return decoded


def excluded_by_us(*taints: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return node(*taints, labels={LABEL: "true"}, annotations={OWNED: "true"}, **extra)


def lifeboat_taint(key: str, effect: str = "NoSchedule") -> dict[str, Any]:
    return {"key": key, "effect": effect}


def test_a_restore_removes_only_its_taint_and_puts_the_node_back_in_service() -> None:
    """The maintenance ended: its taint off (the operator's taints kept, in order), the node
    uncordoned, the load balancer label Lifeboat added taken off with its record."""
    before = excluded_by_us(BEFORE, lifeboat_taint(MAINTENANCE), AFTER)
    after = apply_json_patch(before, restore_operations(before, MAINTENANCE))
    assert after["spec"]["taints"] == [BEFORE, AFTER]
    assert "unschedulable" not in after["spec"]
    assert LABEL not in after["metadata"]["labels"]
    assert OWNED not in after["metadata"].get("annotations", {})


def test_a_restore_of_a_taint_the_node_does_not_carry_is_no_patch() -> None:
    assert restore_operations(node(BEFORE, AFTER), MAINTENANCE) == []
    assert restore_operations(node(), MAINTENANCE) == []


def test_a_restore_leaves_the_node_out_while_another_lifeboat_taint_holds_it() -> None:
    """A Spot warning came on top of the maintenance: only the maintenance's taint goes;
    cordon and exclusion stay for the Spot warning."""
    spot = lifeboat_taint(node_marks.taint_key(Kind.SPOT_INTERRUPTION))
    before = excluded_by_us(lifeboat_taint(MAINTENANCE), spot)
    after = apply_json_patch(before, restore_operations(before, MAINTENANCE))
    assert after["spec"]["taints"] == [spot]
    assert after["spec"]["unschedulable"] is True
    assert after["metadata"]["labels"][LABEL] == "true"


def test_a_restore_records_the_end_and_drops_the_sweeps_label() -> None:
    """``ended`` goes in ``lifeboat.dev/maintenance-ended``; the EC2 maintenance label is
    taken off so the sweep no longer looks at the node."""
    before = node(
        lifeboat_taint(MAINTENANCE), labels={node_marks.EC2_MAINTENANCE_LABEL: "2026-12-01T14.00Z"}
    )
    ops = restore_operations(before, MAINTENANCE, ended="2026-12-01T14:00:00Z")
    after = apply_json_patch(before, ops)
    assert after["metadata"]["annotations"] == {
        node_marks.MAINTENANCE_ENDED_ANNOTATION: "2026-12-01T14:00:00Z"
    }
    assert node_marks.EC2_MAINTENANCE_LABEL not in after["metadata"]["labels"]


def test_a_restore_on_a_node_uncordoned_since_leaves_it_schedulable() -> None:
    before = node(lifeboat_taint(MAINTENANCE), cordoned=False)
    after = apply_json_patch(before, restore_operations(before, MAINTENANCE))
    assert after["spec"]["taints"] == []
    assert "unschedulable" not in after["spec"]


def test_a_restore_built_from_a_stale_read_fails_rather_than_undo_a_newer_cordon() -> None:
    """The patch tests what it read: taints changed, or the node uncordoned by someone else
    in between (``unschedulable: false``), fail it (422, read again)."""
    read = node(lifeboat_taint(MAINTENANCE))
    ops = restore_operations(read, MAINTENANCE)
    retainted = node(lifeboat_taint(MAINTENANCE), AFTER)
    with pytest.raises(ApiError):
        apply_json_patch(retainted, ops)
    uncordoned = node(lifeboat_taint(MAINTENANCE), cordoned=False)
    uncordoned["spec"]["unschedulable"] = False
    with pytest.raises(ApiError):
        apply_json_patch(uncordoned, ops)


def test_a_rollback_returns_the_node_to_service_and_keeps_the_operators_taints() -> None:
    """The rotation's taint off, uncordoned, Lifeboat's load balancer exclusion off; the
    operator's taints and another notice's waiting mark (issue 35) stay."""
    before = excluded_by_us(
        BEFORE,
        lifeboat_taint(node_marks.taint_key(Kind.ROTATION)),
        lifeboat_taint(REBALANCE, "PreferNoSchedule"),
        AFTER,
    )
    after = apply_json_patch(before, rollback_operations(before, ROTATION))
    assert after["spec"]["taints"] == [BEFORE, lifeboat_taint(REBALANCE, "PreferNoSchedule"), AFTER]
    assert "unschedulable" not in after["spec"]
    assert LABEL not in after["metadata"]["labels"]


def test_a_rollback_of_a_node_with_nothing_of_lifeboats_is_no_patch() -> None:
    assert rollback_operations(node(BEFORE, AFTER, cordoned=False), ROTATION) == []


def test_a_rollback_of_a_node_only_cordoned_uncordons_it() -> None:
    before = node(BEFORE)
    after = apply_json_patch(before, rollback_operations(before, ROTATION))
    assert after["spec"]["taints"] == [BEFORE]
    assert "unschedulable" not in after["spec"]


# A node object may carry any number of taints (the API server bounds only the object's
# size): past CPython's cache of small integers, list lengths compared by identity differ.
MANY = [{"key": f"example.com/t{i:03}", "effect": "NoSchedule"} for i in range(300)]


def test_untainting_a_mark_absent_from_a_node_with_300_taints_is_no_patch() -> None:
    assert untaint_operations(node(*MANY), REBALANCE) == []
    assert not releases_exclusion(excluded_by_us(*MANY), REBALANCE)


def test_untainting_a_mark_among_300_taints_releases_the_exclusion() -> None:
    before = excluded_by_us(*MANY, lifeboat_taint(REBALANCE, "PreferNoSchedule"))
    assert releases_exclusion(before, REBALANCE)
    after = apply_json_patch(before, untaint_operations(before, REBALANCE))
    assert after["spec"]["taints"] == MANY
    assert LABEL not in after["metadata"]["labels"]


def test_only_the_scheduled_change_taint_gets_the_sweeps_label() -> None:
    """``ec2_maintenance_operations``: a node carrying only an operator's taints (whatever
    their keys' order against Lifeboat's) is not one the sweep may end a maintenance on."""
    for other in (BEFORE, AFTER):
        assert ec2_maintenance_operations(node(other), START) == []
    marked = node(BEFORE, lifeboat_taint(MAINTENANCE, "PreferNoSchedule"))
    after = apply_json_patch(marked, ec2_maintenance_operations(marked, START))
    assert after["metadata"]["labels"][node_marks.EC2_MAINTENANCE_LABEL] == "20261208T090000Z"


def test_a_waiting_mark_of_another_notice_does_not_keep_the_node_out_of_service() -> None:
    """``_out_of_service``: a PreferNoSchedule mark (a voluntary notice still waiting) only
    steers new pods away; it is no reason to stay cordoned or out of load balancers once
    the maintenance's taint is undone. The mark itself stays."""
    mark = lifeboat_taint(REBALANCE, "PreferNoSchedule")
    before = excluded_by_us(lifeboat_taint(MAINTENANCE), mark)
    after = apply_json_patch(before, restore_operations(before, MAINTENANCE))
    assert after["spec"]["taints"] == [mark]
    assert "unschedulable" not in after["spec"]
    assert LABEL not in after["metadata"]["labels"]

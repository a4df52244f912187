"""The ``lifeboat.dev/ec2-maintenance`` label: set with the taint for an EC2 scheduled event,
taken off by the restore, read back by the sweep (``lifeboat.flow.sweep_holds``); and what
else the end of a vanished event relies on (the wake-up keeps the notice's source, the
directory the instance's state).

Patches are applied with the emulator's RFC 6902 implementation, as in
``test_taint_operations``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from kubemu.patch import apply_json_patch
from lifeboat.events.notice import Kind, Notice
from lifeboat.marks import node_marks
from lifeboat.marks.node_patches import (
    ec2_maintenance_operations,
    restore_operations,
    taint_operations,
)
from lifeboat.model.instances import info_from_ec2
from lifeboat.wakeup.codec import Task, Wakeup, decode, encode

START = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
SCHEDULED = node_marks.taint_key(Kind.SCHEDULED_CHANGE)
LABEL = node_marks.EC2_MAINTENANCE_LABEL


def node(labels: dict[str, str] | None = None, taint: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "n1", "resourceVersion": "7"}
    if labels is not None:
        metadata["labels"] = dict(labels)
    spec: dict[str, Any] = {"providerID": "aws:///us-east-1a/i-0123456789abcdef0"}
    if taint is not None:
        spec["taints"] = [{"key": taint, "effect": "NoSchedule"}]
        spec["unschedulable"] = True
    return {"metadata": metadata, "spec": spec}


def test_the_label_value_is_a_valid_label_value_and_reads_back() -> None:
    value = node_marks.ec2_maintenance_value(START)
    assert value == "20261208T090000Z"
    assert node_marks.ec2_maintenance_start(node({LABEL: value})) == START
    assert node_marks.ec2_maintenance_start(node({LABEL: "not-a-start"})) is None
    assert node_marks.ec2_maintenance_start(node()) is None


def test_the_taint_patch_labels_the_node_with_or_without_a_labels_map() -> None:
    for before in (node(), node({"a": "b"})):
        patched = apply_json_patch(
            before,
            taint_operations(before, SCHEDULED, "NoSchedule", True, False, "20261208T090000Z"),
        )
        assert patched["metadata"]["labels"][LABEL] == "20261208T090000Z"
    done = node({LABEL: "20261208T090000Z"}, taint=SCHEDULED)
    assert taint_operations(done, SCHEDULED, "NoSchedule", True, False, "20261208T090000Z") == []


def test_the_restore_takes_the_label_off_only_for_the_scheduled_change_taint() -> None:
    marked = node({LABEL: "20261208T090000Z", "keep": "me"}, taint=SCHEDULED)
    restored = apply_json_patch(marked, restore_operations(marked, SCHEDULED))
    assert restored["metadata"]["labels"] == {"keep": "me"}
    assert not restored["spec"].get("unschedulable")

    rebalance = node_marks.taint_key(Kind.REBALANCE_RECOMMENDATION)
    other = node({LABEL: "20261208T090000Z"}, taint=rebalance)
    released = apply_json_patch(other, restore_operations(other, rebalance))
    assert released["metadata"]["labels"] == {LABEL: "20261208T090000Z"}


def test_a_node_is_labelled_later_only_if_it_carries_the_scheduled_change_taint() -> None:
    assert ec2_maintenance_operations(node(), START) == []
    tainted = node(taint=SCHEDULED)
    labelled = apply_json_patch(tainted, ec2_maintenance_operations(tainted, START))
    assert labelled["metadata"]["labels"] == {LABEL: "20261208T090000Z"}
    assert ec2_maintenance_operations(labelled, START) == []


def test_a_wake_up_keeps_that_its_notice_came_from_ec2() -> None:
    notice = Notice(
        kind=Kind.SCHEDULED_CHANGE,
        event_id="instance-event-0123456789abcdef0",
        event_time=START,
        instance_id="i-0123456789abcdef0",
        deadline=START,
        ec2_event=True,
    )
    wakeup = Wakeup(Task.DECIDE, notice, START)
    assert decode(json.loads(encode(wakeup))).notice.ec2_event is True


def test_the_directory_reads_the_instance_state() -> None:
    info = info_from_ec2({"InstanceId": "i-0123456789abcdef0", "State": {"Name": "stopped"}})
    assert info.state == "stopped"
    assert info_from_ec2({"InstanceId": "i-0123456789abcdef0"}).state is None

"""The holds a node records and what a complete sweep does with them
(``lifeboat.marks.maintenance_holds``, ``lifeboat.flow.sweep_holds``).

Patches are applied with the emulator's RFC 6902 implementation behind a small stand-in for
the two requests the sweep makes (LIST by label, JSON PATCH), as ``test_taint_operations``
applies them.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemu.patch import apply_json_patch
from lifeboat.events.instance_status import Check, InstanceStatus, ScheduledEvent
from lifeboat.events.notice import Kind, Notice
from lifeboat.flow.sweep_holds import (
    ABSENCE,
    ABSENT_SWEEPS,
    VANISHED,
    listed_events,
    look_at,
    relisted,
)
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import Hold, active_holds, ended_for, hold_for, holds_of
from lifeboat.marks.node_patches import restore_operations, taint_operations

INSTANCE = "i-0123456789abcdef0"
START = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
LATER = datetime(2026, 12, 15, 9, 0, tzinfo=UTC)
NOW = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
SCHEDULED = node_marks.taint_key(Kind.SCHEDULED_CHANGE)
ARN = "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/A1"


def bare_node() -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "resourceVersion": "7", "labels": {}, "annotations": {}},
        "spec": {"providerID": f"aws:///us-east-1a/{INSTANCE}"},
    }


def ec2_notice(start: datetime | None = START, code: str = "system-reboot", **kw: Any) -> Notice:
    fields: dict[str, Any] = {
        "kind": Kind.SCHEDULED_CHANGE,
        "event_id": f"{code}-{start}",
        "event_time": NOW,
        "instance_id": INSTANCE,
        "deadline": start,
        "detail": code,
        "ec2_event": True,
    }
    return Notice(**{**fields, **kw})


def health_notice(start: datetime = START, arn: str = ARN, **kw: Any) -> Notice:
    fields: dict[str, Any] = {
        "kind": Kind.SCHEDULED_CHANGE,
        "event_id": f"health-{arn[-2:]}",
        "event_time": NOW,
        "instance_id": INSTANCE,
        "deadline": start,
        "detail": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
        "event_arn": arn,
    }
    return Notice(**{**fields, **kw})


def held_for(*notices: Notice) -> dict[str, Any]:
    """A node tainted and cordoned for each notice in turn, as act's taint patch does."""
    node = bare_node()
    for notice in notices:
        start = notice.deadline
        marker = node_marks.ec2_maintenance_value(start) if notice.ec2_event and start else None
        operations = taint_operations(
            node, SCHEDULED, "NoSchedule", True, False, marker, hold_for(notice)
        )
        node = apply_json_patch(node, operations)
    return node


def end(node: dict[str, Any], notice: Notice) -> dict[str, Any]:
    ended = replace_end(notice)
    patched: dict[str, Any] = apply_json_patch(
        node, restore_operations(node, SCHEDULED, None, (ended, NOW))
    )
    return patched


def replace_end(notice: Notice) -> Notice:
    return replace(notice, ends_maintenance=True)


# --- an end ends only its own maintenance -----------------------------------------------------


def test_an_old_ec2_end_leaves_a_node_held_for_a_new_retirement_out() -> None:
    """A still-listed ``[Completed]`` reboot (start S1) and a new retirement (S2) on one
    node: the reboot's end names S1, the node's hold is S2, so nothing is undone."""
    node = held_for(ec2_notice(LATER, "instance-retirement"))
    assert restore_operations(node, SCHEDULED, None, (replace_end(ec2_notice()), NOW)) == []
    # Its own end does release it.
    released = end(node, ec2_notice(LATER, "instance-retirement"))
    assert not released["spec"].get("unschedulable")
    assert active_holds(released) == []


def test_an_old_health_end_leaves_a_node_held_for_a_new_health_event_out() -> None:
    node = held_for(health_notice(LATER, ARN + "new"))
    old = replace_end(health_notice(START, ARN))
    assert restore_operations(node, SCHEDULED, None, (old, NOW)) == []
    # Same start, another Health event: not this hold either.
    other = replace_end(health_notice(LATER, ARN + "other"))
    assert restore_operations(node, SCHEDULED, None, (other, NOW)) == []
    released = end(node, health_notice(LATER, ARN + "new"))
    assert not released["spec"].get("unschedulable")


def test_held_for_two_the_first_end_keeps_the_node_out_and_the_second_releases_it() -> None:
    node = held_for(ec2_notice(), health_notice(LATER))
    first = end(node, ec2_notice())
    assert first["spec"]["unschedulable"] is True
    assert SCHEDULED in {t["key"] for t in first["spec"]["taints"]}
    assert [h.start for h in active_holds(first)] == [LATER]
    second = end(first, health_notice(LATER))
    assert not second["spec"].get("unschedulable")


def test_health_and_ec2_for_one_maintenance_are_one_hold() -> None:
    """Health told first (ARN), the sweep then sees EC2's event (code): one entry, ended by
    either's end."""
    node = held_for(health_notice())
    node = apply_json_patch(
        node,
        taint_operations(
            node,
            SCHEDULED,
            "NoSchedule",
            True,
            False,
            None,
            Hold(START, code="instance-retirement"),
        ),
    )
    [hold] = holds_of(node)
    assert (hold.code, hold.arn) == ("instance-retirement", ARN)
    assert not end(node, ec2_notice(code="instance-retirement"))["spec"].get("unschedulable")
    assert not end(node, health_notice())["spec"].get("unschedulable")


def test_a_node_without_a_recorded_hold_ends_as_before() -> None:
    """Tainted before holds were recorded: any end of its kind undoes it (as it did)."""
    node = bare_node()
    node["spec"]["taints"] = [{"key": SCHEDULED, "effect": "NoSchedule"}]
    node["spec"]["unschedulable"] = True
    assert not end(node, ec2_notice())["spec"].get("unschedulable")


def test_a_deferral_woken_after_its_end_is_let_go_but_a_notice_after_the_end_is_new() -> None:
    node = end(held_for(ec2_notice()), ec2_notice())
    assert ended_for(node, ec2_notice())  # the wake-up's notice, sent before the end
    relisted_later = ec2_notice(event_time=NOW + timedelta(minutes=10))
    assert not ended_for(node, relisted_later)


# --- absence -----------------------------------------------------------------------------------


class Cluster:
    """The LIST by label and the JSON PATCH the sweep sends, on nodes held in memory."""

    def __init__(self, *nodes_: dict[str, Any]) -> None:
        self.nodes = {n["metadata"]["name"]: copy.deepcopy(n) for n in nodes_}
        self.patches = 0

    def list_nodes(self, label_selector: str) -> list[dict[str, Any]]:
        return [
            copy.deepcopy(n)
            for n in self.nodes.values()
            if label_selector in (n["metadata"].get("labels") or {})
        ]

    def patch_node(self, name: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
        self.patches += 1
        self.nodes[name] = apply_json_patch(self.nodes[name], operations)
        return self.nodes[name]


def status(*events: tuple[datetime, str], description: str = "reboot") -> InstanceStatus:
    return InstanceStatus(
        instance_id=INSTANCE,
        zone="us-east-1a",
        state="running",
        instance=Check("ok", ()),
        system=Check("ok", ()),
        ebs=Check("not-applicable", ()),
        events=tuple(
            ScheduledEvent(code, description, start, None, None) for start, code in events
        ),
        observed_at=NOW,
        path="",
    )


def sweep(cluster: Cluster, at: datetime, *statuses: InstanceStatus) -> Any:
    return look_at(cluster, "prod", listed_events(statuses), at, dry_run=False)  # type: ignore[arg-type]


def test_a_blip_of_one_missing_sweep_ends_nothing_and_is_forgotten() -> None:
    cluster = Cluster(held_for(ec2_notice()))
    missing = sweep(cluster, NOW)
    assert missing.ends == []
    [counting] = missing.reports
    assert "missing from 1 complete sweep(s)" in counting.reason and counting.cluster == "prod"
    # Listed again: the count is cleared, so a later miss starts from scratch.
    back = sweep(cluster, NOW + timedelta(minutes=1), status((START, "system-reboot")))
    assert back.ends == [] and back.reports == []
    [hold] = holds_of(cluster.nodes["n1"])
    assert (hold.missing_since, hold.missing_sweeps) == (None, 0)


def test_missing_from_three_sweeps_over_five_minutes_ends_the_hold() -> None:
    cluster = Cluster(held_for(ec2_notice()))
    for minute in (0, 2, 4):
        assert sweep(cluster, NOW + timedelta(minutes=minute)).ends == []
    [gone] = sweep(cluster, NOW + ABSENCE).ends
    assert (gone.instance_id, gone.deadline) == (INSTANCE, START)
    assert gone.detail == f"system-reboot: {VANISHED}" and gone.ends_maintenance


def test_three_sweeps_delivered_together_are_not_five_minutes() -> None:
    """A backlog of sweep requests handled within a minute counts sweeps, not time."""
    cluster = Cluster(held_for(ec2_notice()))
    for second in range(0, 60, 10):
        assert sweep(cluster, NOW + timedelta(seconds=second)).ends == []
    assert ABSENT_SWEEPS <= 6


def test_five_minutes_with_only_two_complete_sweeps_is_not_enough() -> None:
    cluster = Cluster(held_for(ec2_notice()))
    assert sweep(cluster, NOW).ends == []
    assert sweep(cluster, NOW + timedelta(minutes=10)).ends == []
    assert len(sweep(cluster, NOW + timedelta(minutes=11)).ends) == 1


def test_a_maintenance_known_only_from_health_never_ends_by_absence() -> None:
    """Labelled for an EC2 hold, the node also holds a Health-only maintenance: only the
    EC2 one is counted missing."""
    cluster = Cluster(held_for(ec2_notice(), health_notice(LATER)))
    for minute in (0, 3, 6):
        found = sweep(cluster, NOW + timedelta(minutes=minute))
    assert [n.deadline for n in found.ends] == [START]


def test_a_node_labelled_before_holds_were_recorded_ends_by_its_label() -> None:
    node = bare_node()
    node["metadata"]["labels"][node_marks.EC2_MAINTENANCE_LABEL] = "20261208T090000Z"
    node["spec"]["taints"] = [{"key": SCHEDULED, "effect": "NoSchedule"}]
    cluster = Cluster(node)
    for minute in (0, 3, 6):
        found = sweep(cluster, NOW + timedelta(minutes=minute))
    [gone] = found.ends
    assert (gone.deadline, gone.detail) == (START, VANISHED)


def test_a_dry_run_writes_nothing_and_ends_nothing_by_absence() -> None:
    cluster = Cluster(held_for(ec2_notice()))
    for minute in (0, 3, 6):
        found = look_at(cluster, "prod", set(), NOW + timedelta(minutes=minute), dry_run=True)  # type: ignore[arg-type]
    assert found.ends == [] and cluster.patches == 0


def test_an_event_listed_again_after_its_end_is_a_new_hold() -> None:
    """Ended (restored) at NOW; EC2 lists the event again later: the notice is marked as
    after that end, so its ledger key is not the old maintenance's."""
    node = end(held_for(ec2_notice()), ec2_notice())
    holds = {INSTANCE: holds_of(node)}
    again = ec2_notice(event_time=NOW + timedelta(minutes=7))
    [marked] = relisted([again], holds)
    assert marked.after_end == NOW
    assert marked.ledger_key != again.ledger_key
    # Told before the end (a sweep that raced it), or still held: the same maintenance.
    [same] = relisted([ec2_notice(event_time=NOW - timedelta(minutes=1))], holds)
    assert same.after_end is None
    [held] = relisted([again], {INSTANCE: holds_of(held_for(ec2_notice()))})
    assert held.after_end is None

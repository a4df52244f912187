"""An EC2 scheduled event that vanishes from DescribeInstanceStatus ends its maintenance.

EC2 drops a cancelled scheduled event from ``Events[]`` (and a completed one after a while)
instead of always marking it ``[Canceled]``/``[Completed]``: "After a scheduled event is
completed or canceled, it may no longer appear" (EC2 User Guide, "View scheduled events";
``describe-instance-status`` lists current events only). A node Lifeboat tainted, cordoned or
marked for such an event is labelled ``lifeboat.dev/ec2-maintenance=<start>`` in the same
patch; each complete sweep lists the labelled nodes (one LIST per cluster) and ends the
maintenance of each whose event is gone, as ``[Canceled]`` does. A maintenance known only
from AWS Health is never ended this way, and a sweep whose DescribeInstanceStatus failed or
was cut short ends nothing.

Same rig as ``test_instance_status``: botocore's Stubber for DescribeInstanceStatus (moto
knows no ``Events``), the emulator through the real ``kubernetes`` client.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from kubemu import Emulator
from lifeboat.aws.sweep import Ec2InstanceStatuses, complete, sweep_request
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import Pipeline
from lifeboat.flow.sweep_holds import ABSENCE, ABSENT_SWEEPS
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import holds_of
from lifeboat.model.instances import Ec2InstanceDirectory, InstanceInfo
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups, Task, encode
from tests.integration.aws.test_fleet import PerCluster, cluster_objects, launch
from tests.integration.aws.test_instance_status import (
    KARPENTER_CLAIM,
    KARPENTER_INSTANCE,
    KARPENTER_NODE,
    MAINTENANCE,
    NOW,
    SCHEDULED_TAINT,
    Rig,
    ec2_client,
    instance_status,
    make_rig,
    scheduled_event,
    stub_sweep,
    types,
)
from tests.support.events import aws_event, health_time

LABEL = node_marks.EC2_MAINTENANCE_LABEL
KUBECTL = shutil.which("kubectl")


@pytest.fixture
def cordon_only() -> Iterator[Rig]:
    yield from make_rig(Settings(kind_actions={Kind.SCHEDULED_CHANGE: "cordon"}))


def taint_keys(node: dict[str, Any]) -> set[str]:
    return {t["key"] for t in node["spec"].get("taints") or []}


def cordoned_for(rig: Rig, event: dict[str, Any]) -> None:
    [acted] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
    assert acted.outcome == "acted" and types(acted) == ["taint", "cordon", "label"]


def gone(rig: Rig, *statuses: dict[str, Any]) -> list[Report]:
    """Complete sweeps that no longer list the event, as many and as long as it takes to
    end it (``lifeboat.flow.sweep_holds``: ABSENT_SWEEPS over ABSENCE): the last one's
    reports. The first two say the event is missing and end nothing."""
    start = rig.now
    for step in range(ABSENT_SWEEPS):
        rig.now = start + ABSENCE * step / (ABSENT_SWEEPS - 1)
        reports = rig.sweep(*statuses)
        if step < ABSENT_SWEEPS - 1:
            ended = [r for r in reports if r.outcome == "acted" and "is over" in r.reason]
            assert not ended, ended
    return reports


def node_list_requests(rig: Rig) -> int:
    return sum(1 for e in rig.emulator.request_log if e[0] == "list" and e[2] == "nodes")


def test_an_event_that_vanishes_uncordons_the_node_as_a_cancelled_one(cordon_only: Rig) -> None:
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    node = rig.node(KARPENTER_NODE)
    assert nodes.labels_of(node)[LABEL] == "20261208T090000Z"

    rig.now = NOW + timedelta(hours=1)
    # EC2 no longer reports it: the sweeps find no instance in trouble at all.
    reports = gone(rig)
    [ended] = [r for r in reports if r.instance_id == KARPENTER_INSTANCE]
    assert ended.outcome == "acted", ended.reason
    assert "EC2 event no longer reported" in ended.reason and "is over" in ended.reason
    assert types(ended) == ["untaint", "uncordon", "unlabel"]
    node = rig.node(KARPENTER_NODE)
    assert not node["spec"].get("unschedulable")
    assert SCHEDULED_TAINT not in taint_keys(node)
    assert not nodes.excluded_from_load_balancers(node)
    assert node_marks.maintenance_ended(node, MAINTENANCE)
    # The label stays with the ended hold: EC2 listing the event again is a new hold.
    [hold] = holds_of(node)
    assert hold.start == MAINTENANCE and hold.ended == rig.now

    # Undone: the node is no candidate any more; the next sweep says nothing about it.
    rig.now += timedelta(minutes=1)
    assert all(r.instance_id is None for r in rig.sweep())


def test_one_node_list_per_sweep_whatever_the_fleet(cordon_only: Rig) -> None:
    """The candidates are read with one LIST of nodes, selected by the label, per cluster
    and sweep: no request per instance of the answer. (The sweep's second LIST of nodes is
    of those carrying a hand-over, lifeboat.flow.handover_sweep: also one, by its label.)"""
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    before = node_list_requests(rig)
    others = [instance_status(f"i-0a1b2c3d4e5f7{n:04d}") for n in range(50)]
    rig.now += timedelta(minutes=1)
    rig.sweep(
        *others, instance_status(KARPENTER_INSTANCE, events=[scheduled_event("system-reboot")])
    )
    assert node_list_requests(rig) - before == 2


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_finds_the_marked_node_by_its_label(cordon_only: Rig) -> None:
    """The label selector the sweep uses, as the stock kubectl sends it."""
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    assert KUBECTL is not None
    found = subprocess.run(
        [KUBECTL, f"--server={rig.emulator.url}", "get", "nodes", "-l", LABEL, "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert found.stdout.split() == [f"node/{KARPENTER_NODE}"]


def test_an_event_still_reported_keeps_the_node_cordoned(cordon_only: Rig) -> None:
    rig = cordon_only
    event = scheduled_event("system-reboot")
    cordoned_for(rig, event)
    rig.now += timedelta(minutes=1)
    [again] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
    assert again.reason == "duplicate delivery: already handled"
    assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True


def test_a_maintenance_known_only_from_health_is_not_ended_by_a_sweep(cordon_only: Rig) -> None:
    rig = cordon_only
    health = aws_event(
        "scheduled-change",
        instance=KARPENTER_INSTANCE,
        startTime=health_time(MAINTENANCE),
        time=NOW,
    )
    [acted] = rig.send(health)
    assert acted.outcome == "acted"
    assert LABEL not in nodes.labels_of(rig.node(KARPENTER_NODE))
    rig.now += timedelta(minutes=1)
    assert all(r.instance_id is None for r in rig.sweep())
    node = rig.node(KARPENTER_NODE)
    assert node["spec"]["unschedulable"] is True and SCHEDULED_TAINT in taint_keys(node)


def test_seen_by_the_sweep_first_then_health_it_ends_by_vanishing(cordon_only: Rig) -> None:
    """One maintenance, EC2's event first: Health's notice is the duplicate; when the event
    vanishes the maintenance ends, whoever else announced it."""
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    health = aws_event(
        "scheduled-change",
        instance=KARPENTER_INSTANCE,
        startTime=health_time(MAINTENANCE),
        time=NOW,
    )
    [duplicate] = rig.send(health)
    assert duplicate.reason == "duplicate delivery: already handled"
    rig.now += timedelta(minutes=1)
    [ended] = [r for r in gone(rig) if r.instance_id]
    assert ended.outcome == "acted"
    assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


def test_a_failed_sweep_ends_nothing(cordon_only: Rig) -> None:
    """The third filter set's call fails: the message goes back to the queue, and the event
    missing from the two answers that came is not taken for gone."""
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    rig.stubber.add_response("describe_instance_status", {"InstanceStatuses": []})
    rig.stubber.add_response("describe_instance_status", {"InstanceStatuses": []})
    rig.stubber.add_client_error(
        "describe_instance_status", "RequestLimitExceeded", http_status_code=503
    )
    request = sweep_request("failed", rig.now.isoformat())
    [result] = rig.pipeline.process([json.dumps(request)])
    assert result.error is not None and not result.reports
    node = rig.node(KARPENTER_NODE)
    assert node["spec"]["unschedulable"] is True and nodes.labels_of(node)[LABEL]


class CutShort:
    """A reader whose answer stops at a page that names a next one."""

    def pages(self) -> list[dict[str, Any]]:
        return [{"InstanceStatuses": []}] * 3 + [{"InstanceStatuses": [], "NextToken": "more"}]

    def complete(self, pages: list[dict[str, Any]]) -> bool:
        return complete(pages)

    def describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        return [{"InstanceStatuses": []}]


def test_an_answer_cut_short_ends_nothing(cordon_only: Rig) -> None:
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    rig.pipeline.statuses = CutShort()
    [result] = rig.pipeline.process([json.dumps(sweep_request("short", rig.now.isoformat()))])
    assert result.error is None
    assert all(r.instance_id is None for r in result.reports)
    assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True


@pytest.mark.parametrize(
    ("pages", "whole"),
    [
        ([{"InstanceStatuses": []}] * 3, True),
        ([{"InstanceStatuses": [], "NextToken": "t"}] + [{"InstanceStatuses": []}] * 3, True),
        ([{"InstanceStatuses": []}] * 2, False),  # a filter set never answered
        ([{"InstanceStatuses": []}] * 2 + [{"InstanceStatuses": [], "NextToken": "t"}], False),
    ],
)
def test_complete_answer(pages: list[dict[str, Any]], whole: bool) -> None:
    assert complete(pages) is whole


def test_a_node_listing_that_fails_ends_nothing_there_and_says_so(cordon_only: Rig) -> None:
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    for minute in (1, 2):  # an error each time, never "duplicate delivery"
        rig.now = NOW + timedelta(minutes=minute)
        rig.emulator.fail_next(500, times=2, verb="list", resource="nodes")
        reports = rig.sweep()
        [unlisted] = [r for r in reports if r.event_id == "vanished:-"]
        assert unlisted.outcome == "ignored" and unlisted.reason.startswith("error: ")
        assert "looked at again at the next sweep" in unlisted.reason
    assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True


class Stopped:
    """The directory's answer, every instance ``stopped``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        found = self.inner.describe(instance_ids)
        return {k: replace(v, state="stopped") for k, v in found.items()}


def test_an_instance_that_is_not_running_is_left_as_is(cordon_only: Rig) -> None:
    """``instance-stop``: a stopped instance is no longer described (only running ones are,
    ``IncludeAllInstances`` false), so its event vanishes; the node is not restored."""
    rig = cordon_only
    cordoned_for(rig, scheduled_event("instance-stop"))
    rig.pipeline.directory = Stopped(rig.pipeline.directory)
    rig.now += timedelta(minutes=1)
    [left] = [r for r in gone(rig) if r.instance_id]
    assert left.outcome == "ignored" and "is stopped, not running" in left.reason
    assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True


def test_a_vanished_event_waits_for_the_node_to_be_ready(cordon_only: Rig) -> None:
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    node = rig.node(KARPENTER_NODE)
    ready = copy.deepcopy(node["status"]["conditions"])
    for condition in node["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "False"
    rig.emulator.put_object(node)
    [waiting] = [r for r in gone(rig) if r.instance_id]
    assert waiting.outcome == "ignored" and "not Ready yet" in waiting.reason
    node = rig.node(KARPENTER_NODE)
    node["status"]["conditions"] = ready
    rig.emulator.put_object(node)
    rig.now += timedelta(minutes=1)
    [ended] = [r for r in rig.sweep() if r.instance_id]
    assert ended.outcome == "acted"
    assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


def test_a_deferral_for_a_vanished_event_does_nothing_when_it_wakes() -> None:
    """Deferred by general's weekday freeze (a PreferNoSchedule mark, a wake-up at
    NotBefore - lead); EC2 then drops the event: its mark comes off, and the wake-up, when
    it comes due, lets the maintenance go instead of replacing the node."""
    for rig in make_rig():
        rig.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
        start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
        [waiting] = rig.sweep(
            instance_status(
                KARPENTER_INSTANCE, events=[scheduled_event("system-maintenance", start)]
            )
        )
        assert waiting.outcome == "deferred"
        assert nodes.labels_of(rig.node(KARPENTER_NODE))[LABEL] == "20261201T160000Z"

        rig.now = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
        [ended] = [r for r in gone(rig) if r.instance_id]
        assert ended.outcome == "acted" and types(ended)[0] == "untaint"
        node = rig.node(KARPENTER_NODE)
        assert SCHEDULED_TAINT not in taint_keys(node)
        assert node_marks.maintenance_ended(node, start)

        wakeups = rig.pipeline.wakeups
        assert isinstance(wakeups, MemoryWakeups)
        rig.now = start - timedelta(minutes=30)
        due = [w for w in wakeups.pop_due(rig.now) if w.task is Task.DECIDE]
        assert due and all(w.notice.ec2_event for w in due)
        for wakeup in due:
            [report] = rig.send(json.loads(encode(wakeup)))
            assert report.outcome == "ignored" and "maintenance ended" in report.reason
        assert not rig.claim(KARPENTER_CLAIM)["metadata"].get("deletionTimestamp")
        assert SCHEDULED_TAINT not in taint_keys(rig.node(KARPENTER_NODE))


def test_a_rescheduled_event_ends_the_old_start_and_keeps_the_node_out(cordon_only: Rig) -> None:
    """EC2 moves the maintenance: the old start vanishes (undone first), the new one is a
    new maintenance acted on in the same sweep, and the label names the new start."""
    rig = cordon_only
    cordoned_for(rig, scheduled_event("system-reboot"))
    later = MAINTENANCE + timedelta(days=2)
    moved = instance_status(KARPENTER_INSTANCE, events=[scheduled_event("system-reboot", later)])
    rig.now += timedelta(minutes=1)
    missing, acted = rig.sweep(moved)
    assert (missing.event_id or "").startswith("vanished:") and missing.outcome == "ignored"
    assert acted.outcome == "acted" and types(acted)[:2] == ["taint", "cordon"]  # held for both
    rig.now += timedelta(minutes=1)
    [ended] = [r for r in gone(rig, moved) if (r.event_id or "").startswith("vanished:")]
    assert ended.outcome == "acted", ended.reason
    assert "still held for system-reboot starting 2026-12-10T09:00:00Z" in ended.reason
    node = rig.node(KARPENTER_NODE)
    assert node["spec"]["unschedulable"] is True
    assert SCHEDULED_TAINT in taint_keys(node)
    assert nodes.labels_of(node)[LABEL] == "20261210T090000Z"
    assert [h.start for h in holds_of(node) if h.active] == [later]


def test_told_by_health_then_seen_by_the_sweep_it_ends_by_vanishing(cordon_only: Rig) -> None:
    """Health first (acted on), then the sweep sees EC2's event for the same maintenance: a
    duplicate, but the node is labelled now (once), so the event's vanishing ends it."""
    rig = cordon_only
    health = aws_event(
        "scheduled-change",
        instance=KARPENTER_INSTANCE,
        startTime=health_time(MAINTENANCE),
        time=NOW,
    )
    [acted] = rig.send(health)
    assert acted.outcome == "acted"
    event = scheduled_event("system-reboot")
    for minute in (1, 2):  # the second sight needs no request to the node at all
        rig.now = NOW + timedelta(minutes=minute)
        patches_before = sum(1 for e in rig.emulator.request_log if e[0] == "patch")
        [duplicate] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
        assert duplicate.reason == "duplicate delivery: already handled"
        patches = sum(1 for e in rig.emulator.request_log if e[0] == "patch") - patches_before
        assert patches == (1 if minute == 1 else 0)
    assert nodes.labels_of(rig.node(KARPENTER_NODE))[LABEL] == "20261208T090000Z"

    rig.now += timedelta(minutes=1)
    [ended] = [r for r in gone(rig) if r.instance_id]
    assert ended.outcome == "acted" and types(ended) == ["untaint", "uncordon", "unlabel"]
    assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


def test_a_deferral_whose_event_vanished_while_the_node_was_not_ready_still_lets_it_go() -> None:
    """The end waits for the node to be Ready with the deferral's mark kept (taking the mark
    off without recording the end would let the wake-up replace the node later)."""
    for rig in make_rig():
        rig.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
        start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
        event = scheduled_event("system-maintenance", start)
        [waiting] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
        assert waiting.outcome == "deferred"
        node = rig.node(KARPENTER_NODE)
        ready = copy.deepcopy(node["status"]["conditions"])
        for condition in node["status"]["conditions"]:
            if condition["type"] == "Ready":
                condition["status"] = "False"
        rig.emulator.put_object(node)

        rig.now = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
        [later] = [r for r in gone(rig) if r.instance_id]
        assert later.outcome == "ignored" and "not Ready yet" in later.reason
        assert not later.actions
        assert SCHEDULED_TAINT in taint_keys(rig.node(KARPENTER_NODE))

        node = rig.node(KARPENTER_NODE)
        node["status"]["conditions"] = ready
        rig.emulator.put_object(node)
        rig.now += timedelta(minutes=1)
        [ended] = [r for r in rig.sweep() if r.instance_id]
        assert ended.outcome == "acted"
        assert node_marks.maintenance_ended(rig.node(KARPENTER_NODE), start)


def test_through_moto_a_running_instance_is_restored_and_a_stopped_one_left(
    aws: boto3.Session,
) -> None:
    """The instance's state is EC2's (DescribeInstances on moto, ``State.Name``): of two
    nodes Lifeboat cordoned for EC2 events that are no longer reported, the one whose
    instance runs is restored, the one whose instance was stopped is left as it is."""
    moto_ec2 = aws.client("ec2")
    tags = {"eks:cluster-name": "prod", "karpenter.sh/nodepool": "general"}
    running = launch(moto_ec2, {**tags, "karpenter.sh/nodeclaim": "general-7xkqz"})
    stopped = launch(moto_ec2, {**tags, "karpenter.sh/nodeclaim": KARPENTER_CLAIM})
    moto_ec2.stop_instances(InstanceIds=[stopped])
    objects = cluster_objects([running, stopped], "prod")
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"].startswith("node-prod-"):
            obj["metadata"]["labels"][LABEL] = "20261208T090000Z"
            obj["spec"]["taints"] = [{"key": SCHEDULED_TAINT, "effect": "NoSchedule"}]
            obj["spec"]["unschedulable"] = True
    status_ec2 = ec2_client()
    with Emulator(objects) as emulator, Stubber(status_ec2) as stubber:
        for claim_name, node_name in (
            ("general-7xkqz", "node-prod-0"),
            (KARPENTER_CLAIM, "node-prod-1"),
        ):
            claim = emulator.get_object("NodeClaim", claim_name)
            assert claim is not None
            claim["status"]["nodeName"] = node_name
            emulator.put_object(claim)
        clock = [NOW]
        pipeline = Pipeline(
            clusters=PerCluster({"prod": KubeApi(emulator.api_client())}),
            directory=Ec2InstanceDirectory(moto_ec2),
            settings=Settings(clusters=("prod",)),
            clock=lambda: clock[0],
            ledger=MemoryLedger(),
            statuses=Ec2InstanceStatuses(status_ec2),
        )
        for minute in (0, 3, 6):  # missing from three complete sweeps over five minutes
            clock[0] = NOW + timedelta(minutes=minute)
            stub_sweep(stubber, [[]], [[]], [[]])
            request = sweep_request(f"moto-{minute}", clock[0].isoformat())
            [result] = pipeline.process([json.dumps(request)])
        assert result.error is None
        by_instance = {r.instance_id: r for r in result.reports if r.instance_id}
        assert by_instance[running].outcome == "acted", by_instance[running].reason
        assert by_instance[stopped].outcome == "ignored"
        assert "is stopped, not running" in by_instance[stopped].reason
        restored = emulator.get_object("Node", "node-prod-0")
        left = emulator.get_object("Node", "node-prod-1")
        assert restored is not None and left is not None
        assert not restored["spec"].get("unschedulable")
        assert left["spec"]["unschedulable"] is True and nodes.labels_of(left)[LABEL]

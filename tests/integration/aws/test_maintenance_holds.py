"""Maintenance that ends only when it has ended, end to end (the sweep and AWS Health
through the pipeline, the emulator through the real ``kubernetes`` client):

* an end ends only the hold it names (an old reboot's ``[Completed]``, an old Health event's
  closing, while the node is held for a new retirement);
* absence from the sweeps ends a hold only after it has lasted (the blip);
* an event listed again after its end is a new hold, not a ledger duplicate;
* an EC2 event naming only its ``Code`` is due now;
* clusters found by their tag end vanished events like named clusters;
* the queue never speaks for EC2 (a raw DescribeInstanceStatus body, a sweep request from
  another schedule).

Each failed before its change.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from kubemu import Emulator
from lifeboat.aws.discovery import ClusterCatalog
from lifeboat.aws.sweep import sweep_request
from lifeboat.events import STATUS_ON_QUEUE
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import Pipeline
from lifeboat.flow.sweep_holds import ABSENCE
from lifeboat.kube.client import KubeApi
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import HOLDS_ANNOTATION, holds_of
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings, SettingsError
from tests.integration.aws.test_instance_status import (
    KARPENTER_INSTANCE,
    KARPENTER_NODE,
    MAINTENANCE,
    NOW,
    SCHEDULED_TAINT,
    Rig,
    instance_status,
    make_rig,
    scheduled_event,
    stub_sweep,
    types,
)
from tests.integration.aws.test_instance_status_vanish import gone
from tests.support.aws import ANY_AMI
from tests.support.events import aws_event, health_time
from tests.support.kube.core import node as make_node

RETIREMENT = MAINTENANCE + timedelta(days=7)
ARN = "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/{}"


@pytest.fixture
def rig() -> Iterator[Rig]:
    """``scheduled-change=cordon``: the node stays, so what holds it can be seen."""
    yield from make_rig(Settings(kind_actions={Kind.SCHEDULED_CHANGE: "cordon"}))


def out_of_service(rig: Rig) -> bool:
    node = rig.node(KARPENTER_NODE)
    keys = {t["key"] for t in node["spec"].get("taints") or []}
    return node["spec"].get("unschedulable") is True and SCHEDULED_TAINT in keys


def health(start: datetime, arn: str, *, closed: bool = False, at: datetime = NOW) -> Any:
    event = aws_event(
        "scheduled-change",
        instance=KARPENTER_INSTANCE,
        event_id=f"{arn[-6:]}-{'closed' if closed else 'open'}",
        startTime=health_time(start),
        eventArn=arn,
        time=at,
    )
    if closed:
        event["detail"]["statusCode"] = "closed"
    return event


# --- an end ends only its own maintenance ------------------------------------------------------


def test_a_completed_reboot_still_listed_leaves_a_node_held_for_a_new_retirement_out(
    rig: Rig,
) -> None:
    """The reboot (S1) is acted on and completes; EC2 then announces a retirement (S2)
    while it still lists the reboot as ``[Completed]``. The reboot's end names S1, the
    node is held for S2: it stays out, sweep after sweep, and the retirement is no
    duplicate."""
    reboot = scheduled_event("system-reboot")
    [acted] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[reboot]))
    assert acted.outcome == "acted"
    done = {**reboot, "Description": "[Completed] scheduled reboot"}
    rig.now += timedelta(minutes=1)
    [undone] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert undone.outcome == "acted" and not out_of_service(rig)

    retirement = scheduled_event("instance-retirement", RETIREMENT)
    for minute in (2, 3, 4):
        rig.now = NOW + timedelta(minutes=minute)
        ended, held = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done, retirement]))
        assert out_of_service(rig), ended.reason
        assert ended.outcome == "ignored"
        if minute == 2:
            assert held.outcome == "acted" and "duplicate" not in held.reason
        else:
            assert "held for instance-retirement starting 2026-12-15T09:00:00Z" in ended.reason
            assert "stays out" in ended.reason
    [hold] = [h for h in holds_of(rig.node(KARPENTER_NODE)) if h.active]
    assert (hold.start, hold.code) == (RETIREMENT, "instance-retirement")


def test_a_closed_old_health_event_leaves_a_node_held_for_a_new_one_out(rig: Rig) -> None:
    old, new = ARN.format("old000"), ARN.format("new000")
    [acted] = rig.send(health(RETIREMENT, new))
    assert acted.outcome == "acted" and out_of_service(rig)
    [report] = rig.send(health(MAINTENANCE, old, closed=True))
    assert report.outcome == "ignored" and "stays out" in report.reason
    assert "2026-12-08T09:00:00Z is over" in report.reason
    assert out_of_service(rig)
    # Its own closing releases it.
    [released] = rig.send(health(RETIREMENT, new, closed=True))
    assert released.outcome == "acted" and not out_of_service(rig)


def test_a_closed_health_event_of_the_same_start_but_another_arn_is_not_this_hold(
    rig: Rig,
) -> None:
    mine, other = ARN.format("mine00"), ARN.format("other0")
    rig.send(health(MAINTENANCE, mine))
    [report] = rig.send(health(MAINTENANCE, other, closed=True))
    assert report.outcome == "ignored" and out_of_service(rig)


# --- absence -----------------------------------------------------------------------------------


def test_a_blip_in_the_sweeps_never_uncordons_the_node(rig: Rig) -> None:
    """One complete answer without the event (EC2's eventual consistency), then listed
    again: nothing is undone, and a later miss counts from scratch."""
    event = scheduled_event("system-reboot")
    listed = instance_status(KARPENTER_INSTANCE, events=[event])
    rig.sweep(listed)
    rig.now += timedelta(minutes=1)
    [missing] = [r for r in rig.sweep() if r.instance_id]
    assert missing.outcome == "ignored" and "missing from 1 complete sweep(s)" in missing.reason
    assert out_of_service(rig)
    rig.now += timedelta(minutes=1)
    [again] = rig.sweep(listed)
    assert again.reason == "duplicate delivery: already handled" and out_of_service(rig)
    [hold] = holds_of(rig.node(KARPENTER_NODE))
    assert hold.missing_sweeps == 0
    # Two more misses over four minutes: still not the three sweeps and five minutes.
    for minute in (3, 7):
        rig.now = NOW + timedelta(minutes=minute)
        rig.sweep()
        assert out_of_service(rig)


def test_an_event_listed_again_after_its_end_holds_the_node_again(rig: Rig) -> None:
    event = scheduled_event("system-reboot")
    listed = instance_status(KARPENTER_INSTANCE, events=[event])
    rig.sweep(listed)
    rig.now += timedelta(minutes=1)
    [ended] = [r for r in gone(rig) if r.instance_id]
    assert ended.outcome == "acted" and not out_of_service(rig)
    rig.now += timedelta(minutes=2)
    [again] = rig.sweep(listed)
    assert again.outcome == "acted", again.reason
    assert "duplicate" not in again.reason and out_of_service(rig)
    # And it is remembered as that new hold: the next sweep's is the duplicate.
    rig.now += timedelta(minutes=1)
    [dup] = rig.sweep(listed)
    assert dup.reason == "duplicate delivery: already handled"


# --- an event with only a Code -----------------------------------------------------------------


def test_an_event_with_only_a_code_is_acted_on_at_once_within_the_budget() -> None:
    """Karpenter's own controller test sends ``Events: [{Code: instance-retirement}]`` and
    deletes the claim at once; it was ignored "without NotBefore". Now: due now, acted on
    where general's budget allows (18:00, outside its freeze), saying the start was not
    given."""
    for rig in make_rig():
        [report] = rig.sweep(
            instance_status(KARPENTER_INSTANCE, events=[{"Code": "instance-retirement"}])
        )
        assert report.outcome == "acted", report.reason
        assert "start not given (no NotBefore): due now" in report.reason
        assert "delete-nodeclaim" in types(report)


def test_an_event_with_only_a_code_inside_a_freeze_waits_for_the_budget() -> None:
    for rig in make_rig():
        rig.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)  # general's weekday freeze
        [report] = rig.sweep(
            instance_status(KARPENTER_INSTANCE, events=[{"Code": "instance-retirement"}])
        )
        assert report.outcome == "deferred" and "start not given" in report.reason


# --- clusters found by their tag ---------------------------------------------------------------


class TaggedClusters:
    """The production router's answer for a cluster (service.EksClusters): an instance
    naming no cluster raises, as EksClusters does without LIFEBOAT_CLUSTERS."""

    def __init__(self, apis: dict[str, KubeApi]) -> None:
        self.apis = apis

    def kube(self, cluster: str | None) -> KubeApi:
        if cluster is None:
            raise SettingsError("an instance named no cluster and LIFEBOAT_CLUSTERS lists none")
        if cluster not in self.apis:
            raise ConnectionError(f"cluster {cluster} does not answer")
        return self.apis[cluster]


class NothingListed:
    """A complete sweep in which EC2 lists no event."""

    def pages(self) -> list[dict[str, Any]]:
        return [{"InstanceStatuses": []}] * 3

    def complete(self, pages: list[dict[str, Any]]) -> bool:
        return True

    def describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        return [{"InstanceStatuses": []}]


def test_a_cluster_found_by_its_tag_ends_a_vanished_event(aws: boto3.Session) -> None:
    tag = "lifeboat.dev/managed"
    eks = aws.client("eks")
    account = aws.client("sts").get_caller_identity()["Account"]
    for name in ("payments", "broken"):
        eks.create_cluster(
            name=name,
            roleArn=f"arn:aws:iam::{account}:role/eks",
            resourcesVpcConfig={"subnetIds": ["subnet-1"]},
            tags={tag: "true"},
        )
    ec2 = aws.client("ec2")
    image = ANY_AMI
    launched = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType="m5.large",
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": "eks:cluster-name", "Value": "payments"}]}
        ],
    )["Instances"][0]
    # Held for an EC2 event missing from two sweeps over ten minutes: this sweep ends it.
    held = make_node(
        name=launched["PrivateDnsName"],
        instance_id=launched["InstanceId"],
        zone=launched["Placement"]["AvailabilityZone"],
        nodepool=None,
        nodeclaim=None,
    )
    held["metadata"]["labels"][node_marks.EC2_MAINTENANCE_LABEL] = "20261208T090000Z"
    held["metadata"].setdefault("annotations", {})[HOLDS_ANNOTATION] = json.dumps(
        [
            {
                "code": "system-reboot",
                "start": "2026-12-08T09:00:00Z",
                "missing_since": (NOW - ABSENCE * 2).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "missing_sweeps": 2,
            }
        ]
    )
    held["spec"]["taints"] = [{"key": SCHEDULED_TAINT, "effect": "NoSchedule"}]
    held["spec"]["unschedulable"] = True
    with Emulator([held]) as emulator:
        pipeline = Pipeline(
            clusters=TaggedClusters({"payments": KubeApi(emulator.api_client())}),
            directory=Ec2InstanceDirectory(ec2),
            settings=Settings(cluster_tag_key=tag),
            clock=lambda: NOW,
            ledger=MemoryLedger(),
            statuses=NothingListed(),
            scope=ClusterCatalog(eks, tag_key=tag),
        )
        reports: list[Report] = []
        for minute in (0, 1):
            request = sweep_request(f"tagged-{minute}", NOW.isoformat())
            [result] = pipeline.process([json.dumps(request)])
            assert result.error is None, result.error
            reports += result.reports
        [ended] = [r for r in reports if r.instance_id == launched["InstanceId"]]
        assert ended.outcome == "acted" and "is over" in ended.reason
        assert ended.cluster == "payments"
        restored = emulator.get_object("Node", launched["PrivateDnsName"])
        assert restored is not None and not restored["spec"].get("unschedulable")
        # The tagged cluster that does not answer: an error naming it, each sweep, never a
        # duplicate delivery.
        errors = [r for r in reports if r.cluster == "broken"]
        assert len(errors) == 2
        for report in errors:
            assert report.reason.startswith("error: ") and "cluster broken" in report.reason
            assert "duplicate" not in report.reason


# --- the queue never speaks for EC2 ------------------------------------------------------------


def test_a_raw_status_body_on_the_queue_is_rejected_and_changes_nothing(rig: Rig) -> None:
    """A body saying ``[Canceled]`` for the event a node is held for once uncordoned it, and
    one naming 10 impaired instances put them out under budget "0"; now rejected."""
    event = scheduled_event("instance-retirement")
    rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
    cancelled = {**event, "Description": "[Canceled] retirement"}
    body = json.loads(
        json.dumps(
            {"InstanceStatuses": [instance_status(KARPENTER_INSTANCE, events=[cancelled])]},
            default=str,
        )
    )
    for forged in (body, {"Pages": [body]}):
        [report] = rig.send(forged)
        assert (report.outcome, report.reason) == ("rejected", STATUS_ON_QUEUE)
    assert out_of_service(rig)


def test_a_sweep_request_from_another_schedule_is_rejected(rig: Rig) -> None:
    ours = "arn:aws:scheduler:us-east-1:123456789012:schedule/lifeboat/sweep"
    rig.pipeline.sweep_schedule = ours
    forged = sweep_request("forged", NOW.isoformat(), "arn:aws:scheduler:::schedule/x/y")
    [report] = rig.send(forged)
    assert report.outcome == "rejected" and ours in report.reason
    told = copy.deepcopy(sweep_request("told", NOW.isoformat(), ours))
    told["detail"] = {"InstanceStatuses": []}
    [report] = rig.send(told)
    assert report.outcome == "rejected" and "carries nothing" in report.reason
    # The schedule's own request is a sweep (EC2 asked: three calls).
    calls = rig.statuses.calls
    stub_sweep(rig.stubber, [[]], [[]], [[]])
    [result] = rig.pipeline.process([json.dumps(sweep_request("ours", NOW.isoformat(), ours))])
    assert result.error is None and rig.statuses.calls == calls + 3


class AnsweredLate:
    """EC2's answer dated half an hour ago (it waited), then EC2 asked again now."""

    def __init__(self, now_impaired: bool) -> None:
        self.now_impaired = now_impaired
        self.asked: list[list[str]] = []

    def pages(self) -> list[dict[str, Any]]:
        late = (NOW - timedelta(minutes=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")
        status = instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(hours=1))
        page = {
            "InstanceStatuses": [status],
            "ResponseMetadata": {"HTTPHeaders": {"date": late}},
        }
        return [page, {"InstanceStatuses": []}, {"InstanceStatuses": []}]

    def complete(self, pages: list[dict[str, Any]]) -> bool:
        return True

    def describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        self.asked.append(instance_ids)
        since = NOW - timedelta(hours=1) if self.now_impaired else None
        return [{"InstanceStatuses": [instance_status(KARPENTER_INSTANCE, impaired_since=since)]}]


@pytest.mark.parametrize("still", [False, True], ids=["recovered", "still-impaired"])
def test_an_impairment_reported_long_ago_is_checked_with_ec2_again(still: bool) -> None:
    for rig in make_rig():
        reader = AnsweredLate(now_impaired=still)
        rig.pipeline.statuses = reader
        [result] = rig.pipeline.process([json.dumps(sweep_request("late", NOW.isoformat()))])
        assert reader.asked == [[KARPENTER_INSTANCE]]
        impaired = [r for r in result.reports if r.kind == "instance-impaired" and r.instance_id]
        if still:
            assert [r.outcome for r in impaired] == ["acted"]
        else:
            assert impaired == []
            [said] = [r for r in result.reports if r.kind == "instance-impaired"]
            assert "asked again, no longer reports impaired" in said.reason
            assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


def test_a_deferred_new_hold_keeps_its_wake_up_when_an_old_maintenance_ends() -> None:
    """Deferred by general's weekday freeze for a retirement at 16:00 (its mark on, a
    wake-up at the lead before the start); an old maintenance's Health event closes
    meanwhile: the mark stays, and the wake-up, when it comes, still takes the node out."""
    from lifeboat.wakeup.codec import MemoryWakeups, Task, encode

    for rig in make_rig():
        rig.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
        start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
        retirement = scheduled_event("instance-retirement", start)
        [waiting] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[retirement]))
        assert waiting.outcome == "deferred"
        rig.now = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
        [old] = rig.send(health(MAINTENANCE, ARN.format("old000"), closed=True))
        assert old.outcome == "ignored" and "held for instance-retirement" in old.reason
        taints = rig.node(KARPENTER_NODE)["spec"]["taints"]
        assert {"key": SCHEDULED_TAINT, "effect": "PreferNoSchedule"} in taints
        wakeups = rig.pipeline.wakeups
        assert isinstance(wakeups, MemoryWakeups)
        rig.now = start - timedelta(minutes=30)
        [due] = [w for w in wakeups.pop_due(rig.now) if w.task is Task.DECIDE]
        [report] = rig.send(json.loads(encode(due)))
        assert report.outcome == "acted" and "acting regardless" in report.reason

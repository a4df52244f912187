"""The instance status sweep, end to end: DescribeInstanceStatus read as Karpenter's poller
reads it, its notices through triage, resolve, decide, act and the ledger, on the emulator
through the real ``kubernetes`` client.

Ground truth is Karpenter's AWS provider (v1.12+): ``pkg/providers/instancestatus/
instancestatus.go`` (``instanceStatusFilters``: three filter sets, the five event codes,
``UnhealthyThreshold`` 120 s, EBS ignored) and ``pkg/controllers/interruption/
instancestatus_controller.go`` (a poll every minute, one message per category).

EC2 is reached through boto3. moto (5.2) answers DescribeInstanceStatus with every running
instance ``ok`` whatever the filters, and knows neither ``Events`` nor ``ImpairedSince``: the
responses that carry them are given with botocore's ``Stubber``, which checks each request
(the three filter sets, ``MaxResults``, ``NextToken``) and each response against EC2's own
service model. DescribeInstances (the clusters, from the instances' tags) is moto's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from kubemu import Emulator, load_cluster_file
from lifeboat.aws.sweep import PAGE_SIZE, Ec2InstanceStatuses, sweep_request
from lifeboat.events.instance_status import EVENT_CODES, FILTER_SETS
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.karpenter.forceful import TERMINATION_TIMESTAMP
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from lifeboat.wakeup.codec import MemoryWakeups
from lifeboat_local.directory import directory_from_objects
from tests.integration.aws.test_fleet import PerCluster, cluster_objects, launch
from tests.support.events import aws_event, health_time, sqs_batch
from tests.support.fakes import RecordingMetrics
from tests.support.paths import EVENTS

# Outside general's weekday freeze (09:00-17:00 UTC), so its 20 % budget allows one node.
NOW = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
KARPENTER_INSTANCE = "i-0a1b2c3d4e5f60002"  # NodePool general, node ip-10-0-1-12
KARPENTER_NODE = "ip-10-0-1-12.ec2.internal"
KARPENTER_CLAIM = "general-b4wpl"
NODE_GROUP_INSTANCE = "i-0a1b2c3d4e5f60006"  # managed node group, node ip-10-0-3-16
NODE_GROUP_NODE = "ip-10-0-3-16.ec2.internal"
MAINTENANCE = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
SCHEDULED_TAINT = node_marks.taint_key(Kind.SCHEDULED_CHANGE)


# --- DescribeInstanceStatus as boto3 returns it ------------------------------------------


def check(status: str, since: datetime | None) -> dict[str, Any]:
    detail: dict[str, Any] = {"Name": "reachability", "Status": "passed"}
    if status == "impaired":
        detail = {"Name": "reachability", "Status": "failed"}
        if since is not None:
            detail["ImpairedSince"] = since
    return {"Status": status, "Details": [detail]}


def instance_status(
    instance_id: str,
    *,
    impaired_since: datetime | None = None,
    system_since: datetime | None = None,
    events: Sequence[dict[str, Any]] = (),
    ebs_impaired: bool = False,
    zone: str = "us-east-1b",
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "InstanceId": instance_id,
        "AvailabilityZone": zone,
        "InstanceState": {"Code": 16, "Name": "running"},
        "InstanceStatus": check("impaired" if impaired_since else "ok", impaired_since),
        "SystemStatus": check("impaired" if system_since else "ok", system_since),
    }
    if ebs_impaired:
        status["AttachedEbsStatus"] = {
            "Status": "impaired",
            "Details": [{"Name": "reachability", "Status": "failed", "ImpairedSince": NOW}],
        }
    if events:
        status["Events"] = list(events)
    return status


def scheduled_event(
    code: str, not_before: datetime = MAINTENANCE, description: str = "scheduled maintenance"
) -> dict[str, Any]:
    return {
        "InstanceEventId": f"instance-event-0{abs(hash((code, not_before))) % 10**16:016x}",
        "Code": code,
        "Description": description,
        "NotBefore": not_before,
        "NotAfter": not_before + timedelta(hours=2),
    }


def stub_sweep(
    stubber: Stubber, *sets: Sequence[Sequence[dict[str, Any]]], token_pages: bool = True
) -> None:
    """Queue one sweep's answers: for each of Karpenter's filter sets, its pages (a page
    is a list of instance statuses). The Stubber checks every request's parameters."""
    for filters, pages in zip(FILTER_SETS, sets, strict=True):
        for number, page in enumerate(pages):
            expected: dict[str, Any] = {"Filters": filters, "MaxResults": PAGE_SIZE}
            if number:
                expected["NextToken"] = f"page-{number}"
            response: dict[str, Any] = {"InstanceStatuses": list(page)}
            if number + 1 < len(pages):
                response["NextToken"] = f"page-{number + 1}"
            stubber.add_response("describe_instance_status", response, expected)


def one_set(statuses: Sequence[dict[str, Any]]) -> tuple[list[list[dict[str, Any]]], ...]:
    """A sweep where the first filter set finds ``statuses`` and the others nothing."""
    return ([list(statuses)], [[]], [[]])


def ec2_client() -> Any:
    return boto3.client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


# --- the sample cluster behind one pipeline ----------------------------------------------


class Rig:
    def __init__(self, emulator: Emulator, objects: list[dict[str, Any]], settings: Settings):
        self.emulator = emulator
        self.now = NOW
        self.ec2 = ec2_client()
        self.stubber = Stubber(self.ec2)
        self.stubber.activate()
        self.statuses = Ec2InstanceStatuses(self.ec2)
        self.pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(objects),
            settings=settings,
            clock=lambda: self.now,
            wakeups=MemoryWakeups(),
            ledger=MemoryLedger(),
            statuses=self.statuses,
        )

    def sweep(self, *statuses: dict[str, Any]) -> list[Report]:
        """One sweep request through the pipeline, EC2 finding ``statuses``."""
        stub_sweep(self.stubber, *one_set(statuses))
        request = sweep_request("sweep-" + self.now.isoformat(), self.now.isoformat())
        [result] = self.pipeline.process([json.dumps(request)])
        assert result.error is None, result.error
        self.stubber.assert_no_pending_responses()
        return result.reports

    def send(self, event: dict[str, Any]) -> list[Report]:
        [result] = self.pipeline.process([json.dumps(event)])
        assert result.error is None, result.error
        return result.reports

    def node(self, name: str) -> dict[str, Any]:
        node = self.emulator.get_object("Node", name)
        assert node is not None
        return node

    def claim(self, name: str) -> dict[str, Any]:
        claim = self.emulator.get_object("NodeClaim", name)
        assert claim is not None
        return claim

    def claims(self) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.emulator.objects("NodeClaim"))


def make_rig(settings: Settings | None = None) -> Iterator[Rig]:
    objects = copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
    with Emulator(objects) as emulator:
        rig = Rig(emulator, objects, settings or Settings())
        yield rig
        rig.stubber.deactivate()


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield from make_rig()


@pytest.fixture
def cordon_only() -> Iterator[Rig]:
    yield from make_rig(Settings(kind_actions={Kind.SCHEDULED_CHANGE: "cordon"}))


def types(report: Report) -> list[str]:
    return [a["type"] for a in report.actions]


# --- instance-impaired -------------------------------------------------------------------


def test_impaired_past_karpenters_unhealthy_threshold_replaces_the_node_at_once(rig: Rig) -> None:
    """instancestatus.go: a failed detail counts once ``clk.Since(ImpairedSince) >=
    UnhealthyThreshold`` (120 s); the controller then deletes the NodeClaim whatever the
    budgets say. Lifeboat: a replacement first, then the claim's deletion, as a state change."""
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, impaired_since=NOW - timedelta(minutes=3))
    )
    assert (report.kind, report.outcome, report.instance_id) == (
        "instance-impaired",
        "acted",
        KARPENTER_INSTANCE,
    )
    assert "instance status reachability failed" in report.reason
    assert types(report)[:2] == ["taint", "cordon"]
    assert "create-nodeclaim" in types(report) and "delete-nodeclaim" in types(report)
    assert rig.claim(KARPENTER_CLAIM)["metadata"].get("deletionTimestamp")
    node = rig.node(KARPENTER_NODE)
    assert node_marks.taint_key(Kind.INSTANCE_IMPAIRED) in {
        t["key"] for t in node["spec"]["taints"]
    }


def test_a_system_status_failure_counts_like_an_instance_status_failure(rig: Rig) -> None:
    """instancestatus.go reads both InstanceStatus and SystemStatus details."""
    [report] = rig.sweep(instance_status(KARPENTER_INSTANCE, system_since=NOW - timedelta(hours=1)))
    assert report.outcome == "acted"
    assert "system status reachability failed" in report.reason


def test_impaired_under_the_threshold_waits_for_the_next_sweep_and_is_then_acted_on(
    rig: Rig,
) -> None:
    """Under ``UnhealthyThreshold`` nothing happens, and nothing is remembered: the ledger
    must not swallow the later sweep that finds the instance impaired long enough."""
    since = NOW - timedelta(seconds=60)
    [early] = rig.sweep(instance_status(KARPENTER_INSTANCE, impaired_since=since))
    assert early.outcome == "ignored"
    assert "impaired for 60 s, under the 120 s threshold" in early.reason
    assert not rig.claim(KARPENTER_CLAIM)["metadata"].get("deletionTimestamp")
    assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")

    rig.now = NOW + timedelta(minutes=1)
    [late] = rig.sweep(instance_status(KARPENTER_INSTANCE, impaired_since=since))
    assert late.outcome == "acted"
    # The next sweep still reports it: already acted on, nothing more.
    rig.now = NOW + timedelta(minutes=2)
    [again] = rig.sweep(instance_status(KARPENTER_INSTANCE, impaired_since=since))
    assert again.outcome == "ignored" and "duplicate" in again.reason


def test_the_threshold_is_a_setting() -> None:
    for rig in make_rig(Settings(impaired_threshold=timedelta(seconds=30))):
        since = NOW - timedelta(seconds=60)
        [report] = rig.sweep(instance_status(KARPENTER_INSTANCE, impaired_since=since))
        assert report.outcome == "acted"


def test_an_impaired_node_group_node_is_drained_for_its_group_to_replace(rig: Rig) -> None:
    """No NodeClaim: taint, cordon and evict; the Auto Scaling group's EC2 health check
    marks the impaired instance unhealthy and replaces it."""
    [report] = rig.sweep(
        instance_status(
            NODE_GROUP_INSTANCE, impaired_since=NOW - timedelta(minutes=5), zone="us-east-1a"
        )
    )
    assert report.outcome == "acted"
    assert "draining it through the Eviction API" in report.reason
    assert rig.node(NODE_GROUP_NODE)["spec"]["unschedulable"] is True
    assert "evict" in types(report)


def test_attached_ebs_impaired_is_reported_not_acted_on(rig: Rig) -> None:
    """instancestatus.go: "EBS status check failures are ignored for now"."""
    [report] = rig.sweep(instance_status(KARPENTER_INSTANCE, ebs_impaired=True))
    assert report.outcome == "ignored"
    assert "attached EBS status impaired: reported, not acted on" in report.reason
    assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


def test_a_node_karpenter_already_deletes_gets_nothing_more(rig: Rig) -> None:
    """Karpenter's own poller (or its queue) deleted the claim first: Lifeboat adds no
    replacement, taint or second delete (as for a claim Karpenter is deleting today)."""
    # Karpenter deleted the claim, and its termination controller the Node right after;
    # both stay while karpenter.sh/termination drains (the Spot path reads no claim: the
    # deleting Node tells it, as in test_karpenter_exact).
    # Its poller (v1.13+) annotated the claim before deleting it: forced already
    # (test_impaired_forceful: a claim being deleted gently gets the annotation).
    for obj in (rig.claim(KARPENTER_CLAIM), rig.node(KARPENTER_NODE)):
        obj["metadata"]["deletionTimestamp"] = "2026-12-01T17:59:00Z"
        obj["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        if obj["kind"] == "NodeClaim":
            obj["metadata"]["annotations"][TERMINATION_TIMESTAMP] = "2026-12-01T17:59:00Z"
        rig.emulator.put_object(obj)
    before = rig.claims()
    node_before = rig.node(KARPENTER_NODE)
    rig.emulator.reset_counts()
    reports = rig.sweep(
        instance_status(
            KARPENTER_INSTANCE,
            impaired_since=NOW - timedelta(minutes=3),
            events=[scheduled_event("system-reboot")],
        )
    )
    assert [r.kind for r in reports] == ["instance-impaired", "scheduled-change"]
    for report in reports:
        assert report.outcome == "ignored"
        assert "already being deleted" in report.reason and "nothing to add" in report.reason
    assert rig.claims() == before
    writes = rig.emulator.requests_by_resource
    assert writes[("create", "nodeclaims")] == 0 and writes[("delete", "nodeclaims")] == 0
    assert all(report.actions == () for report in reports)
    # The guarded taint patch (sent unread, NTH-style) is refused for a deleting node.
    assert rig.node(KARPENTER_NODE)["spec"] == node_before["spec"]


# --- EC2 scheduled events ----------------------------------------------------------------


def decided_as_health(instance: str, start: datetime) -> tuple[str, str]:
    """The outcome and actions AWS Health's scheduledChange gets, in a fresh cluster."""
    for rig in make_rig():
        event = aws_event(
            "scheduled-change", instance=instance, startTime=health_time(start), time=NOW
        )
        [report] = rig.send(event)
        return str(report.outcome), ",".join(types(report))
    raise AssertionError("unreachable")


@pytest.mark.parametrize("code", EVENT_CODES)
def test_each_of_karpenters_five_event_codes_is_scheduled_maintenance_like_health(
    code: str, rig: Rig
) -> None:
    """instancestatus.go's event.code filter: instance-reboot, system-reboot,
    system-maintenance, instance-retirement, instance-stop. Karpenter deletes the claim at
    once; Lifeboat gives it Health's voluntary treatment (budgets and windows)."""
    [report] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[scheduled_event(code)]))
    assert (report.kind, report.instance_id) == ("scheduled-change", KARPENTER_INSTANCE)
    assert f"scheduled maintenance ({code})" in report.reason
    assert (str(report.outcome), ",".join(types(report))) == decided_as_health(
        KARPENTER_INSTANCE, MAINTENANCE
    )


def test_inside_a_closed_window_the_ec2_event_waits_until_the_lead_before_its_start() -> None:
    """general's weekday freeze (09:00-17:00 UTC) says no: deferred, as Health's would be,
    waking up ``scheduled_change_lead`` (30 min) before NotBefore, to act regardless."""
    for rig in make_rig():
        rig.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
        start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
        [waiting] = rig.sweep(
            instance_status(KARPENTER_INSTANCE, events=[scheduled_event("system-reboot", start)])
        )
        assert waiting.outcome == "deferred"
        assert waiting.deferred_until == start - timedelta(minutes=30)
        assert not rig.claim(KARPENTER_CLAIM)["metadata"].get("deletionTimestamp")


def test_an_unknown_event_code_is_not_maintenance(rig: Rig) -> None:
    [report] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, events=[scheduled_event("instance-hibernate")])
    )
    assert report.outcome == "ignored" and "is not maintenance" in report.reason


@pytest.mark.parametrize("health_first", [True, False], ids=["health-first", "ec2-first"])
def test_health_and_ec2_announcing_one_maintenance_act_once(rig: Rig, health_first: bool) -> None:
    """Health's startTime and EC2's NotBefore name the same start: whichever arrives first
    acts, the other is a duplicate (``Notice.ledger_key``), and one replacement is made."""
    health = aws_event(
        "scheduled-change",
        instance=KARPENTER_INSTANCE,
        startTime=health_time(MAINTENANCE),
        time=NOW,
    )
    ec2 = instance_status(KARPENTER_INSTANCE, events=[scheduled_event("instance-retirement")])
    claims_before = len(rig.claims())
    if health_first:
        [first] = rig.send(health)
        [second] = rig.sweep(ec2)
    else:
        [first] = rig.sweep(ec2)
        [second] = rig.send(health)
    assert first.outcome == "acted"
    assert (second.outcome, second.reason) == ("ignored", "duplicate delivery: already handled")
    assert len(rig.claims()) == claims_before + 1  # one replacement, not two


def test_a_rescheduled_maintenance_is_a_new_one(rig: Rig) -> None:
    [first] = rig.sweep(
        instance_status(KARPENTER_INSTANCE, events=[scheduled_event("system-reboot")])
    )
    later = MAINTENANCE + timedelta(days=2)
    # The first start no longer reported is counted missing (it ends only once missing
    # from complete sweeps for a while: lifeboat.flow.sweep_holds); the new start is a new
    # maintenance, not a duplicate.
    missing, second = rig.sweep(
        instance_status(KARPENTER_INSTANCE, events=[scheduled_event("system-reboot", later)])
    )
    assert first.outcome == "acted"
    assert missing.event_id == f"vanished:{KARPENTER_INSTANCE}:20261208T090000Z"
    assert missing.outcome == "ignored" and "missing from 1 complete sweep(s)" in missing.reason
    assert "duplicate" not in second.reason


# --- the end of a maintenance ------------------------------------------------------------


@pytest.mark.parametrize("word", ["Completed", "Canceled"])
def test_a_finished_event_uncordons_a_node_that_was_only_cordoned(
    cordon_only: Rig, word: str
) -> None:
    """``scheduled-change=cordon``: the node is only tainted, cordoned and taken out of load
    balancers; EC2's ``[Completed]``/``[Canceled]`` description undoes all three once the
    node is Ready (the Node Termination Handler's uncordon after a reboot)."""
    rig = cordon_only
    event = scheduled_event("system-reboot")
    [acted] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
    assert acted.outcome == "acted" and types(acted) == ["taint", "cordon", "label"]
    node = rig.node(KARPENTER_NODE)
    assert node["spec"]["unschedulable"] is True
    assert nodes.excluded_from_load_balancers(node)

    rig.now = MAINTENANCE + timedelta(minutes=20)
    done = {**event, "Description": f"[{word}] scheduled maintenance"}
    [undone] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert undone.outcome == "acted", undone.reason
    assert "is over" in undone.reason
    assert types(undone) == ["untaint", "uncordon", "unlabel"]
    node = rig.node(KARPENTER_NODE)
    assert not node["spec"].get("unschedulable")
    assert SCHEDULED_TAINT not in {t["key"] for t in node["spec"].get("taints") or []}
    assert not nodes.excluded_from_load_balancers(node)
    assert not node_marks.excluded_by_lifeboat(node)

    # Reported again by the next sweep: nothing left to undo.
    rig.now += timedelta(minutes=1)
    [again] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert again.outcome == "ignored" and "nothing to undo" in again.reason


def test_a_finished_event_waits_for_the_node_to_be_ready(cordon_only: Rig) -> None:
    rig = cordon_only
    event = scheduled_event("system-reboot")
    rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
    node = rig.node(KARPENTER_NODE)
    for condition in node["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "False"
    rig.emulator.put_object(node)
    done = {**event, "Description": "[Completed] scheduled maintenance"}
    [report] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert report.outcome == "ignored" and "not Ready yet" in report.reason
    assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True


def test_a_closed_health_event_uncordons_a_node_that_was_only_cordoned(cordon_only: Rig) -> None:
    rig = cordon_only
    health = aws_event(
        "scheduled-change",
        instance=KARPENTER_INSTANCE,
        startTime=health_time(MAINTENANCE),
        time=NOW,
    )
    rig.send(health)
    assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True
    closed = copy.deepcopy(health)
    closed["id"] = "closed-" + closed["id"]
    closed["detail"]["statusCode"] = "closed"
    [report] = rig.send(closed)
    assert report.outcome == "acted"
    assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")


def test_a_replaced_node_is_not_restored(rig: Rig) -> None:
    """Replaced (claim deleted): the end of the maintenance finds the claim deleting."""
    event = scheduled_event("system-reboot")
    [acted] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
    assert "delete-nodeclaim" in types(acted)
    done = {**event, "Description": "[Completed] scheduled maintenance"}
    [report] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[done]))
    assert report.outcome == "ignored" and "nothing to add" in report.reason
    assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True


# --- the sweep ---------------------------------------------------------------------------


def test_pagination_reads_every_page_of_every_filter_set_and_each_instance_once(rig: Rig) -> None:
    """Karpenter's ``ec2.NewDescribeInstanceStatusPaginator`` per filter set; an instance
    found by two sets (impaired and with an event) is read once (its ``seen`` map)."""
    impaired = instance_status(
        KARPENTER_INSTANCE,
        impaired_since=NOW - timedelta(minutes=3),
        events=[scheduled_event("system-maintenance")],
    )
    other = instance_status(
        NODE_GROUP_INSTANCE, zone="us-east-1a", events=[scheduled_event("instance-stop")]
    )
    stub_sweep(rig.stubber, [[impaired], [other]], [[]], [[impaired], []])
    request = sweep_request("paged", NOW.isoformat())
    [result] = rig.pipeline.process([json.dumps(request)])
    rig.stubber.assert_no_pending_responses()
    assert rig.statuses.calls == 5
    assert [(r.kind, r.instance_id) for r in result.reports] == [
        ("instance-impaired", KARPENTER_INSTANCE),
        ("scheduled-change", KARPENTER_INSTANCE),
        ("scheduled-change", NODE_GROUP_INSTANCE),
    ]


def test_a_healthy_fleet_as_moto_describes_it_gives_nothing_to_do(aws: boto3.Session) -> None:
    """moto ignores the filters and answers every running instance ``ok``: read as EC2's
    answer, none of them is impaired or scheduled, and the sweep says so in one report."""
    ec2 = aws.client("ec2")
    for _ in range(3):
        launch(ec2, {"eks:cluster-name": "prod"})
    statuses = Ec2InstanceStatuses(ec2)
    with Emulator([]) as emulator:  # no node carries an EC2 maintenance's label
        pipeline = Pipeline(
            clusters=PerCluster({"prod": KubeApi(emulator.api_client())}),
            directory=Ec2InstanceDirectory(ec2),
            settings=Settings(clusters=("prod",)),
            clock=lambda: NOW,
            statuses=statuses,
        )
        [result] = pipeline.process([json.dumps(sweep_request("moto", NOW.isoformat()))])
    assert statuses.calls == 3
    [report] = result.reports
    assert report.outcome == "ignored"
    assert "3 instance(s) described, none impaired or scheduled" in report.reason


def test_a_sweep_across_two_clusters_and_an_unmanaged_instance(aws: boto3.Session) -> None:
    """Through the Lambda handler: the schedule's message in an SQS batch, DescribeInstances
    on moto telling each instance's cluster from its tags, one emulator per cluster; the
    instance of a cluster this stack does not manage is ignored and counted as unmanaged."""
    moto_ec2 = aws.client("ec2")

    def karpenter(cluster: str, claim: str) -> dict[str, str]:
        return {
            "eks:cluster-name": cluster,
            "karpenter.sh/nodeclaim": claim,
            "karpenter.sh/nodepool": "general",
        }

    prod = [
        launch(moto_ec2, karpenter("prod", "general-7xkqz")),
        launch(moto_ec2, karpenter("prod", "x")),
    ]
    stage = [
        launch(moto_ec2, karpenter("stage", "general-7xkqz")),
        launch(moto_ec2, karpenter("stage", "y")),
    ]
    foreign = launch(moto_ec2, {"eks:cluster-name": "someone-elses"})
    status_ec2 = ec2_client()
    with (
        Emulator(cluster_objects(prod, "prod")) as prod_emu,
        Emulator(cluster_objects(stage, "stage")) as stage_emu,
        Stubber(status_ec2) as stubber,
    ):
        for emu, node_name in ((prod_emu, "node-prod-0"), (stage_emu, "node-stage-0")):
            claim = emu.get_object("NodeClaim", "general-7xkqz")
            assert claim is not None
            claim["status"]["nodeName"] = node_name
            emu.put_object(claim)
        since = NOW - timedelta(minutes=10)
        stub_sweep(
            stubber,
            [[instance_status(prod[0], impaired_since=since, zone="us-east-1a")]],
            [[instance_status(foreign, system_since=since)]],
            [
                [
                    instance_status(
                        stage[0], zone="us-east-1a", events=[scheduled_event("system-reboot")]
                    )
                ]
            ],
        )
        pipeline = Pipeline(
            clusters=PerCluster(
                {"prod": KubeApi(prod_emu.api_client()), "stage": KubeApi(stage_emu.api_client())}
            ),
            directory=Ec2InstanceDirectory(moto_ec2),
            settings=Settings(clusters=("prod", "stage")),
            clock=lambda: NOW,
            ledger=MemoryLedger(),
            statuses=Ec2InstanceStatuses(status_ec2),
        )
        metrics = RecordingMetrics()
        sweep = sweep_request("3f0c8a52-sweep", "2026-12-01T18:00:00Z")
        response = handle_batch(sqs_batch(sweep), None, pipeline, metrics=metrics)
        stubber.assert_no_pending_responses()

        assert response == {"batchItemFailures": []}
        assert metrics.outcomes() == {"acted": 2, "ignored": 1}
        assert metrics.count("UnmanagedInstances") == 1
        for emu, name, taint in (
            (prod_emu, "node-prod-0", Kind.INSTANCE_IMPAIRED),
            (stage_emu, "node-stage-0", Kind.SCHEDULED_CHANGE),
        ):
            node = emu.get_object("Node", name)
            assert node is not None
            assert node["spec"]["unschedulable"] is True
            assert {t["key"] for t in node["spec"]["taints"]} == {node_marks.taint_key(taint)}


def test_a_sweep_request_without_an_ec2_reader_is_ignored_with_its_reason(rig: Rig) -> None:
    rig.pipeline.statuses = None
    [report] = rig.send(sweep_request("no-reader", NOW.isoformat()))
    assert report.outcome == "ignored" and "reads no EC2 status" in report.reason


def test_the_sample_response_replays_one_impaired_and_one_scheduled_event_notice() -> None:
    """``events/status/describe-instance-status.json`` (``make demo``): a response as boto3
    returns it, times written as ``json.dumps(..., default=str)`` writes them; EC2's
    ``date`` header is when it answered. Read as the sweep reads EC2's pages."""
    from lifeboat.events import parse_statuses

    text = (EVENTS / "status" / "describe-instance-status.json").read_text(encoding="utf-8")
    impaired, scheduled = parse_statuses({"Pages": [json.loads(text)]}, received_at=NOW)
    assert (impaired.kind, impaired.instance_id) == (Kind.INSTANCE_IMPAIRED, "i-0a1b2c3d4e5f60008")
    assert impaired.event_time == datetime(2026, 12, 1, 13, 58, tzinfo=UTC)
    assert impaired.deadline == datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
    assert (scheduled.kind, scheduled.instance_id) == (Kind.SCHEDULED_CHANGE, "i-0a1b2c3d4e5f60009")
    assert (scheduled.event_id, scheduled.detail) == (
        "instance-event-0d59937288b749b32",
        "system-reboot",
    )
    assert scheduled.deadline == MAINTENANCE


def test_the_end_of_a_maintenance_survives_being_handed_on_as_a_remainder() -> None:
    """A sweep finding more instances than one message acts on hands the rest on as
    remainder wake-ups (lifeboat.flow.split); an ended maintenance must stay ended through the
    wake-up's wire format, or its remainder would act on the node instead of restoring it."""
    from lifeboat.events.notice import Notice
    from lifeboat.flow.split import expand, remainders
    from lifeboat.wakeup.codec import decode, encode

    ended = Notice(
        kind=Kind.SCHEDULED_CHANGE,
        event_id="instance-event-0abc",
        event_time=NOW,
        instance_id=KARPENTER_INSTANCE,
        deadline=MAINTENANCE,
        detail="system-reboot",
        ends_maintenance=True,
    )
    [wakeup] = remainders([ended])
    assert expand(decode(json.loads(encode(wakeup)))) == [ended]


# --- a rebalance cordon is not for ever --------------------------------------------------


def rebalance_rig(release: timedelta) -> Iterator[Rig]:
    yield from make_rig(
        Settings(
            kind_actions={Kind.REBALANCE_RECOMMENDATION: "cordon"},
            rebalance_cordon_release=release,
        )
    )


def test_a_node_only_cordoned_for_a_rebalance_is_uncordoned_six_hours_later() -> None:
    """``rebalance-recommendation=cordon``: the node is cordoned; no interruption followed
    and it still runs and is Ready ``rebalance_cordon_release`` (6 h) later, so the
    ``release-cordon`` follow-up uncordons it, with an Event on the node and a report."""
    from lifeboat.wakeup.codec import Task, encode

    for rig in rebalance_rig(timedelta(hours=6)):
        event = aws_event("rebalance-recommendation", instance=KARPENTER_INSTANCE, time=NOW)
        [acted] = rig.send(event)
        assert acted.outcome == "acted" and types(acted) == ["taint", "cordon", "label"]
        wakeups = rig.pipeline.wakeups
        assert isinstance(wakeups, MemoryWakeups)
        [release] = [w for w in wakeups.pending.values() if w.task is Task.RELEASE_CORDON]
        assert release.due == NOW + timedelta(hours=6)
        assert wakeups.pop_due(NOW + timedelta(hours=5, minutes=59)) == []

        rig.now = NOW + timedelta(hours=6)
        [due] = wakeups.pop_due(rig.now)
        [report] = rig.send(json.loads(encode(due)))
        assert (report.outcome, report.wakeup) == ("acted", "release-cordon")
        assert "was only cordoned and still runs" in report.reason
        assert types(report) == ["untaint", "uncordon", "unlabel"]
        node = rig.node(KARPENTER_NODE)
        assert not node["spec"].get("unschedulable")
        assert not nodes.excluded_from_load_balancers(node)
        events = [
            e
            for e in rig.emulator.objects("Event")
            if e["involvedObject"]["name"] == KARPENTER_NODE
        ]
        [released] = [e for e in events if "was only cordoned and still runs" in e["message"]]
        assert released["reason"] == "RebalanceRecommendationReleased"


def test_a_node_replaced_since_is_not_released() -> None:
    from lifeboat.wakeup.codec import encode

    for rig in rebalance_rig(timedelta(hours=6)):
        rig.send(aws_event("rebalance-recommendation", instance=KARPENTER_INSTANCE, time=NOW))
        assert isinstance(rig.pipeline.wakeups, MemoryWakeups)
        [due] = rig.pipeline.wakeups.pop_due(NOW + timedelta(hours=6))
        node = rig.node(KARPENTER_NODE)
        node["metadata"]["deletionTimestamp"] = "2026-12-01T20:00:00Z"
        node["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        rig.emulator.put_object(node)
        rig.now = NOW + timedelta(hours=6)
        [report] = rig.send(json.loads(encode(due)))
        assert report.outcome == "ignored" and "being deleted" in report.reason
        assert rig.node(KARPENTER_NODE)["spec"]["unschedulable"] is True


def test_zero_keeps_the_cordon() -> None:
    for rig in rebalance_rig(timedelta(0)):
        rig.send(aws_event("rebalance-recommendation", instance=KARPENTER_INSTANCE, time=NOW))
        assert isinstance(rig.pipeline.wakeups, MemoryWakeups)
        assert rig.pipeline.wakeups.pending == {}


def test_a_maintenance_cancelled_while_deferred_is_not_acted_on_when_its_wake_up_comes() -> None:
    """Deferred by general's weekday freeze, with a wake-up at NotBefore - lead; cancelled
    meanwhile: its pending mark comes off, and the wake-up, when it comes due, lets it go."""
    from lifeboat.wakeup.codec import Task, encode

    for rig in make_rig():
        rig.now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
        start = datetime(2026, 12, 1, 16, 0, tzinfo=UTC)
        event = scheduled_event("system-maintenance", start)
        [waiting] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[event]))
        assert waiting.outcome == "deferred"
        assert {t["effect"] for t in rig.node(KARPENTER_NODE)["spec"]["taints"]} >= {
            "PreferNoSchedule"
        }

        rig.now = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
        cancelled = {**event, "Description": "[Canceled] scheduled maintenance"}
        [undone] = rig.sweep(instance_status(KARPENTER_INSTANCE, events=[cancelled]))
        assert undone.outcome == "acted" and types(undone)[0] == "untaint"
        node = rig.node(KARPENTER_NODE)
        assert SCHEDULED_TAINT not in {t["key"] for t in node["spec"].get("taints") or []}
        assert node["metadata"]["annotations"][node_marks.MAINTENANCE_ENDED_ANNOTATION] == (
            "2026-12-01T16:00:00Z"
        )

        wakeups = rig.pipeline.wakeups
        assert isinstance(wakeups, MemoryWakeups)
        rig.now = start - timedelta(minutes=30)
        due = [w for w in wakeups.pop_due(rig.now) if w.task is Task.DECIDE]
        assert due
        for wakeup in due:
            [report] = rig.send(json.loads(encode(wakeup)))
            assert report.outcome == "ignored" and "maintenance ended" in report.reason
        assert not rig.claim(KARPENTER_CLAIM)["metadata"].get("deletionTimestamp")
        assert not rig.node(KARPENTER_NODE)["spec"].get("unschedulable")

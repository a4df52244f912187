"""Fleet and operations: many clusters behind one handler, node groups drained with lifecycle
heartbeats, and the safety switches (managed tag, per-kind action, dry run).

Through the real handler, boto3 to moto (EC2 tags decide the cluster) and the official
Kubernetes client to one emulator per cluster.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from kubemu import Emulator, load_cluster_file
from lifeboat.aws.lifecycle import AutoScalingLifecycle
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from lifeboat.wakeup.codec import MemoryWakeups, encode
from lifeboat_local.directory import directory_from_objects
from tests.support.aws import ANY_AMI
from tests.support.events import aws_event, sqs_batch
from tests.support.fakes import RecordingMetrics
from tests.support.paths import EVENTS
from tests.support.present import present

NOW = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)  # outside general's weekday freeze
REGION = "us-east-1"


def writes(emulator: Emulator) -> int:
    return sum(emulator.requests[v] for v in ("create", "update", "patch", "delete"))


# --- two clusters, one handler -----------------------------------------------------------


class PerCluster:
    """The production router's shape (service.EksClusters): one KubeApi per cluster."""

    def __init__(self, apis: dict[str, KubeApi]) -> None:
        self.apis = apis
        self.asked: Counter[str | None] = Counter()

    def kube(self, cluster: str | None) -> KubeApi:
        self.asked[cluster] += 1
        assert cluster is not None, "every instance here carries its cluster tag"
        return self.apis[cluster]


def cluster_objects(instance_ids: list[str], suffix: str) -> list[dict[str, Any]]:
    """The sample cluster, its first two Karpenter nodes re-pointed at moto's instances."""
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    renamed = {"ip-10-0-1-11.ec2.internal": 0, "ip-10-0-1-12.ec2.internal": 1}
    provider_of_claim: dict[str, str] = {}
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"] in renamed:
            index = renamed[obj["metadata"]["name"]]
            zone = obj["metadata"]["labels"][nodes.ZONE_LABEL]
            obj["spec"]["providerID"] = f"aws:///{zone}/{instance_ids[index]}"
            obj["metadata"]["name"] = f"node-{suffix}-{index}"
            owner = nodes.nodeclaim_owner(obj)
            if owner:
                provider_of_claim[owner[0]] = obj["spec"]["providerID"]
    # The claims of those nodes run on the same instances (Karpenter's status.providerID).
    for obj in objects:
        if obj["kind"] == "NodeClaim" and obj["metadata"]["name"] in provider_of_claim:
            obj["status"]["providerID"] = provider_of_claim[obj["metadata"]["name"]]
    return objects


@pytest.fixture
def ec2(aws: boto3.Session) -> Any:
    return aws.client("ec2")


def launch(ec2: Any, tags: dict[str, str]) -> str:
    image = ANY_AMI
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    reservation = ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, InstanceType="m5.large", TagSpecifications=spec
    )
    instance: dict[str, Any] = reservation["Instances"][0]
    return str(instance["InstanceId"])


def test_one_handler_serves_two_clusters_and_counts_the_unmanaged(ec2: Any) -> None:
    def karpenter(cluster: str, claim: str) -> dict[str, str]:
        return {
            "eks:cluster-name": cluster,
            "karpenter.sh/nodeclaim": claim,
            "karpenter.sh/nodepool": "general",
        }

    prod = [launch(ec2, karpenter("prod", "general-7xkqz")), launch(ec2, karpenter("prod", "x"))]
    stage = [launch(ec2, karpenter("stage", "general-7xkqz")), launch(ec2, karpenter("stage", "y"))]
    foreign = launch(ec2, {"eks:cluster-name": "someone-elses"})
    loose = launch(ec2, {"Name": "bastion"})

    # moto's private DNS names are not the sample's node names: the instance's NodeClaim tag
    # leads to the node, as for custom hostnames in a real account.
    prod_objects, stage_objects = cluster_objects(prod, "prod"), cluster_objects(stage, "stage")
    with Emulator(prod_objects) as prod_emu, Emulator(stage_objects) as stage_emu:
        for emu, node_name in ((prod_emu, "node-prod-0"), (stage_emu, "node-stage-0")):
            claim = emu.get_object("NodeClaim", "general-7xkqz")
            assert claim is not None
            claim["status"]["nodeName"] = node_name
            emu.put_object(claim)
        router = PerCluster(
            {
                "prod": KubeApi(prod_emu.api_client()),
                "stage": KubeApi(stage_emu.api_client()),
            }
        )
        pipeline = Pipeline(
            clusters=router,
            directory=Ec2InstanceDirectory(ec2),
            settings=Settings(clusters=("prod", "stage")),
            clock=lambda: NOW,
            ledger=MemoryLedger(),
        )
        spot = "spot-interruption"
        metrics = RecordingMetrics()
        response = handle_batch(
            sqs_batch(
                aws_event(spot, instance=prod[0], event_id="fleet-prod"),
                aws_event(spot, instance=stage[0], event_id="fleet-stage"),
                aws_event(spot, instance=foreign, event_id="fleet-foreign"),
                aws_event(spot, instance=loose, event_id="fleet-loose"),
            ),
            None,
            pipeline,
            metrics=metrics,
        )

        assert response == {"batchItemFailures": []}
        for emu, name in ((prod_emu, "node-prod-0"), (stage_emu, "node-stage-0")):
            node = emu.get_object("Node", name)
            assert node is not None
            assert node["spec"].get("unschedulable") is True
            assert {t["key"] for t in node["spec"]["taints"]} == {node_marks.taint_key(Kind(spot))}
            # Deleted; Karpenter's termination finalizer keeps it until the instance is gone.
            assert present(emu.get_object("NodeClaim", "general-7xkqz"), "NodeClaim general-7xkqz")[
                "metadata"
            ]["deletionTimestamp"]
        # Each cluster was reached through its own client, and only for its own instance.
        assert set(router.asked) == {"prod", "stage"}
        # The other cluster's instance and the untagged one: ignored, counted, not lost.
        assert metrics.count("UnmanagedInstances") == 2
        outcomes = metrics.outcomes()
        assert outcomes == {"acted": 2, "ignored": 2}


# --- node groups: drain, heartbeat, CONTINUE ---------------------------------------------


def test_a_pdb_blocked_drain_heartbeats_then_completes_once_the_pdb_allows() -> None:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    # The other coredns replica is not Ready: the PDB (maxUnavailable 1) allows no eviction.
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] == "coredns-5d78c9869d-9mzl7":
            obj["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    hook = {
        "LifecycleHookName": "lifeboat-drain",
        "AutoScalingGroupName": "eks-system-20260101-1a2b3c4d",
        "LifecycleActionToken": "5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
        "InstanceId": "i-0a1b2c3d4e5f60006",
    }
    autoscaling = boto3.client(
        "autoscaling", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    clock = {"now": NOW}
    wakeups = MemoryWakeups()
    with Emulator(objects) as emu, Stubber(autoscaling) as asg:
        emu.clock.set(NOW, frozen=True)  # evicted pods terminate on the test's clock
        asg.add_response("record_lifecycle_action_heartbeat", {}, hook)
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(objects),
            settings=Settings(),
            clock=lambda: clock["now"],
            lifecycle=AutoScalingLifecycle(autoscaling),
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        event = json.loads((EVENTS / "asg-termination.json").read_text())
        first = pipeline.process([json.dumps(event)])[0]
        assert first.error is None
        [report] = first.reports
        assert "held by PodDisruptionBudgets" in report.reason
        assert not any(a["type"] == "complete-lifecycle-action" for a in report.actions)
        asg.assert_no_pending_responses()  # the heartbeat was sent
        assert emu.get_object("Pod", "coredns-5d78c9869d-4xkq2", "kube-system") is not None

        # The other replica recovers; the drain's wake-up evicts and lets the ASG go on.
        replica = emu.get_object("Pod", "coredns-5d78c9869d-9mzl7", "kube-system")
        assert replica is not None
        replica["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        emu.put_object(replica)
        # Evicted, the pod terminates within its grace period: the instance must outlive
        # it, so the action is not completed yet (NTH issue #355); a heartbeat keeps it.
        asg.add_response("record_lifecycle_action_heartbeat", {}, hook)
        clock["now"] = NOW + timedelta(minutes=1)
        emu.clock.set(clock["now"], frozen=True)
        due = wakeups.pop_due(clock["now"])
        assert [w.task for w in due] == ["continue-drain"]
        second = pipeline.process([encode(w) for w in due])[0]
        assert second.error is None
        actions = [a["type"] for a in second.reports[0].actions]
        assert actions == ["evict"]
        assert "evicted pod(s) still terminating" in second.reports[0].reason
        asg.assert_no_pending_responses()
        assert present(
            emu.get_object("Pod", "coredns-5d78c9869d-4xkq2", "kube-system"),
            "Pod coredns-5d78c9869d-4xkq2 in kube-system",
        )["metadata"]["deletionTimestamp"]

        # Its grace period over, the pod is gone: CONTINUE.
        asg.add_response(
            "complete_lifecycle_action", {}, {**hook, "LifecycleActionResult": "CONTINUE"}
        )
        clock["now"] = NOW + timedelta(minutes=3)
        emu.clock.set(clock["now"], frozen=True)
        due = wakeups.pop_due(clock["now"])
        assert [w.task for w in due] == ["continue-drain"]
        third = pipeline.process([encode(w) for w in due])[0]
        assert third.error is None
        assert [a["type"] for a in third.reports[0].actions] == ["complete-lifecycle-action"]
        asg.assert_no_pending_responses()
        assert emu.get_object("Pod", "coredns-5d78c9869d-4xkq2", "kube-system") is None
        assert wakeups.next_due() is None


# --- safety switches ---------------------------------------------------------------------


def replay_pipeline(
    emu: Emulator, objects: list[dict[str, Any]], settings: Settings, now: datetime = NOW
) -> Pipeline:
    return Pipeline(
        clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2))),
        directory=directory_from_objects(objects),
        settings=settings,
        clock=lambda: now,
        wakeups=MemoryWakeups(),
        ledger=MemoryLedger(),
    )


def all_samples() -> list[str]:
    return [p.read_text() for p in sorted(EVENTS.glob("*.json"))]


def test_dry_run_decides_everything_and_changes_nothing() -> None:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emu:
        before = emu.dump()
        pipeline = replay_pipeline(emu, objects, Settings(dry_run=True))
        results = pipeline.process(all_samples())
        reports = [r for result in results for r in result.reports]
        assert all(result.error is None for result in results)
        assert writes(emu) == 0
        assert emu.dump() == before
        acted = [r for r in reports if r.outcome == "acted"]
        assert acted, "dry run still decides"
        assert all(r.reason.startswith("dry run, nothing changed") for r in acted)
        assert any(a["type"] == "create-nodeclaim" for r in acted for a in r.actions)


def test_rebalance_configured_to_cordon_only_creates_no_replacement() -> None:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emu:
        settings = Settings(kind_actions={Kind.REBALANCE_RECOMMENDATION: "cordon"})
        pipeline = replay_pipeline(emu, objects, settings)
        [result] = pipeline.process([(EVENTS / "rebalance-recommendation.json").read_text()])
        [report] = result.reports
        assert report.outcome == "acted"
        assert [a["type"] for a in report.actions] == ["taint", "cordon", "label"]
        assert emu.requests_by_resource[("create", "nodeclaims")] == 0


def test_instances_without_the_managed_tag_are_left_alone() -> None:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    directory = directory_from_objects(objects)
    with Emulator(objects) as emu:
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emu.api_client())),
            directory=directory,
            settings=Settings(managed_tag="lifeboat/managed"),
            clock=lambda: NOW,
            ledger=MemoryLedger(),
        )
        [result] = pipeline.process([(EVENTS / "spot-interruption.json").read_text()])
        [report] = result.reports
        assert report.outcome == "ignored"
        assert report.unmanaged
        assert "managed tag lifeboat/managed" in report.reason
        assert writes(emu) == 0


def test_an_opted_out_nodepool_is_left_alone_even_for_spot() -> None:
    objects = copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
    for obj in objects:
        if obj["kind"] == "NodePool" and obj["metadata"]["name"] == "general":
            obj["metadata"]["annotations"][node_marks.OPT_OUT_ANNOTATION] = "true"
    with Emulator(objects) as emu:
        pipeline = replay_pipeline(emu, objects, Settings())
        [result] = pipeline.process([(EVENTS / "spot-interruption.json").read_text()])
        [report] = result.reports
        assert report.outcome == "ignored"
        assert "opted out" in report.reason
        assert emu.requests["patch"] == 0


def test_a_deferred_rebalance_let_go_removes_its_pending_mark() -> None:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    rebalance = (EVENTS / "rebalance-recommendation.json").read_text()
    node_name = "ip-10-0-1-12.ec2.internal"
    with Emulator(objects) as emu:
        freeze = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)  # inside general's weekday freeze
        pipeline = replay_pipeline(emu, objects, Settings(), freeze)
        [deferred] = pipeline.process([rebalance])[0].reports
        assert deferred.outcome == "deferred"
        marked = emu.get_object("Node", node_name)
        assert marked is not None
        assert [t["effect"] for t in marked["spec"]["taints"]] == ["PreferNoSchedule"]
        # The operator opts the pool out while the notice waits; its wake-up lets it go.
        pool = emu.get_object("NodePool", "general")
        assert pool is not None
        pool["metadata"]["annotations"][node_marks.OPT_OUT_ANNOTATION] = "true"
        emu.put_object(pool)
        later = replay_pipeline(emu, objects, Settings(), freeze)
        [let_go] = later.process([rebalance])[0].reports
        assert let_go.outcome == "ignored"
        assert let_go.actions == (
            {"type": "untaint", "key": node_marks.taint_key(Kind.REBALANCE_RECOMMENDATION)},
        )
        cleared = emu.get_object("Node", node_name)
        assert cleared is not None
        assert not cleared["spec"].get("taints")


def test_a_follow_up_finds_its_cluster_when_ec2_no_longer_knows_the_instance() -> None:
    from lifeboat.events import parse_message
    from lifeboat.model.instances import StaticInstanceDirectory
    from lifeboat.wakeup.codec import Task, Wakeup

    objects = load_cluster_file(EVENTS / "cluster.yaml")
    spot = (EVENTS / "spot-interruption.json").read_text()
    [notice] = parse_message(spot, received_at=NOW)
    with Emulator(objects) as emu:
        router = PerCluster({"prod": KubeApi(emu.api_client())})
        pipeline = Pipeline(
            clusters=router,
            directory=StaticInstanceDirectory(),  # the instance is long terminated
            settings=Settings(clusters=("prod", "stage")),
            clock=lambda: NOW,
        )
        wakeup = Wakeup(
            Task.FINISH_REPLACEMENT,
            notice,
            NOW,
            replacement="general-gone",
            old_nodeclaim="general-7xkqz",
            old_nodeclaim_uid=present(
                emu.get_object("NodeClaim", "general-7xkqz"), "NodeClaim general-7xkqz"
            )["metadata"]["uid"],
            cluster="prod",
        )
        [result] = pipeline.process([encode(wakeup)])
        assert result.error is None
        assert result.reports[0].actions == ({"type": "delete-nodeclaim", "name": "general-7xkqz"},)
        # Deleted; Karpenter's termination finalizer keeps it until the instance is gone.
        assert present(emu.get_object("NodeClaim", "general-7xkqz"), "NodeClaim general-7xkqz")[
            "metadata"
        ]["deletionTimestamp"]
        assert set(router.asked) == {"prod"}

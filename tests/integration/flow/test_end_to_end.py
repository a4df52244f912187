"""The deployment's path end to end, with only the endpoints emulated.

template.yaml's EventBridge rules (created in moto as written) -> an SQS queue (moto) -> the
Lambda's SQS batch event -> ``lifeboat.runtime.handler.handle_batch`` -> a pipeline on the real
kubernetes client talking to the Kubernetes emulator, with the real Powertools idempotency
ledger on a moto DynamoDB table, the real EventBridge Scheduler seam on moto, and the real
Auto Scaling seam on a botocore Stubber (moto does not implement lifecycle actions).

Relied-on behaviour of the emulator that a real API server shares: a deleted NodeClaim
without finalizers is gone at once (there is no Karpenter here to drain it first), and
``generateName`` gives the replacement a fresh name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from cfnlint.decode import decode_str  # type: ignore[import-untyped]

from kubemu import Emulator, load_cluster_file
from lifeboat.aws.idempotency import PowertoolsLedger
from lifeboat.aws.lifecycle import AutoScalingLifecycle
from lifeboat.aws.scheduler import SchedulerWakeups
from lifeboat.events.notice import Kind
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from lifeboat.wakeup.codec import Task, Wakeup, decode
from lifeboat_local.directory import directory_from_objects
from tests.support.aws import create_idempotency_table
from tests.support.fakes import LambdaContext as FakeContext
from tests.support.fakes import RecordingMetrics as Metrics
from tests.support.paths import EVENTS, ROOT

SAMPLES = sorted(EVENTS.glob("*.json"))
REGION = "us-east-1"
# The demo's clock: a Tuesday afternoon, inside NodePool general's weekday freeze.
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
GROUP = "lifeboat-schedules"
WRITES = ("create", "update", "patch", "delete")
# With the batch's messages handled concurrently, the rebalance may be decided before or
# after the three involuntary notices of its pool; either way it waits (for the freeze's
# end, or for capacity), never gives up: a pool's disrupting nodes go away within minutes.
# test_a_rebalance_behind_involuntary_notices_waits_instead_of_giving_up fixes the order.


# --- EventBridge -> SQS, as template.yaml defines it ------------------------------------------


def _rules() -> dict[str, dict[str, Any]]:
    template, errors = decode_str((ROOT / "template.yaml").read_text())
    assert not errors, errors
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in template["Resources"].items()
        if isinstance(resource, dict) and resource.get("Type") == "AWS::Events::Rule"
    }


@dataclass
class Routed:
    """What the rules delivered: the Lambda's batch event, and which rule took each sample."""

    event: dict[str, Any]
    queue_arn: str
    rules_by_sample: dict[str, list[str]] = field(default_factory=dict)


def _queue(sqs: Any, name: str) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return url, arn


def _receive_all(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while batch := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], VisibilityTimeout=300
    ).get("Messages", []):
        messages += batch
    return messages


def route_samples() -> Routed:
    """Create the template's rules in moto, targeting one queue (and, to tell which rule took
    what, a per-rule audit queue), and put every sample event on the default bus."""
    events, sqs = boto3.client("events"), boto3.client("sqs")
    queue_url, queue_arn = _queue(sqs, "lifeboat-queue")
    audit: dict[str, str] = {}
    for logical_id, rule in _rules().items():
        assert rule["State"] == "ENABLED"
        events.put_rule(Name=logical_id, EventPattern=json.dumps(rule["EventPattern"]))
        audit[logical_id], audit_arn = _queue(sqs, f"audit-{logical_id}")
        targets = [{"Id": t["Id"], "Arn": queue_arn} for t in rule["Targets"]]
        events.put_targets(Rule=logical_id, Targets=[*targets, {"Id": "audit", "Arn": audit_arn}])
    sample_of_event: dict[str, str] = {}
    for path in SAMPLES:
        sample = json.loads(path.read_text())
        answer = events.put_events(
            Entries=[
                {
                    "Source": sample["source"],
                    "DetailType": sample["detail-type"],
                    "Detail": json.dumps(sample["detail"]),
                    "Time": datetime.fromisoformat(sample["time"]),
                    "Resources": sample["resources"],
                }
            ]
        )
        assert answer["FailedEntryCount"] == 0, answer
        sample_of_event[answer["Entries"][0]["EventId"]] = path.name
    rules_by_sample: dict[str, list[str]] = {path.name: [] for path in SAMPLES}
    for logical_id, url in audit.items():
        for message in _receive_all(sqs, url):
            rules_by_sample[sample_of_event[json.loads(message["Body"])["id"]]].append(logical_id)
    records = [
        {
            "messageId": m["MessageId"],
            "receiptHandle": m["ReceiptHandle"],
            "body": m["Body"],
            "attributes": m["Attributes"],
            "messageAttributes": {},
            "md5OfBody": m["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": queue_arn,
            "awsRegion": REGION,
        }
        for m in _receive_all(sqs, queue_url)
    ]
    return Routed({"Records": records}, queue_arn, rules_by_sample)


# --- the pipeline, as the Lambda builds it but on the emulators --------------------------------


@dataclass
class World:
    emulator: Emulator
    pipeline: Pipeline
    scheduler: Any
    asg: Stubber


# The sample ASG termination's lifecycle action: its heartbeat while the evicted pods
# terminate (the action is completed once they are gone, by a continue-drain wake-up).
ASG_HEARTBEAT = {
    "LifecycleHookName": "lifeboat-drain",
    "AutoScalingGroupName": "eks-system-20260101-1a2b3c4d",
    "LifecycleActionToken": "5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
    "InstanceId": "i-0a1b2c3d4e5f60006",
}
# ... and as Auto Scaling must be told it is done.
ASG_COMPLETE = {
    "LifecycleHookName": "lifeboat-drain",
    "AutoScalingGroupName": "eks-system-20260101-1a2b3c4d",
    "LifecycleActionToken": "5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
    "LifecycleActionResult": "CONTINUE",
    "InstanceId": "i-0a1b2c3d4e5f60006",
}


@pytest.fixture
def world(aws: None) -> Iterator[World]:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    dynamodb = boto3.client("dynamodb")
    create_idempotency_table(dynamodb, "idempotency")
    scheduler = boto3.client("scheduler")
    scheduler.create_schedule_group(Name=GROUP)
    autoscaling = boto3.client("autoscaling")
    with Emulator(objects) as emulator, Stubber(autoscaling) as asg:
        directory = directory_from_objects(objects)
        pipeline = Pipeline(
            clusters=OneCluster(
                KubeApi(emulator.api_client(), RetryPolicy(attempts=3, base_delay=0.01))
            ),
            directory=directory,
            # An ending Capacity Block's instances, as DescribeInstances would find them.
            reservations=directory,
            settings=Settings(),
            clock=lambda: NOW,
            lifecycle=AutoScalingLifecycle(autoscaling),
            wakeups=SchedulerWakeups(
                scheduler,
                group=GROUP,
                role_arn="arn:aws:iam::123456789012:role/lifeboat-scheduler",
                queue_arn="arn:aws:sqs:us-east-1:123456789012:lifeboat-queue",
                clock=lambda: NOW,
            ),
            ledger=PowertoolsLedger("idempotency", boto3_client=dynamodb),
            # As in AWS (service.BATCH_WORKERS): the messages of a batch run concurrently.
            workers=10,
        )
        # As functions/interruption/app.py does: in-progress records expire with the invocation.
        assert isinstance(pipeline.ledger, PowertoolsLedger)
        pipeline.ledger.register_lambda_context(FakeContext())
        yield World(emulator, pipeline, scheduler, asg)


def _node(emu: Emulator, name: str) -> dict[str, Any]:
    node = emu.get_object("Node", name)
    assert node is not None, name
    return node


def _taint(node: dict[str, Any], kind: Kind) -> str | None:
    for taint in nodes.taints(node):
        if taint.get("key") == node_marks.taint_key(kind):
            return str(taint.get("effect"))
    return None


def _claims(emu: Emulator) -> dict[str, dict[str, Any]]:
    return {nodes.name_of(c): c for c in emu.objects("NodeClaim")}


def _replacements(emu: Emulator) -> dict[str, str]:
    """old NodeClaim -> its replacement."""
    return {
        str(nodes.labels_of(c)[node_marks.REPLACES_LABEL]): name
        for name, c in _claims(emu).items()
        if node_marks.REPLACES_LABEL in nodes.labels_of(c)
    }


def _schedules(scheduler: Any) -> dict[str, dict[str, Any]]:
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=GROUP)["Schedules"]]
    return {name: scheduler.get_schedule(Name=name, GroupName=GROUP) for name in names}


def _wakeups(scheduler: Any) -> list[Wakeup]:
    return [decode(json.loads(s["Target"]["Input"])) for s in _schedules(scheduler).values()]


# --- tests ----------------------------------------------------------------------------------


def test_every_sample_is_routed_by_exactly_one_rule(aws: None) -> None:
    routed = route_samples()
    assert routed.rules_by_sample == {
        "asg-termination.json": ["AsgTerminationRule"],
        "capacity-block-expiry.json": ["CapacityBlockRule"],
        "capacity-reservation-interruption.json": ["CapacityReservationInterruptionRule"],
        "rebalance-recommendation.json": ["RebalanceRecommendationRule"],
        "scheduled-change.json": ["ScheduledChangeRule"],
        "spot-interruption.json": ["SpotInterruptionRule"],
        "state-change.json": ["StateChangeRule"],
    }
    # The main queue got each sample once: nothing lost, nothing doubled.
    assert len(routed.event["Records"]) == len(SAMPLES)
    delivered = sorted(json.loads(r["body"])["detail-type"] for r in routed.event["Records"])
    assert delivered == sorted(json.loads(p.read_text())["detail-type"] for p in SAMPLES)


def test_batch_acts_on_the_cluster_and_a_redelivery_changes_nothing(world: World) -> None:
    emu, routed = world.emulator, route_samples()
    before = set(_claims(emu))
    world.asg.add_response("record_lifecycle_action_heartbeat", {}, ASG_HEARTBEAT)
    metrics = Metrics()

    response = handle_batch(routed.event, FakeContext(), world.pipeline, metrics=metrics)

    assert response == {"batchItemFailures": []}
    world.asg.assert_no_pending_responses()
    # 7 messages, 10 notices (the Health event names two instances, the Capacity Block's
    # warning three: issue 37). The rebalance is "deferred", whichever order the concurrent
    # workers took.
    assert metrics.outcomes() == {"acted": 8, "deferred": 2}
    due = {(w.task, w.notice.instance_id): w.due for w in _wakeups(world.scheduler)}
    rebalance_due = due.pop((Task.DECIDE, "i-0a1b2c3d4e5f60002"))
    claims, replaced = _claims(emu), _replacements(emu)

    # Involuntary, Karpenter-owned: cordoned + tainted, replacement created, old claim
    # deleted (Karpenter's termination finalizer holds it until the instance is gone).
    for node_name, kind, old_claim in (
        ("ip-10-0-1-11.ec2.internal", Kind.SPOT_INTERRUPTION, "general-7xkqz"),
        ("ip-10-0-2-13.ec2.internal", Kind.STATE_CHANGE, "general-h9cfd"),
        ("ip-10-0-1-17.ec2.internal", Kind.CAPACITY_RESERVATION_INTERRUPTION, "general-n5sjx"),
    ):
        node = _node(emu, node_name)
        assert node["spec"].get("unschedulable") is True, node_name
        assert _taint(node, kind) == "NoSchedule", node_name
        assert claims[old_claim]["metadata"].get("deletionTimestamp"), old_claim
        assert replaced[old_claim] not in before
        assert nodes.labels_of(claims[replaced[old_claim]])[nodes.NODEPOOL_LABEL] == "general"

    # ASG node (no NodeClaim): cordoned, tainted, drained of all but DaemonSet pods.
    asg_node = _node(emu, "ip-10-0-3-16.ec2.internal")
    assert asg_node["spec"].get("unschedulable") is True
    assert _taint(asg_node, Kind.ASG_TERMINATION) == "NoSchedule"
    left = [p for p in emu.objects("Pod") if p["spec"].get("nodeName") == nodes.name_of(asg_node)]
    assert left, "the DaemonSet pod stays"
    # Evicted pods are Terminating for their grace period; only DaemonSet pods stay.
    assert all(nodes.is_daemonset_pod(p) or p["metadata"].get("deletionTimestamp") for p in left)

    # Rebalance inside general's weekday freeze: deferred, only a PreferNoSchedule mark.
    rebalanced = _node(emu, "ip-10-0-1-12.ec2.internal")
    assert _taint(rebalanced, Kind.REBALANCE_RECOMMENDATION) == "PreferNoSchedule"
    assert not rebalanced["spec"].get("unschedulable")
    assert "general-b4wpl" in claims and "general-b4wpl" not in replaced

    # Scheduled maintenance in pool batch (budget 1): the first node is replaced and its
    # claim deleted at once (the hand-over); the second waits for the slot.
    first, second = (
        _node(emu, "ip-10-0-2-14.ec2.internal"),
        _node(emu, "ip-10-0-3-15.ec2.internal"),
    )
    assert first["spec"].get("unschedulable") is True
    assert _taint(first, Kind.SCHEDULED_CHANGE) == "NoSchedule"
    assert "batch-q2vtn" in replaced
    assert claims["batch-q2vtn"]["metadata"].get("deletionTimestamp")
    assert _taint(second, Kind.SCHEDULED_CHANGE) == "PreferNoSchedule"
    assert not second["spec"].get("unschedulable")
    assert "batch-zk8rm" not in replaced

    # Deferred work sleeps in EventBridge Scheduler and decodes back to what it must do.
    # The rebalance's pool also loses three nodes to involuntary notices of the same batch,
    # handled concurrently: seen before them, the freeze's end (17:00) is its time; seen
    # after, even 17:00 has no free slot until they are gone, so it looks again in 5 minutes.
    assert rebalance_due in (
        datetime(2026, 12, 1, 17, 0, tzinfo=UTC),
        datetime(2026, 12, 1, 14, 10, tzinfo=UTC),
    )
    # No follow-up for a replacement: the old claim was deleted in the same breath.
    # The ASG node's drain is looked at again in 30 s: its lifecycle action is completed
    # once the evicted pods have terminated (issue 22), not while they still run.
    assert due == {
        (Task.DECIDE, "i-0a1b2c3d4e5f60005"): datetime(2026, 12, 1, 14, 10, tzinfo=UTC),
        (Task.CONTINUE_DRAIN, "i-0a1b2c3d4e5f60006"): NOW + timedelta(seconds=30),
    }
    for schedule in _schedules(world.scheduler).values():
        assert schedule["ScheduleExpression"].startswith("at(2026-12-01T")
        assert schedule["Target"]["Arn"].endswith(":lifeboat-queue")

    # Redelivery of the whole batch (SQS at-least-once): the ledger makes every notice a
    # duplicate, so the cluster, Auto Scaling (the Stubber has no second answer) and the
    # scheduler see nothing new.
    snapshot, schedules = emu.dump(), set(_schedules(world.scheduler))
    emu.reset_counts()
    metrics = Metrics()

    again = handle_batch(routed.event, FakeContext(), world.pipeline, metrics=metrics)

    assert again == {"batchItemFailures": []}
    assert metrics.outcomes() == {"ignored": 10}
    # The involuntary notices' guarded taints are tried before the ledger is asked (issue
    # 36) and refused by the API server (our taint is there); nothing else is written.
    writes = {verb: n for verb in WRITES if (n := emu.requests[verb])}
    assert set(writes) <= {"patch"}, emu.requests
    assert emu.answers.get("422", 0) == writes.get("patch", 0)
    assert emu.dump() == snapshot
    assert set(_schedules(world.scheduler)) == schedules


def test_a_failing_record_returns_to_the_queue_alone_and_is_not_remembered(
    world: World,
) -> None:
    emu, routed = world.emulator, route_samples()
    world.asg.add_response("record_lifecycle_action_heartbeat", {}, ASG_HEARTBEAT)
    spot_node = "ip-10-0-1-11.ec2.internal"
    # More 500s than the client retries: the spot node cannot be patched in this invocation.
    emu.fail_next(500, times=10, verb="patch", resource="nodes", name=spot_node)
    spot_message = next(
        r["messageId"]
        for r in routed.event["Records"]
        if json.loads(r["body"])["detail-type"] == "EC2 Spot Instance Interruption Warning"
    )

    response = handle_batch(routed.event, FakeContext(), world.pipeline, metrics=Metrics())

    assert response == {"batchItemFailures": [{"itemIdentifier": spot_message}]}
    # Nothing done for the failed notice; the others were handled.
    assert not _claims(emu)["general-7xkqz"]["metadata"].get("deletionTimestamp")
    assert "general-7xkqz" not in _replacements(emu)
    assert _claims(emu)["general-h9cfd"]["metadata"].get("deletionTimestamp")
    emu.clear_faults()

    # SQS redelivers only the failed message; the ledger did not record it, so it acts now.
    retry = {"Records": [r for r in routed.event["Records"] if r["messageId"] == spot_message]}
    metrics = Metrics()
    assert handle_batch(retry, FakeContext(), world.pipeline, metrics=metrics) == {
        "batchItemFailures": []
    }
    assert metrics.outcomes() == {"acted": 1}
    assert _taint(_node(emu, spot_node), Kind.SPOT_INTERRUPTION) == "NoSchedule"
    assert _claims(emu)["general-7xkqz"]["metadata"].get("deletionTimestamp")
    assert "general-7xkqz" in _replacements(emu)


def test_a_rebalance_behind_involuntary_notices_waits_instead_of_giving_up(
    world: World,
) -> None:
    """The order above made deterministic: the involuntary notices go first."""
    routed = route_samples()
    order = [
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance State-change Notification",
        "EC2 Capacity Reservation Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
    ]
    by_type = {json.loads(r["body"])["detail-type"]: r for r in routed.event["Records"]}
    world.pipeline.workers = 1
    metrics = Metrics()
    event = {"Records": [by_type[t] for t in order]}
    assert handle_batch(event, FakeContext(), world.pipeline, metrics=metrics) == {
        "batchItemFailures": []
    }
    assert metrics.outcomes() == {"acted": 3, "deferred": 1}
    [wakeup] = _wakeups(world.scheduler)
    assert (wakeup.task, wakeup.notice.instance_id) == (Task.DECIDE, "i-0a1b2c3d4e5f60002")

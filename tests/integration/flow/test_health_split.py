"""An AWS Health event naming hundreds of instances, split so each message finishes well
inside the function's timeout (issue 10.9, ``lifeboat.flow.split``): 120 in ``make test``
(the event's own message and two remainders, the last one partial), 500 in ``make
bench-check``.

Through ``handle_batch`` as the Lambda runs it: the official client over HTTP to the
emulator, wake-ups through boto3 to moto's EventBridge Scheduler, carried to the function
through moto's SQS (what Scheduler's target does in AWS), and the idempotency ledger on
moto's DynamoDB. ``bench.health_split`` measures the time of the largest message.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import boto3
import pytest

from bench.cluster import CLUSTER, REGION, Cluster, build_cluster
from bench.events import scheduled_change
from bench.health_split import Decisions, health_event
from kubemu import Emulator
from lifeboat.aws.idempotency import PowertoolsLedger
from lifeboat.aws.scheduler import SchedulerWakeups
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.flow.split import NOTICES_PER_MESSAGE
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.notice import Kind
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from lifeboat.runtime.service import BATCH_WORKERS, utc_now
from lifeboat.wakeup.codec import Task, Wakeup, decode, encode
from tests.support.aws import create_idempotency_table
from tests.support.events import ACCOUNT, sqs_batch
from tests.support.fakes import LambdaContext

GROUP = "lifeboat"
QUEUE = "lifeboat-queue"


@dataclass
class World:
    cluster: Cluster
    emulator: Emulator
    pipeline: Pipeline
    scheduler: Any
    sqs: Any
    queue_url: str
    log: Decisions
    size: int  # the instances the test's event names

    def invoke(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        return handle_batch(event, context or LambdaContext(), self.pipeline, logger=self.log)

    def remainders(self) -> dict[str, Wakeup]:
        """The remainder wake-ups waiting in Scheduler, by schedule name."""
        found: dict[str, Wakeup] = {}
        pages = self.scheduler.get_paginator("list_schedules").paginate(GroupName=GROUP)
        for page in pages:
            for item in page["Schedules"]:
                schedule = self.scheduler.get_schedule(Name=item["Name"], GroupName=GROUP)
                wakeup = decode(json.loads(schedule["Target"]["Input"]))
                if wakeup.task is Task.REMAINDER:
                    found[item["Name"]] = wakeup
        return found

    def fire(self, *wakeups: Wakeup) -> None:
        """What Scheduler does when a schedule comes due: its input onto the queue."""
        for wakeup in wakeups:
            self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=encode(wakeup))

    def drain_queue(self) -> None:
        """Receive the queue in batches of 10, as the event source mapping does, hand each
        batch to the function, and delete what it did not report as failed."""
        for _ in range(100):  # bounded: the test's queue never holds more than 100 batches
            received = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
            ).get("Messages", [])
            if not received:
                return
            records = [
                {
                    "messageId": m["MessageId"],
                    "receiptHandle": m["ReceiptHandle"],
                    "body": m["Body"],
                    "attributes": m.get("Attributes", {}),
                }
                for m in received
            ]
            failed = {
                f["itemIdentifier"] for f in self.invoke({"Records": records})["batchItemFailures"]
            }
            assert not failed, self.log.errors[:3]
            for m in received:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
        raise AssertionError("the queue did not drain")


def _world(aws: boto3.Session, instances: int) -> Iterator[World]:
    cluster = build_cluster(instances + 10, pools=20, pods_per_node=1)
    dynamodb = aws.client("dynamodb")
    create_idempotency_table(dynamodb, "idempotency")
    scheduler = aws.client("scheduler")
    scheduler.create_schedule_group(Name=GROUP)
    sqs = aws.client("sqs")
    queue_url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    with Emulator(cluster.objects) as emulator:
        pipeline = Pipeline(
            clusters=OneCluster(
                KubeApi(emulator.api_client(), RetryPolicy(attempts=3, base_delay=0.01))
            ),
            directory=cluster.directory(),
            settings=Settings(clusters=(CLUSTER,), account_id=ACCOUNT, region=REGION),
            clock=utc_now,
            wakeups=SchedulerWakeups(
                scheduler,
                group=GROUP,
                role_arn=f"arn:aws:iam::{ACCOUNT}:role/lifeboat-scheduler",
                queue_arn=queue_arn,
                clock=utc_now,
            ),
            ledger=PowertoolsLedger("idempotency", boto3_client=dynamodb),
            workers=BATCH_WORKERS,
            notices_per_message=NOTICES_PER_MESSAGE,  # as lifeboat.runtime.service builds it
        )
        # As functions/interruption/app.py does: in-progress records expire with the invocation.
        assert isinstance(pipeline.ledger, PowertoolsLedger)
        pipeline.ledger.register_lambda_context(LambdaContext())
        yield World(cluster, emulator, pipeline, scheduler, sqs, queue_url, Decisions(), instances)


SIZES = [120, pytest.param(500, marks=pytest.mark.bench)]


@pytest.fixture
def world(aws: boto3.Session, request: pytest.FixtureRequest) -> Iterator[World]:
    yield from _world(aws, request.param)


@pytest.fixture
def small_world(aws: boto3.Session) -> Iterator[World]:
    yield from _world(aws, 30)


def _event(world: World, count: int) -> dict[str, Any]:
    machines = world.cluster.karpenter[:count]
    event = health_event([m.instance_id for m in machines], scheduled_change(machines[0]))
    event["account"], event["region"] = ACCOUNT, REGION
    return event


def _acted_per_pool(world: World) -> Counter[str]:
    """Nodes Lifeboat took (its NoSchedule taint for scheduled maintenance), per NodePool."""
    key = node_marks.taint_key(Kind.SCHEDULED_CHANGE)
    acted: Counter[str] = Counter()
    for node in world.emulator.objects("Node"):
        taints = node.get("spec", {}).get("taints") or []
        if any(t["key"] == key and t["effect"] == "NoSchedule" for t in taints):
            acted[node["metadata"]["labels"].get("karpenter.sh/nodepool", "-")] += 1
    return acted


@pytest.mark.parametrize("world", SIZES, indirect=True)
def test_a_health_event_of_hundreds_of_instances_is_split_and_every_instance_judged_once(
    world: World,
) -> None:
    size = world.size
    event = _event(world, size)
    everyone = {m.instance_id for m in world.cluster.karpenter[:size]}

    # The event's own message: it acts on the first NOTICES_PER_MESSAGE instances and hands
    # the rest on, before acting, as remainders of at most as many instances each.
    assert world.invoke(sqs_batch(event))["batchItemFailures"] == []
    first = set(world.log.judged)
    assert len(first) == NOTICES_PER_MESSAGE
    remainders = world.remainders()
    named = [i for w in remainders.values() for i in w.instances]
    assert len(remainders) == -(-(size - NOTICES_PER_MESSAGE) // NOTICES_PER_MESSAGE)
    assert all(len(w.instances) <= NOTICES_PER_MESSAGE for w in remainders.values())
    assert len(named) == len(set(named)) and set(named) | first == everyone
    assert not set(named) & first
    assert all(w.notice.event_id == event["id"] for w in remainders.values())

    # Redelivered (SQS is at least once): its instances are duplicates in the ledger and its
    # remainders are the same schedules (same names: Scheduler's ConflictException).
    assert world.invoke(sqs_batch(event))["batchItemFailures"] == []
    assert set(world.log.judged) == first and set(world.log.judged.values()) == {1}
    assert world.remainders().keys() == remainders.keys()

    # Scheduler delivers the remainders through the queue; one of them twice.
    world.fire(*remainders.values())
    world.fire(next(iter(remainders.values())))
    world.drain_queue()

    assert set(world.log.judged) == everyone
    assert set(world.log.judged.values()) == {1}, "an instance was judged twice"
    assert max(world.log.per_message.values()) <= NOTICES_PER_MESSAGE
    # Budgets held across the messages: 20 pools, 20 % of each pool's nodes (rounded up, as
    # Karpenter's NodePool.GetAllowedDisruptionsByReason scales a percentage).
    acted = _acted_per_pool(world)
    assert sum(acted.values()) == world.log.outcomes["acted"] > 0
    pools = Counter(
        n["metadata"]["labels"].get("karpenter.sh/nodepool", "-")
        for n in world.emulator.objects("Node")
    )
    assert all(acted[pool] <= math.ceil(0.2 * pools[pool]) for pool in acted)
    assert world.log.outcomes["deferred"] == size - world.log.outcomes["acted"]


class RunningOut(LambdaContext):
    """An invocation whose time runs low after ``calls`` looks at the clock."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.calls = calls

    def get_remaining_time_in_millis(self) -> int:
        self.calls -= 1
        return 50_000 if self.calls >= 0 else 9_000


def test_a_message_running_out_of_invocation_time_hands_on_what_it_has_not_started(
    small_world: World,
) -> None:
    """``lifeboat.model.deadline.INVOCATION_RESERVE``: with less left than that, the message
    starts no further instance, schedules the rest and is deleted; nothing is lost."""
    world = small_world
    event = _event(world, 30)
    response = world.invoke(sqs_batch(event), RunningOut(calls=7))
    assert response["batchItemFailures"] == []
    assert len(world.log.judged) == 8  # the first, then seven with time to spare
    [rest] = world.remainders().values()
    assert len(rest.instances) == 22 and not set(rest.instances) & set(world.log.judged)
    world.fire(rest)
    world.drain_queue()
    assert len(world.log.judged) == 30 and set(world.log.judged.values()) == {1}


def test_a_forged_remainder_is_checked_like_the_aws_event_it_claims_to_be(
    small_world: World,
) -> None:
    """Issue 10.2: anyone who may send to the queue could write a remainder. Its notices
    pass the same triage as an AWS event's (account, region, cluster, managed tag)."""
    world = small_world
    event = _event(world, 3)
    [notice] = _parsed_template(event)
    instances = tuple(m.instance_id for m in world.cluster.karpenter[:3])
    foreign = Wakeup(
        Task.REMAINDER,
        replace(notice, account="999999999999"),
        notice.event_time,
        instances=instances,
    )
    made_up = Wakeup(
        Task.REMAINDER,
        replace(notice, event_id="forged"),
        notice.event_time,
        instances=("i-0123456789abcdef0",),
    )
    world.fire(foreign, made_up)
    world.drain_queue()
    assert world.log.outcomes == {"rejected": 3, "ignored": 1}
    assert sum(_acted_per_pool(world).values()) == 0
    unmanaged = replace(
        world.pipeline, settings=replace(world.pipeline.settings, managed_tag="lifeboat/managed")
    )
    world.pipeline = unmanaged
    world.fire(Wakeup(Task.REMAINDER, notice, notice.event_time, instances=instances))
    world.drain_queue()
    assert world.log.outcomes["ignored"] == 4
    assert sum(_acted_per_pool(world).values()) == 0


def _parsed_template(event: dict[str, Any]) -> list[Any]:
    from lifeboat.events import parse_message
    from lifeboat.flow.split import remainders

    notices = parse_message(event, received_at=utc_now())
    return [remainders(notices)[0].notice]


def test_the_benchmark_measures_what_it_says() -> None:
    """``python -m bench.health_split`` at a small size: both runs judge every instance, the
    split one no more than its limit per message."""
    from bench.health_split import run

    results = run(24, latency_ms=0, limit=10, unsplit=True)
    assert results["unsplit"]["instances_judged"] == 24
    split = results["split"]
    assert split["judged_exactly_once"] and split["instances_judged"] == 24
    assert split["messages"] == 3 and split["most_instances_in_a_message"] == 10
    assert split["largest_invocation_s"] == max(split["invocation_s"]) > 0


def test_a_remainder_only_of_a_scheduled_change_and_never_past_its_start(
    small_world: World,
) -> None:
    """Regression (issue 23.5): a forged Spot-kind remainder took 50 nodes out at once under
    a budget of 6, and one past its deadline was obeyed. Only a scheduled change is ever
    split (AWS Health names many instances), and a remainder arriving after the
    maintenance's start is rejected: Lifeboat hands them on minutes after the event."""
    world = small_world
    event = _event(world, 3)
    [notice] = _parsed_template(event)
    instances = tuple(m.instance_id for m in world.cluster.karpenter[:3])
    spot = Wakeup(
        Task.REMAINDER,
        replace(notice, kind=Kind.SPOT_INTERRUPTION),
        notice.event_time,
        instances=instances,
    )
    assert notice.deadline is not None
    late = Wakeup(
        Task.REMAINDER,
        replace(notice, deadline=utc_now() - timedelta(minutes=1)),
        notice.event_time,
        instances=instances,
    )
    world.fire(spot, late)
    world.drain_queue()
    assert world.log.outcomes == {"rejected": 2}
    assert sum(_acted_per_pool(world).values()) == 0


def test_a_rejected_forgery_does_not_make_the_genuine_event_a_duplicate(
    small_world: World,
) -> None:
    """Regression (issue 23.5): a forged remainder (another account) naming a genuine
    event's id and instances was rejected, but stored in the ledger as done, so the genuine
    event's instances were then reported as duplicates and never judged. Rejections are
    never remembered (DynamoDB, through Powertools, as in the Lambda)."""
    world = small_world
    event = _event(world, 3)
    [notice] = _parsed_template(event)
    instances = tuple(m.instance_id for m in world.cluster.karpenter[:3])
    world.fire(
        Wakeup(
            Task.REMAINDER,
            replace(notice, account="999999999999"),
            notice.event_time,
            instances=instances,
        )
    )
    world.drain_queue()
    assert world.log.outcomes == {"rejected": 3}
    world.sqs.send_message(QueueUrl=world.queue_url, MessageBody=json.dumps(event))
    world.drain_queue()
    assert sum(world.log.judged[i] for i in instances) == 3 + 3
    assert world.log.outcomes["rejected"] == 3
    assert sum(world.log.outcomes.values()) == 6

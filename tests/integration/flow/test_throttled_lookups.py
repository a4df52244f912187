"""A throttled EC2 API during a Spot storm (issue 36): DescribeInstances answered
``RequestLimitExceeded`` is retried three times, then for as long as the batch's nearest
deadline allows (``lifeboat.aws.retries``); a lookup that still fails sends
back only the messages that needed it, visible again within seconds
(``sqs:ChangeMessageVisibility``), and never fails the rest of the batch.

Before: the ClientError escaped ``Pipeline.process`` and ``handle_batch``; the invocation
failed, and the whole batch came back after the queue's 380 s visibility timeout, long past
a Spot warning's two minutes.

The EC2 endpoint is ``bench.aws_endpoints.Ec2Endpoint``: a botocore ``before-send`` hook,
so the answers go through botocore's parser and retry handler as EC2's would (503
``RequestLimitExceeded`` is what EC2 sends). botocore sleeps in real time between attempts:
its ``time`` is replaced by the test's ticking clock, so nothing waits.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import botocore.endpoint
import pytest

from bench.aws_endpoints import Ec2Endpoint
from kubemu import Emulator
from lifeboat.aws.retries import ATTEMPTS, client_config, retry_within_deadline
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.deadline import HANDLING_MARGIN
from lifeboat.model.instances import Ec2InstanceDirectory, InstanceInfo
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from tests.support import kube
from tests.support.events import sample, sqs_record
from tests.support.fakes import LambdaContext
from tests.support.present import present

INSTANCE = "i-0a1b2c3d4e5f60001"  # events/spot-interruption.json
NODE = "ip-10-0-1-11.ec2.internal"
CLAIM = "general-7xkqz"
SPOT = sample("spot-interruption")
SPOT_DEADLINE = datetime(2026, 12, 1, 14, 4, tzinfo=UTC)  # its time + 2 minutes
INFO = InstanceInfo(
    INSTANCE, node_name=NODE, nodeclaim=CLAIM, nodepool="general", zone="us-east-1c"
)


@dataclass
class Ticking:
    """Time that only the retries' sleeps move, for botocore, the pipeline and the SQS
    messages' deadlines alike."""

    start: datetime = SPOT_DEADLINE - timedelta(seconds=100)
    now: float = 0.0
    slept: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def utc(self) -> datetime:
        return self.start + timedelta(seconds=self.now)


@dataclass
class Redeliveries:
    """What the handler asked of SQS: (receipt handle, seconds until visible again)."""

    asked: list[tuple[str, int]] = field(default_factory=list)

    def redeliver_in(self, receipt_handle: str, seconds: int) -> bool:
        self.asked.append((receipt_handle, seconds))
        return True


@pytest.fixture
def emu() -> Iterator[Emulator]:
    pool = kube.nodepool(uid="pool-uid", requirements=[], budgets=[{"nodes": "10%"}])
    claim, node = kube.nodeclaim_and_node(
        name=CLAIM, instance_id=INSTANCE, node_name=NODE, nodepool_uid="pool-uid"
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}}
    with Emulator([namespace, pool, claim, node]) as emulator:
        yield emulator


@pytest.fixture
def ticking(monkeypatch: pytest.MonkeyPatch) -> Ticking:
    clock = Ticking()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    # botocore's endpoint sleeps between attempts with time.sleep: on the ticking clock here.
    monkeypatch.setattr(botocore.endpoint, "time", clock)
    return clock


def _ec2(endpoint: Ec2Endpoint) -> Any:
    """An EC2 client configured as the Lambda's (lifeboat.runtime.service), on ``endpoint``."""
    client = boto3.Session().client("ec2", region_name="us-east-1", config=client_config())
    return endpoint.attach(retry_within_deadline(client, random.Random(5)))


def _pipeline(emu: Emulator, ticking: Ticking, endpoint: Ec2Endpoint) -> Pipeline:
    kube_api = KubeApi(emu.api_client(), RetryPolicy(), sleep=ticking.sleep, rng=random.Random(7))
    return Pipeline(
        clusters=OneCluster(kube_api),
        directory=Ec2InstanceDirectory(_ec2(endpoint)),
        settings=Settings(),
        clock=ticking.utc,
        ledger=MemoryLedger(),
        monotonic=ticking.monotonic,
    )


def _tainted(emu: Emulator) -> bool:
    node = present(emu.get_object("Node", NODE), "the node")
    return "lifeboat.dev/spot-interruption" in [t["key"] for t in nodes.taints(node)]


def test_a_throttled_lookup_is_retried_past_the_standard_attempts_within_the_deadline(
    emu: Emulator, ticking: Ticking
) -> None:
    """Six refusals in a row, 100 s before the deadline: the 3 tries of any call are used
    up, the deadline's window retries on, and the warning is tainted in this invocation."""
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=6)
    pipeline = _pipeline(emu, ticking, endpoint)
    response = handle_batch({"Records": [sqs_record(SPOT)]}, LambdaContext(), pipeline)
    assert response == {"batchItemFailures": []}
    assert endpoint.calls == 7 > ATTEMPTS and endpoint.throttled == 6
    assert _tainted(emu)


def test_without_a_near_deadline_a_throttled_lookup_keeps_the_standard_attempts(
    emu: Emulator, ticking: Ticking
) -> None:
    """A Spot warning whose deadline has passed gains nothing from waiting: three tries,
    then the message fails and keeps the queue's own timeout."""
    ticking.start = SPOT_DEADLINE + timedelta(seconds=1)
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    redelivery = Redeliveries()
    pipeline = _pipeline(emu, ticking, endpoint)
    with pytest.raises(Exception, match="All records failed"):
        handle_batch({"Records": [sqs_record(SPOT)]}, None, pipeline, redelivery=redelivery)
    assert endpoint.calls == ATTEMPTS
    assert redelivery.asked == []


def test_a_lookup_throttled_past_its_window_fails_only_its_messages_and_they_return_in_seconds(
    emu: Emulator, ticking: Ticking
) -> None:
    """EC2 refuses every DescribeInstances: the Spot warning fails after its window (never
    past the deadline's handling margin), a malformed message of the same batch is still
    rejected with its reason (deleted, not returned with the warning), and the warning is
    made visible again within a second (at once, here: its
    deadline's margin is reached) instead of after the queue's 380 s."""
    ticking.start = SPOT_DEADLINE - timedelta(seconds=12)  # a 7 s window
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    redelivery = Redeliveries()
    pipeline = _pipeline(emu, ticking, endpoint)
    batch = {"Records": [sqs_record(SPOT, "m-0"), sqs_record("{not json", "m-1")]}
    response = handle_batch(batch, LambdaContext(), pipeline, redelivery=redelivery)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
    [(handle, delay)] = redelivery.asked
    assert handle == "handle-m-0-1" and delay <= 1
    assert ticking.now <= 12 - HANDLING_MARGIN.total_seconds()
    assert endpoint.calls > ATTEMPTS
    assert emu.request_log == []  # nothing was done to the cluster without EC2's facts


def test_a_throttled_lookup_no_longer_holds_a_spot_warning_past_its_deadline(
    emu: Emulator, ticking: Ticking
) -> None:
    """The throttling lasts 9 s from 15 s before the deadline: the first delivery fails
    after its window, comes back a second later (its second delivery), EC2 answers again,
    and the node is tainted before the deadline."""
    ticking.start = SPOT_DEADLINE - timedelta(seconds=15)
    endpoint = Ec2Endpoint({INSTANCE: INFO}, refuse_next=10**6)
    redelivery = Redeliveries()
    pipeline = _pipeline(emu, ticking, endpoint)
    with pytest.raises(Exception, match="All records failed"):
        handle_batch(
            {"Records": [sqs_record(SPOT)]}, LambdaContext(), pipeline, redelivery=redelivery
        )
    [(_, delay)] = redelivery.asked
    ticking.sleep(delay)
    ticking.sleep(max(0.0, 9 - ticking.now))
    endpoint.refuse_next = 0  # the account's bucket refilled
    again = {"Records": [sqs_record(SPOT, receive_count=2)]}
    assert handle_batch(again, LambdaContext(), pipeline, redelivery=redelivery) == {
        "batchItemFailures": []
    }
    assert _tainted(emu)
    assert ticking.utc() < SPOT_DEADLINE

"""The pipeline under test, assembled as ``lifeboat.runtime.service.build_service`` assembles it, on
local endpoints: the Kubernetes API emulator, moto's EC2 and DynamoDB (in-process
``mock_aws``), wake-ups in memory. AWS calls are counted with botocore ``before-call`` hooks.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.api_server import ServedEmulator
from bench.aws_endpoints import Ec2Endpoint
from bench.cluster import CLUSTER, REGION, Cluster
from bench.dynamodb import DynamoDbTable
from kubemu import Emulator
from lifeboat.aws.retries import client_config, retry_within_deadline
from lifeboat.flow.lookup import ClaimsWhenThrottled, end_on_first_throttle, served
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import Ec2InstanceDirectory, InstanceDirectory, InstanceInfo
from lifeboat.model.ledger import Ledger, MemoryLedger
from lifeboat.model.notice import LifecycleHook
from lifeboat.model.settings import Settings
from lifeboat.runtime.service import BATCH_WORKERS, utc_now
from lifeboat.wakeup.codec import MemoryWakeups

IDEMPOTENCY_TABLE = "lifeboat-bench-idempotency"
# Production waits up to DRAIN_PATIENCE for PDB-blocked evictions; the bench has no PDB that
# blocks, so the value never matters, and 0 keeps a surprise from stalling a run.
DRAIN_PATIENCE = 0.0


class AwsCallCounter:
    """Counts API calls per operation on the clients it is attached to (``before-call``)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def attach(self, client: Any) -> Any:
        client.meta.events.register("before-call.*.*", self._count)
        return client

    def _count(self, model: Any = None, **_: Any) -> None:
        if model is None:
            return
        name = f"{model.service_model.endpoint_prefix}:{model.name}"
        with self._lock:
            self.calls[name] += 1

    def add(self, name: str, count: int = 1) -> None:
        with self._lock:
            self.calls[name] += count

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.calls)


class CountingDirectory:
    """Wraps an instance directory; counts lookups like DescribeInstances would be counted."""

    def __init__(self, inner: InstanceDirectory, counter: AwsCallCounter) -> None:
        self._inner = inner
        self._counter = counter

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        # Ec2InstanceDirectory makes one call per 200 ids; count the same way.
        self._counter.add("ec2:DescribeInstances (static)", -(-len(instance_ids) // 200))
        return self._inner.describe(instance_ids)


@dataclass
class CountingLifecycle:
    """Stands in for ``AutoScalingLifecycle`` (moto does not implement lifecycle actions);
    each call is counted as the AWS call it would be."""

    counter: AwsCallCounter
    calls: list[tuple[str, str]] = field(default_factory=list)

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        self.calls.append(("complete", hook.instance_id))
        self.counter.add("autoscaling:CompleteLifecycleAction (stub)")

    def heartbeat(self, hook: LifecycleHook) -> None:
        self.calls.append(("heartbeat", hook.instance_id))
        self.counter.add("autoscaling:RecordLifecycleActionHeartbeat (stub)")


class CountingWakeups(MemoryWakeups):
    """Wake-ups in memory; each is counted as the scheduler:CreateSchedule it would be."""

    def __init__(self, counter: AwsCallCounter) -> None:
        super().__init__()
        self._counter = counter
        self._lock = threading.Lock()

    def schedule(self, wakeup: Any) -> None:
        with self._lock:
            super().schedule(wakeup)
        self._counter.add("scheduler:CreateSchedule (memory)")


@contextmanager
def moto_aws() -> Iterator[None]:
    """In-process moto for every AWS service, with dummy credentials (nothing leaves)."""
    from moto import mock_aws

    saved = {k: os.environ.get(k) for k in AWS_ENV}
    os.environ.update(AWS_ENV)
    try:
        with mock_aws():
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}


def boto_client(
    service: str, counter: AwsCallCounter | None = None, config: Any = None, **options: Any
) -> Any:
    import boto3

    client = boto3.Session().client(service, region_name=REGION, config=config, **options)
    return counter.attach(client) if counter is not None else client


def create_idempotency_table() -> None:
    """The table of template.yaml's IdempotencyTable: key ``id``, TTL on ``expiration``."""
    dynamodb = boto_client("dynamodb")
    dynamodb.create_table(
        TableName=IDEMPOTENCY_TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


@dataclass
class Endpoints:
    """Which local stand-in serves each dependency."""

    # "moto": Ec2InstanceDirectory on moto; "static"; "ec2": Ec2InstanceDirectory on
    # bench.aws_endpoints.Ec2Endpoint (EC2's latency and, with a bucket, its throttling)
    directory: str = "moto"
    # "powertools": PowertoolsLedger on moto DynamoDB in this process; "dynamodb": on
    # bench.dynamodb's table, a round trip away; "memory"
    ledger: str = "memory"
    ec2: Ec2Endpoint | None = None
    dynamodb: DynamoDbTable | None = None

    @property
    def label(self) -> tuple[str, str]:
        return self.directory, self.ledger


class Bench:
    """One cluster on one emulator, and pipelines on it (one per concurrent invocation)."""

    def __init__(
        self, cluster: Cluster, emulator: Emulator | ServedEmulator, endpoints: Endpoints
    ) -> None:
        if endpoints.directory == "moto" and cluster.source != "moto":
            raise ValueError("a moto directory needs a cluster launched in moto")
        self.cluster = cluster
        self.emulator = emulator
        self.endpoints = endpoints
        self.aws = AwsCallCounter()
        self.wakeups = CountingWakeups(self.aws)
        self.lifecycle = CountingLifecycle(self.aws)
        self._static = cluster.directory()

    def pipeline(self, name: str = "lifeboat-bench") -> Pipeline:
        """A pipeline with its own clients, as a separate Lambda container would have."""
        kube = KubeApi(self.emulator.api_client())
        return Pipeline(
            clusters=OneCluster(kube),
            directory=self._directory(kube),
            settings=Settings(clusters=(CLUSTER,), region=REGION),
            clock=utc_now,
            lifecycle=self.lifecycle,
            wakeups=self.wakeups,
            ledger=self._ledger(),
            drain_patience=DRAIN_PATIENCE,
            holder=name,
            workers=BATCH_WORKERS,
        )

    def _directory(self, kube: KubeApi) -> InstanceDirectory:
        if self.endpoints.directory == "moto":
            return Ec2InstanceDirectory(boto_client("ec2", self.aws))
        if self.endpoints.directory == "ec2":
            if self.endpoints.ec2 is None:
                raise ValueError("an ec2 directory needs its Ec2Endpoint")
            client = retry_within_deadline(boto_client("ec2", self.aws, client_config()))
            ec2 = Ec2InstanceDirectory(end_on_first_throttle(self.endpoints.ec2.attach(client)))
            # As lifeboat.runtime.service wires it: the NodeClaims while EC2 throttles.
            return ClaimsWhenThrottled(ec2, served(lambda: (CLUSTER,), lambda _name: kube))
        return CountingDirectory(self._static, self.aws)

    def _ledger(self) -> Ledger:
        from lifeboat.aws.idempotency import PowertoolsLedger

        if self.endpoints.ledger == "powertools":
            client = boto_client("dynamodb", self.aws)
            return PowertoolsLedger(IDEMPOTENCY_TABLE, boto3_client=client)
        if self.endpoints.ledger == "dynamodb":
            if self.endpoints.dynamodb is None:
                raise ValueError("a dynamodb ledger needs its DynamoDbTable")
            client = self.endpoints.dynamodb.client(self.aws)
            return PowertoolsLedger(IDEMPOTENCY_TABLE, boto3_client=client)
        return MemoryLedger()

    def restore(self) -> None:
        """Put the cluster back as generated: Nodes and NodeClaims as they were, pods back,
        replacement claims, Events and Leases gone (as if Karpenter had replaced the nodes)."""
        emu = self.emulator
        originals = {(o["kind"], o["metadata"]["name"]) for o in self.cluster.objects}
        for kind in ("NodeClaim", "Event", "Lease"):
            for obj in emu.objects(kind):
                meta = obj["metadata"]
                if (kind, meta["name"]) not in originals:
                    emu.delete_object(kind, meta["name"], meta.get("namespace"))
        for obj in self.cluster.objects:
            if obj["kind"] in ("Node", "NodeClaim", "Pod"):
                emu.put_object(obj)


class LambdaContext:
    """The attributes Powertools reads off a Lambda context."""

    function_name = "lifeboat-bench"
    function_version = "$LATEST"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:lifeboat-bench"
    memory_limit_in_mb = 512
    aws_request_id = "00000000-0000-0000-0000-000000000000"
    log_group_name = "/aws/lambda/lifeboat-bench"
    log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000

"""The soak: thousands of mixed AWS warnings, with duplicates and faults, through the real
handler (``lifeboat.handler.handle_batch``) fed by a simulated SQS queue; then an audit that
every message is accounted for and that no action was done twice.

Used by ``tests/integration/test_soak.py`` (2,000 events, in ``make test``) and by
``python -m bench.soak --events 10000``.

What is simulated, and how faithfully:

* SQS: batches of ``batch_size``; a record returned in ``batchItemFailures`` (or every record
  of a batch whose invocation raised) comes back later with its receive count + 1, and moves
  to the dead-letter list once it was received ``max_receive`` times (the queue's redrive
  policy). Records that are not failures are deleted: they must have produced reports.
* Kubernetes: the project's API emulator over real HTTP, with seeded random 429/500/503
  answers and a few dropped requests (timeouts) on every verb, and a few "poison" nodes whose
  GET always answers 500 (their messages must end in the dead-letter list, not vanish).
* AWS: DescribeInstances throttled (``RequestLimitExceeded``) on some batches, and the
  idempotency ledger throttled on some calls: either before the action ran (PutItem) or after
  it (UpdateItem of the result: the action ran, the message fails, and the retry runs it
  again, which ``act`` must make harmless). ``ledger="dynamodb"`` uses the real
  ``PowertoolsLedger`` on moto with throttling injected into the boto3 client;
  ``ledger="memory"`` uses ``MemoryLedger`` behind a wrapper that throttles the same way
  (moto costs ~16 ms per ledger entry, too slow for 2,000 events inside ``make test``) and
  one that fails a concurrent duplicate as Powertools does (``InProgressGuard``).

The audit reads what the API server did (successful writes, seen server-side), not what
Lifeboat says it did.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import threading
import time
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from botocore.exceptions import ClientError

from kubemu import Emulator
from lifeboat import nodes
from lifeboat.events.notice import LifecycleHook
from lifeboat.handler import handle_batch
from lifeboat.instances import InstanceInfo, StaticInstanceDirectory
from lifeboat.kube import KubeApi, RetryPolicy
from lifeboat.ledger import Ledger, MemoryLedger
from lifeboat.pipeline import MessageResult, OneCluster, Pipeline
from lifeboat.report import Outcome, Report
from lifeboat.settings import Settings
from lifeboat.wakeup import MemoryWakeups, encode

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
CLUSTER = "soak"
ACCOUNT = "123456789012"
REGION = "us-east-1"
# A Tuesday, 14:05 UTC: the "general" pool's business-hours freeze is on, so voluntary
# notices there are deferred while other pools act within their budgets.
START = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lifeboat-interruptions"


@dataclass
class SoakConfig:
    events: int = 2000
    nodes: int = 240
    duplicate_rate: float = 0.05
    kube_fault_rate: float = 0.05
    kube_timeout_rate: float = 0.0005
    # The emulator hangs this long on a dropped request; the client gives up sooner.
    timeout_delay: float = 0.6
    request_timeout: float = 0.3
    # Split between DescribeInstances (per batch) and the ledger (per notice).
    aws_fault_rate: float = 0.05
    batch_size: int = 10
    max_receive: int = 5
    workers: int = 2
    poison_nodes: int = 2
    seed: int = 20261201
    ledger: str = "memory"  # or "dynamodb": PowertoolsLedger on moto
    # Simulated minutes of wake-ups (deferred notices looked at again, drains continuing) to
    # follow: past the first 5-minute recheck of the notices waiting for capacity.
    follow_minutes: int = 6


# --------------------------------------------------------------------------------------------
# The cluster


@dataclass
class Machine:
    instance_id: str
    node_name: str
    nodepool: str | None
    nodeclaim: str | None
    poison: bool = False


POOLS: dict[str, list[dict[str, Any]]] = {
    # Business-hours freeze (voluntary work waits), 20 % otherwise.
    "general": [
        {"nodes": "20%"},
        {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
    ],
    "batch": [{"nodes": "2"}],
    "gpu": [{"nodes": "10%"}],
    "burst": [{"nodes": "100%"}],
}
OPTED_OUT_POOL = "legacy"


def _nodepool(name: str, budgets: list[dict[str, Any]], opted_out: bool = False) -> dict[str, Any]:
    annotations = {"karpenter.sh/nodepool-hash": "1", "karpenter.sh/nodepool-hash-version": "v3"}
    if opted_out:
        annotations[nodes.OPT_OUT_ANNOTATION] = "true"
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "annotations": annotations,
        },
        "spec": {
            "template": {
                "metadata": {"labels": {"team": name}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["spot", "on-demand"],
                        },
                    ],
                    "expireAfter": "720h",
                },
            },
            "disruption": {"budgets": budgets},
        },
    }


def build_cluster(
    config: SoakConfig, rng: random.Random
) -> tuple[list[dict[str, Any]], list[Machine]]:
    objects: list[dict[str, Any]] = [_nodepool(name, budgets) for name, budgets in POOLS.items()]
    objects.append(_nodepool(OPTED_OUT_POOL, [{"nodes": "100%"}], opted_out=True))
    pool_names = [*POOLS, OPTED_OUT_POOL]
    pool_weights = [4, 2, 2, 2, 1]
    machines: list[Machine] = []
    for index in range(config.nodes):
        instance = f"i-{rng.getrandbits(68):017x}"
        node_name = f"ip-10-{index // 250}-{index % 250}-{rng.randrange(1, 255)}.ec2.internal"
        zone = rng.choice(["us-east-1a", "us-east-1b", "us-east-1c"])
        capacity = rng.choice(["spot", "spot", "on-demand"])
        labels = {
            nodes.ZONE_LABEL: zone,
            nodes.INSTANCE_TYPE_LABEL: rng.choice(["m5.large", "c6i.xlarge", "r6i.large"]),
            nodes.CAPACITY_TYPE_LABEL: capacity,
        }
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node_name, "labels": labels},
            "spec": {"providerID": f"aws:///{zone}/{instance}"},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "allocatable": {"cpu": "2", "memory": "8Gi"},
            },
        }
        pool: str | None = None
        claim_name: str | None = None
        if index % 7 == 6:  # one in seven: a managed node group node, no NodeClaim
            labels["eks.amazonaws.com/nodegroup"] = "system"
        else:
            pool = rng.choices(pool_names, pool_weights)[0]
            claim_name = f"{pool}-{index:05d}"
            claim_uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            labels[nodes.NODEPOOL_LABEL] = pool
            # As on a live cluster: only initialized nodes count for the budgets, and
            # Karpenter's finalizer keeps a deleted claim until its instance is gone.
            labels[nodes.INITIALIZED_LABEL] = "true"
            node["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodeClaim",
                    "name": claim_name,
                    "uid": claim_uid,
                }
            ]
            objects.append(
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodeClaim",
                    "metadata": {
                        "name": claim_name,
                        "uid": claim_uid,
                        "labels": {nodes.NODEPOOL_LABEL: pool},
                        "finalizers": [nodes.TERMINATION_FINALIZER],
                    },
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.k8s.aws",
                            "kind": "EC2NodeClass",
                            "name": "default",
                        }
                    },
                    "status": {
                        "providerID": f"aws:///{zone}/{instance}",
                        "nodeName": node_name,
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
        if index % 23 == 5:
            node["metadata"]["annotations"] = {nodes.DO_NOT_DISRUPT: "true"}
        objects.append(node)
        objects.extend(_pods(index, node_name, rng))
        machines.append(Machine(instance, node_name, pool, claim_name))
    for app in range(0, 20, 4):  # PDBs on some apps: some evictions are refused (429)
        objects.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"app-{app}", "namespace": "shop"},
                "spec": {"selector": {"matchLabels": {"app": f"app-{app}"}}, "maxUnavailable": 1},
            }
        )
    for machine in rng.sample(machines, config.poison_nodes):
        machine.poison = True
    return objects, machines


def _pods(index: int, node_name: str, rng: random.Random) -> Iterator[dict[str, Any]]:
    for number in range(2):
        app = f"app-{rng.randrange(20)}"
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{app}-{index}-{number}",
                "namespace": "shop",
                "labels": {"app": app},
            },
            "spec": {"nodeName": node_name, "containers": [{"name": "app", "image": "nginx"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        yield pod
    yield {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"node-exporter-{index}",
            "namespace": "kube-system",
            "labels": {"app": "node-exporter"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "node-exporter",
                    "uid": "ds-1",
                }
            ],
        },
        "spec": {"nodeName": node_name, "containers": [{"name": "exporter", "image": "exporter"}]},
        "status": {"phase": "Running"},
    }


def instance_infos(machines: Sequence[Machine], others: Sequence[str]) -> list[InstanceInfo]:
    """What DescribeInstances says: managed instances, plus some of another cluster."""
    infos = [
        InstanceInfo(
            instance_id=m.instance_id,
            node_name=m.node_name,
            nodeclaim=m.nodeclaim,
            nodepool=m.nodepool,
            cluster=CLUSTER,
            auto_scaling_group=None if m.nodeclaim else "eks-system-1a2b3c4d",
            tags={"eks:cluster-name": CLUSTER},
        )
        for m in machines
    ]
    infos += [
        InstanceInfo(
            instance_id=i,
            node_name=f"{i}.other",
            cluster="other",
            tags={"eks:cluster-name": "other"},
        )
        for i in others
    ]
    return infos


# --------------------------------------------------------------------------------------------
# The events


def _sample(name: str, raw: bool = False) -> dict[str, Any]:
    path = EVENTS_DIR / ("raw" if raw else "") / f"{name}.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


@dataclass
class Sent:
    """One SQS message as sent, and what became of it."""

    message_id: str
    body: str
    label: str  # what the generator meant it to be (kind / malformed / foreign / ...)
    event_id: str | None
    instances: tuple[str, ...] = ()
    duplicate_of: str | None = None
    wakeup: bool = False
    receive_count: int = 0
    visible_at: float = 0.0
    reports: list[Report] | None = None
    dead_lettered: bool = False
    errors: list[str] = field(default_factory=list)


class EventFactory:
    """Fresh events built from the samples in ``events/``, about the soak cluster's instances."""

    def __init__(
        self, rng: random.Random, machines: Sequence[Machine], others: Sequence[str]
    ) -> None:
        self.rng = rng
        self.machines = [m for m in machines if not m.poison]
        self.poison = [m for m in machines if m.poison]
        self.others = list(others)
        self.samples = {
            name: _sample(name)
            for name in (
                "spot-interruption",
                "rebalance-recommendation",
                "scheduled-change",
                "state-change",
                "asg-termination",
                "capacity-reservation-interruption",
            )
        }
        self.hook = _sample("asg-lifecycle-hook", raw=True)
        self.test_notification = _sample("asg-test-notification", raw=True)

    def _id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _time(self) -> datetime:
        return START - timedelta(seconds=self.rng.uniform(0, 90))

    def _instance(self) -> str:
        roll = self.rng.random()
        if roll < 0.04:  # unknown to EC2 (terminated long ago, another account's)
            return f"i-{self.rng.getrandbits(68):017x}"
        if roll < 0.07:
            return self.rng.choice(self.others)
        return self.rng.choice(self.machines).instance_id

    def _eventbridge(self, name: str, instance: str | None = None) -> tuple[dict[str, Any], str]:
        event = copy.deepcopy(self.samples[name])
        event["id"] = self._id()
        event["time"] = self._time().strftime("%Y-%m-%dT%H:%M:%SZ")
        instance = instance or self._instance()
        if "instance-id" in event["detail"]:
            event["detail"]["instance-id"] = instance
        event["resources"] = [f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance}"]
        return event, instance

    def make(self) -> Sent:
        kinds = [
            ("spot-interruption", 22),
            ("rebalance-recommendation", 16),
            ("scheduled-change", 11),
            ("state-change", 12),
            ("asg-termination", 10),
            ("capacity-reservation-interruption", 8),
            ("unsupported", 3),
            ("malformed", 5),
            ("foreign", 3),
            ("poison", 1),
        ]
        label = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        return getattr(self, "_" + label.replace("-", "_"))()

    def _sent(self, body: Any, label: str, event_id: str | None, instances: Sequence[str]) -> Sent:
        text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
        return Sent(self._id(), text, label, event_id, tuple(instances))

    def _spot_interruption(self) -> Sent:
        event, instance = self._eventbridge("spot-interruption")
        event["detail"]["instance-action"] = self.rng.choice(
            ["terminate", "terminate", "stop", "hibernate"]
        )
        return self._sent(event, "spot-interruption", event["id"], [instance])

    def _poison(self) -> Sent:
        if not self.poison:
            return self._spot_interruption()
        event, instance = self._eventbridge(
            "spot-interruption", self.rng.choice(self.poison).instance_id
        )
        return self._sent(event, "poison", event["id"], [instance])

    def _rebalance_recommendation(self) -> Sent:
        event, instance = self._eventbridge("rebalance-recommendation")
        return self._sent(event, "rebalance-recommendation", event["id"], [instance])

    def _capacity_reservation_interruption(self) -> Sent:
        event, instance = self._eventbridge("capacity-reservation-interruption")
        event["detail"]["instance-termination-time"] = (START + timedelta(minutes=2)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        return self._sent(event, "capacity-reservation-interruption", event["id"], [instance])

    def _state_change(self) -> Sent:
        event, instance = self._eventbridge("state-change")
        event["detail"]["state"] = self.rng.choice(
            ["stopping", "stopped", "shutting-down", "terminated", "running", "pending"]
        )
        return self._sent(event, "state-change", event["id"], [instance])

    def _scheduled_change(self) -> Sent:
        event, _ = self._eventbridge("scheduled-change")
        instances = sorted({self._instance() for _ in range(self.rng.randint(1, 3))})
        start = START + self.rng.choice(
            [timedelta(minutes=20), timedelta(hours=3), timedelta(days=2)]
        )
        stamp = format_datetime(start, usegmt=True)
        detail = event["detail"]
        detail["startTime"] = detail["endTime"] = stamp
        detail["affectedEntities"] = [
            {"entityValue": i, "lastUpdatedTime": stamp, "status": "IMPAIRED"} for i in instances
        ]
        event["resources"] = instances
        return self._sent(event, "scheduled-change", event["id"], instances)

    def _asg_termination(self) -> Sent:
        instance = self._instance()
        form = self.rng.random()
        token = self._id()
        if form < 0.5:
            event, _ = self._eventbridge("asg-termination", instance)
            event["detail"]["EC2InstanceId"] = instance
            event["detail"]["LifecycleActionToken"] = token
            return self._sent(event, "asg-termination", event["id"], [instance])
        if form < 0.9:
            hook = copy.deepcopy(self.hook)
            hook.update(
                EC2InstanceId=instance,
                LifecycleActionToken=token,
                RequestId=self._id(),
                Time=self._time().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            )
            body: dict[str, Any] = hook
            if form >= 0.75:  # through SNS
                body = {
                    "Type": "Notification",
                    "MessageId": self._id(),
                    "TopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:lifeboat-asg",
                    "Message": json.dumps(hook),
                    "Timestamp": hook["Time"],
                }
            return self._sent(body, "asg-termination", None, [instance])
        note = copy.deepcopy(self.test_notification)
        note["RequestId"] = self._id()
        return self._sent(note, "asg-test-notification", None, [])

    def _unsupported(self) -> Sent:
        event, _ = self._eventbridge("spot-interruption")
        event["detail-type"] = "EC2 Fleet Instance Change"
        return self._sent(event, "unsupported", event["id"], [])

    def _foreign(self) -> Sent:
        event, instance = self._eventbridge("spot-interruption")
        if self.rng.random() < 0.5:
            event["account"] = "210987654321"
        else:
            event["region"] = "eu-west-1"
        return self._sent(event, "foreign", event["id"], [instance])

    def _malformed(self) -> Sent:
        event, _ = self._eventbridge("spot-interruption")
        roll = self.rng.randrange(5)
        if roll == 0:
            return self._sent(json.dumps(event)[:57], "malformed", None, [])
        if roll == 1:
            del event["detail"]["instance-id"]
        elif roll == 2:
            event["time"] = "yesterday"
        elif roll == 3:
            return self._sent(
                {"Type": "Notification", "MessageId": self._id(), "Message": "{not json"},
                "malformed",
                None,
                [],
            )
        else:
            event["detail"]["instance-id"] = "not-an-instance"
        return self._sent(event, "malformed", event["id"], [])


def generate(config: SoakConfig, rng: random.Random, factory: EventFactory) -> list[Sent]:
    """``config.events`` events, plus ``duplicate_rate`` of them re-sent (new message id, same
    body): half right behind the original (mostly the same batch), half later."""
    messages = [factory.make() for _ in range(config.events)]
    count = round(config.events * config.duplicate_rate)
    originals = rng.sample(range(config.events), count)
    order: list[Sent] = list(messages)
    later: list[tuple[int, Sent]] = []
    for number, index in enumerate(sorted(originals, reverse=True)):
        original = messages[index]
        copy_ = Sent(
            factory._id(),
            original.body,
            original.label,
            original.event_id,
            original.instances,
            original.message_id,
        )
        if number % 2 == 0:
            order.insert(order.index(original) + 1, copy_)
        else:
            later.append(
                (index + rng.randrange(3 * config.batch_size, 30 * config.batch_size), copy_)
            )
    for position, copy_ in sorted(later, key=lambda item: item[0], reverse=True):
        order.insert(min(position, len(order)), copy_)
    return order


# --------------------------------------------------------------------------------------------
# AWS faults


def throttled(operation: str, code: str = "ThrottlingException") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": "Rate exceeded (injected by the soak)"},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        },
        operation,
    )


class ThrottledDirectory:
    """An instance directory whose DescribeInstances is throttled on some calls (after
    botocore's own retries gave up: what reaches Lifeboat is the ClientError)."""

    def __init__(self, inner: StaticInstanceDirectory, rate: float, rng: random.Random) -> None:
        self._inner = inner
        self._rate = rate
        self._rng = rng
        self._lock = threading.Lock()
        self.calls = 0
        self.throttled = 0

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        with self._lock:
            self.calls += 1
            fail = self._rng.random() < self._rate
            self.throttled += fail
        if fail:
            raise throttled("DescribeInstances", "RequestLimitExceeded")
        return self._inner.describe(instance_ids)


class ThrottledLedger:
    """A ledger whose store is throttled on some calls: before the action (nothing done,
    nothing recorded) or after it (the action ran but its completion was not recorded, so
    the retried message runs it again), as Powertools behaves on a throttled DynamoDB."""

    def __init__(self, inner: Ledger, rate: float, rng: random.Random) -> None:
        self._inner = inner
        self._rate = rate
        self._rng = rng
        self._lock = threading.Lock()
        self.before = 0
        self.after = 0

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        with self._lock:
            draw = self._rng.random()
            when = "before" if draw < self._rate / 2 else "after" if draw < self._rate else None
            if when == "before":
                self.before += 1
            elif when == "after":
                self.after += 1
        if when == "before":
            raise throttled("PutItem")
        if when is None:
            return self._inner.once(key, handle)

        def handle_then_fail() -> Report:
            handle()
            raise throttled("UpdateItem")

        return self._inner.once(key, handle_then_fail)


class InProgress(RuntimeError):
    """Powertools' IdempotencyAlreadyInProgressError, for the in-memory ledger."""


class InProgressGuard:
    """``MemoryLedger`` as Powertools behaves for a key being handled right now: the
    concurrent duplicate fails (and SQS retries it) instead of being told "already handled".

    ``MemoryLedger`` alone answers "duplicate" while the first handling is still running, so
    when that handling then fails, the duplicate has been deleted as handled: the soak saw
    it at 10,000 events (a duplicate in the same batch as a failing original).
    """

    def __init__(self, inner: Ledger) -> None:
        self._inner = inner
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        with self._lock:
            if key in self._running:
                raise InProgress(f"{key} is being handled by another delivery")
            self._running.add(key)
        try:
            return self._inner.once(key, handle)
        finally:
            with self._lock:
                self._running.discard(key)


class DynamoThrottle:
    """botocore ``before-call`` hook: answers some DynamoDB calls with a throttling error."""

    OPERATIONS = ("PutItem", "UpdateItem", "DeleteItem", "GetItem")

    def __init__(self, rate: float, rng: random.Random) -> None:
        self._rate = rate
        self._rng = rng
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.throttled: Counter[str] = Counter()

    def install(self, client: Any) -> None:
        for operation in self.OPERATIONS:
            client.meta.events.register(f"before-call.dynamodb.{operation}", self._hook(operation))

    def _hook(self, operation: str) -> Callable[..., Any]:
        def hook(**_: Any) -> Any:
            with self._lock:
                self.calls[operation] += 1
                if self._rng.random() >= self._rate:
                    return None
                self.throttled[operation] += 1
            parsed = {
                "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "injected"},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }
            return SimpleNamespace(status_code=400, headers={}), parsed

        return hook


@dataclass
class FakeLambdaContext:
    """What Powertools reads of a Lambda context (the in-progress expiry of idempotency)."""

    remaining_ms: int = 1000
    function_name: str = "lifeboat-interruption"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:lifeboat-interruption"
    aws_request_id: str = "soak"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class RecordedLifecycle:
    calls: list[tuple[str, str]] = field(default_factory=list)

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        self.calls.append(("complete", hook.instance_id))

    def heartbeat(self, hook: LifecycleHook) -> None:
        self.calls.append(("heartbeat", hook.instance_id))


# --------------------------------------------------------------------------------------------
# What the API server did


@dataclass
class ServerLog:
    """Successful writes and injected faults, seen by the emulator itself."""

    created_claims: list[dict[str, Any]] = field(default_factory=list)
    deleted_claims: Counter[str] = field(default_factory=Counter)
    evictions: Counter[str] = field(default_factory=Counter)
    node_patches: int = 0
    answers: Counter[str] = field(default_factory=Counter)


def instrument(emulator: Emulator) -> ServerLog:
    """Wrap the emulator's request pipeline to see each answer (the request log has none)."""
    backend = emulator._backend
    original = backend.handle
    log = ServerLog()
    lock = threading.Lock()

    def handle(method: str, path: str, query: dict[str, str], content_type: str, raw: bytes) -> Any:
        result = original(method, path, query, content_type, raw)
        code = getattr(result, "code", None)
        with lock:
            log.answers["dropped" if code is None else str(code)] += 1
            if code is None or not 200 <= code < 300:
                return result
            if method == "POST" and path.endswith("/nodeclaims"):
                log.created_claims.append(result.body)
            elif method == "DELETE" and "/nodeclaims/" in path:
                log.deleted_claims[path.rsplit("/", 1)[-1]] += 1
            elif method == "POST" and path.endswith("/eviction"):
                log.evictions[path.removesuffix("/eviction")] += 1
            elif method == "PATCH" and path.startswith("/api/v1/nodes/"):
                log.node_patches += 1
        return result

    backend.handle = handle  # type: ignore[method-assign]
    return log


# --------------------------------------------------------------------------------------------
# The run


@dataclass
class SoakResult:
    config: SoakConfig
    seconds: float
    sent: list[Sent]
    wakeups: list[Sent]
    batches: int
    batch_errors: int
    outcomes: Counter[str]
    messages_by_fate: Counter[str]
    duplicates_same_batch: int
    duplicates_later: int
    server: ServerLog
    directory_throttled: int
    ledger_throttled: dict[str, int]
    metrics: Counter[str]
    violations: list[str]
    pending_wakeups: int

    def summary(self) -> dict[str, Any]:
        return {
            "events": self.config.events,
            "messages": len(self.sent),
            "wakeup_messages": len(self.wakeups),
            "seconds": round(self.seconds, 1),
            "batches": self.batches,
            "batches_failed_whole": self.batch_errors,
            "report_outcomes": dict(sorted(self.outcomes.items())),
            "message_fates": dict(sorted(self.messages_by_fate.items())),
            "duplicates_same_batch": self.duplicates_same_batch,
            "duplicates_later_batch": self.duplicates_later,
            "kube_answers": dict(sorted(self.server.answers.items())),
            "describe_instances_throttled": self.directory_throttled,
            "ledger_throttled": self.ledger_throttled,
            "replacements_created": len(self.server.created_claims),
            "nodeclaims_deleted": sum(self.server.deleted_claims.values()),
            "pods_evicted": sum(self.server.evictions.values()),
            "pending_wakeups": self.pending_wakeups,
            "dead_lettered_not_poison": len(unlucky(self)),
            "lost": sum(
                1 for m in [*self.sent, *self.wakeups] if m.reports is None and not m.dead_lettered
            ),
            "violations": len(self.violations),
        }


class _Quiet:
    """A logger for handle_batch that counts instead of printing 2,000 decisions."""

    def __init__(self) -> None:
        self.levels: Counter[int] = Counter()

    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        self.levels[level] += 1

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.levels[40] += 1


class _Metrics:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
        with self._lock:
            key = name if name != "Outcomes" else f"Outcomes.{dimensions['outcome']}"
            self.counts[key] += 1


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@contextmanager
def _ledger(
    config: SoakConfig, rng: random.Random
) -> Iterator[tuple[Ledger, Callable[[], dict[str, int]], Any]]:
    if config.ledger == "memory":
        ledger = ThrottledLedger(InProgressGuard(MemoryLedger()), config.aws_fault_rate / 2, rng)
        yield ledger, lambda: {"before_action": ledger.before, "after_action": ledger.after}, None
        return
    import boto3
    from moto import mock_aws

    from lifeboat.idempotency import PowertoolsLedger

    with mock_aws():
        client = boto3.client(
            "dynamodb",
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        client.create_table(
            TableName="lifeboat-idempotency",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        throttle = DynamoThrottle(config.aws_fault_rate / 2, rng)
        throttle.install(client)
        powertools = PowertoolsLedger("lifeboat-idempotency", boto3_client=client)
        # A Lambda's in-progress record expires with the invocation; SQS redelivers after the
        # visibility timeout, which is longer (as AWS recommends).
        context = FakeLambdaContext(remaining_ms=1000)
        powertools.register_lambda_context(context)
        yield powertools, lambda: dict(throttle.throttled), context


def run_soak(config: SoakConfig) -> SoakResult:
    started = time.monotonic()
    rng = random.Random(config.seed)
    objects, machines = build_cluster(config, rng)
    others = [f"i-{rng.getrandbits(68):017x}" for _ in range(10)]
    factory = EventFactory(rng, machines, others)
    sent = generate(config, rng, factory)
    clock = Clock(START)
    wakeups = MemoryWakeups()
    settings = Settings(clusters=(CLUSTER,), account_id=ACCOUNT, region=REGION)
    directory = ThrottledDirectory(
        StaticInstanceDirectory(instance_infos(machines, others)),
        config.aws_fault_rate,
        random.Random(rng.random()),
    )
    metrics = _Metrics()
    quiet = _Quiet()
    visibility = 0.0 if config.ledger == "memory" else 1.1

    with (
        Emulator(objects) as emulator,
        _ledger(config, random.Random(rng.random())) as (ledger, ledger_faults, context),
    ):
        server = instrument(emulator)
        for machine in machines:
            if machine.poison:
                emulator.fail_next(
                    500, times=10**9, verb="get", resource="nodes", name=machine.node_name
                )
        emulator.set_fault_rate(
            rate=config.kube_fault_rate,
            seed=config.seed,
            statuses=(429, 500, 503),
            timeout_rate=config.kube_timeout_rate,
            timeout_delay=config.timeout_delay,
        )
        kube = KubeApi(
            emulator.api_client(),
            RetryPolicy(
                attempts=4, base_delay=0.002, max_delay=0.02, request_timeout=config.request_timeout
            ),
        )
        pipeline = Pipeline(
            clusters=OneCluster(kube),
            directory=directory,
            settings=settings,
            clock=clock,
            lifecycle=RecordedLifecycle(),
            wakeups=wakeups,
            ledger=ledger,
            holder="soak",
            workers=config.workers,
        )
        last_results: list[MessageResult] = []
        process = pipeline.process

        def recording_process(bodies: Sequence[Any]) -> list[MessageResult]:
            results = process(bodies)
            last_results[:] = results
            return results

        pipeline.process = recording_process  # type: ignore[method-assign]

        queue: deque[Sent] = deque(sent)
        violations: list[str] = []
        dead: list[Sent] = []
        stats = Counter[str]()
        same_batch_dups = 0
        seen_bodies: set[str] = set()

        def drain() -> None:
            nonlocal same_batch_dups
            while queue:
                batch = _take(queue, config.batch_size)
                bodies = [m.body for m in batch]
                same_batch_dups += len(bodies) - len(set(bodies))
                for message in batch:
                    message.receive_count += 1
                event = {"Records": [_record(m) for m in batch]}
                last_results.clear()
                stats["batches"] += 1
                try:
                    response = handle_batch(event, context, pipeline, metrics=metrics, logger=quiet)
                    failed = {
                        item["itemIdentifier"] for item in response.get("batchItemFailures", [])
                    }
                except Exception as error:  # the invocation failed: Lambda retries every record
                    stats["batch_errors"] += 1
                    failed = {m.message_id for m in batch}
                    for message in batch:
                        message.errors.append(f"batch: {error!r}"[:200])
                    last_results.clear()
                for index, message in enumerate(batch):
                    result = last_results[index] if last_results else None
                    if result is not None and (result.error is not None) != (
                        message.message_id in failed
                    ):
                        violations.append(
                            f"message {message.message_id} ({message.label}): error "
                            f"{result.error!r} but "
                            f"{'failed' if message.message_id in failed else 'deleted'} "
                            "by handle_batch"
                        )
                    if message.message_id in failed:
                        if result is not None and result.error is not None:
                            message.errors.append(repr(result.error)[:200])
                        if message.receive_count >= config.max_receive:
                            message.dead_lettered = True
                            dead.append(message)
                        else:
                            message.visible_at = time.monotonic() + visibility
                            queue.append(message)
                        continue
                    if result is None:
                        violations.append(f"message {message.message_id} deleted without a result")
                        continue
                    message.reports = list(result.reports)
                    seen_bodies.add(message.body)

        drain()
        # Follow the wake-ups the run scheduled, on the simulated clock, through the same queue.
        wakeup_messages: list[Sent] = []
        until = START + timedelta(minutes=config.follow_minutes)
        while True:
            due = wakeups.next_due()
            if due is None or due > until:
                break
            clock.now = max(clock.now, due)
            _launch_replacements(emulator, server)
            for wakeup in wakeups.pop_due(clock.now):
                message = Sent(
                    factory._id(),
                    encode(wakeup),
                    f"wakeup:{wakeup.task}",
                    wakeup.notice.event_id,
                    wakeup=True,
                )
                wakeup_messages.append(message)
                queue.append(message)
            drain()
        emulator.clear_faults()
        final_nodes = emulator.objects("Node")
        ledger_throttled = ledger_faults()

    outcomes: Counter[str] = Counter()
    fates: Counter[str] = Counter()
    for message in [*sent, *wakeup_messages]:
        if message.dead_lettered:
            fates["dead-lettered"] += 1
            continue
        if message.reports is None:
            violations.append(f"LOST: message {message.message_id} ({message.label}) has no fate")
            fates["lost"] += 1
            continue
        if not message.reports:
            violations.append(
                f"message {message.message_id} ({message.label}) deleted with no report"
            )
        for report in message.reports:
            outcomes[str(report.outcome)] += 1
            if not report.reason.strip():
                violations.append(
                    f"message {message.message_id}: {report.outcome} without a reason"
                )
        kinds = sorted({str(r.outcome) for r in message.reports})
        fates["+".join(kinds) or "none"] += 1
    violations += audit(sent, wakeup_messages, server, final_nodes)
    violations += _check_expectations(sent)
    metric_outcomes = sum(v for k, v in metrics.counts.items() if k.startswith("Outcomes."))
    if metric_outcomes != sum(outcomes.values()):
        violations.append(f"Outcomes metrics {metric_outcomes} != reports {sum(outcomes.values())}")
    later_dups = sum(1 for m in sent if m.duplicate_of) - same_batch_dups
    return SoakResult(
        config=config,
        seconds=time.monotonic() - started,
        sent=sent,
        wakeups=wakeup_messages,
        batches=stats["batches"],
        batch_errors=stats["batch_errors"],
        outcomes=outcomes,
        messages_by_fate=fates,
        duplicates_same_batch=same_batch_dups,
        duplicates_later=later_dups,
        server=server,
        directory_throttled=directory.throttled,
        ledger_throttled=ledger_throttled,
        metrics=metrics.counts,
        violations=violations,
        pending_wakeups=len(wakeups.pending),
    )


def _launch_replacements(emulator: Emulator, server: ServerLog) -> None:
    """What Karpenter does with a new NodeClaim, reduced to what Lifeboat looks at: it
    becomes Ready. (``lifeboat_local.karpenter_sim`` does the whole of it, but scans every
    pod per node and would cost more than the soak itself.)"""
    for created in server.created_claims:
        name = created["metadata"]["name"]
        claim = emulator.get_object("NodeClaim", name, api_version="karpenter.sh/v1")
        if claim is None or claim.get("status", {}).get("conditions"):
            continue
        claim["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
        emulator.put_object(claim)


def _take(queue: deque[Sent], size: int) -> list[Sent]:
    """Up to ``size`` visible messages, oldest first; waits when none is visible yet."""
    while True:
        now = time.monotonic()
        batch: list[Sent] = []
        rest: list[Sent] = []
        while queue and len(batch) < size:
            message = queue.popleft()
            (batch if message.visible_at <= now else rest).append(message)
        queue.extendleft(reversed(rest))
        if batch:
            return batch
        time.sleep(max(0.0, min(m.visible_at for m in queue) - now))


def _record(message: Sent) -> dict[str, Any]:
    return {
        "messageId": message.message_id,
        "receiptHandle": f"handle-{message.message_id}-{message.receive_count}",
        "body": message.body,
        "attributes": {
            "ApproximateReceiveCount": str(message.receive_count),
            "SentTimestamp": "1796133720412",
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": "1796133720435",
        },
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": REGION,
    }


def audit(
    sent: Sequence[Sent],
    wakeups: Sequence[Sent],
    server: ServerLog,
    final_nodes: Sequence[Mapping[str, Any]],
) -> list[str]:
    """No action repeated, judged by what the API server accepted."""
    problems: list[str] = []
    per_notice: Counter[str] = Counter()
    for claim in server.created_claims:
        meta = claim.get("metadata", {})
        if nodes.REPLACES_LABEL not in (meta.get("labels") or {}):
            problems.append(f"NodeClaim {meta.get('name')} created without {nodes.REPLACES_LABEL}")
        per_notice[(meta.get("annotations") or {}).get(nodes.NOTICE_ANNOTATION, "?")] += 1
    problems += [
        f"{n} replacement NodeClaims for (event, instance) {k}"
        for k, n in per_notice.items()
        if n > 1
    ]
    problems += [
        f"NodeClaim {k} deleted {n} times" for k, n in server.deleted_claims.items() if n > 1
    ]
    problems += [f"pod {k} evicted {n} times" for k, n in server.evictions.items() if n > 1]
    for node in final_nodes:
        keys = [str(t.get("key")) for t in nodes.taints(node)]
        repeated = sorted(k for k, n in Counter(keys).items() if n > 1)
        if repeated:
            problems.append(f"node {nodes.name_of(node)} carries taints {repeated} more than once")
    # Acted once: per (event, instance), one delivery's reports say what was done; the other
    # deliveries of the same event say "duplicate".
    reporting: defaultdict[str, list[str]] = defaultdict(list)
    for message in sent:
        for report in message.reports or []:
            if report.instance_id and report.event_id and "duplicate delivery" not in report.reason:
                reporting[f"{report.event_id}#{report.instance_id}"].append(message.message_id)
    problems += [
        f"(event, instance) {k} handled by {len(v)} deliveries"
        for k, v in reporting.items()
        if len(v) > 1
    ]
    # A dead-lettered message failed on every receive, each time for a recorded reason: never
    # a silent failure. (An ordinary one can be unlucky: several 2.5 % AWS faults in a row.)
    for message in [*sent, *wakeups]:
        if message.dead_lettered and len(message.errors) != message.receive_count:
            problems.append(
                f"message {message.message_id} ({message.label}) dead-lettered after "
                f"{message.receive_count} receives but {len(message.errors)} errors"
            )
    return problems


def unlucky(result: SoakResult) -> list[Sent]:
    """Dead-lettered messages that were not about a poison node."""
    return [m for m in result.sent if m.dead_lettered and m.label != "poison"]


def _check_expectations(sent: Sequence[Sent]) -> list[str]:
    """What each generated message must become, whatever the faults."""
    problems: list[str] = []
    twinned = {m.duplicate_of for m in sent if m.duplicate_of}
    twinned |= {m.message_id for m in sent if m.duplicate_of}
    for message in sent:
        if message.reports is None:
            continue
        outcomes = {r.outcome for r in message.reports}
        # (A duplicate of a rejected message may also say "duplicate delivery".)
        # Either copy of a duplicated message may be the one handled second.
        duplicate_ignored = message.message_id in twinned and outcomes == {Outcome.IGNORED}
        rejectable = message.label in ("malformed", "foreign")
        if rejectable and outcomes != {Outcome.REJECTED} and not duplicate_ignored:
            problems.append(f"{message.label} message {message.message_id} ended {outcomes}")
        if message.label == "poison" and not message.dead_lettered:
            problems.append(
                f"poison message {message.message_id} ended {outcomes}, not dead-lettered"
            )
        if message.label == "unsupported" and outcomes != {Outcome.IGNORED}:
            problems.append(f"unsupported message {message.message_id} ended {outcomes}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=None, help="default: events / 7, at least 300")
    parser.add_argument("--ledger", choices=("memory", "dynamodb"), default="memory")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=SoakConfig.seed)
    parser.add_argument("--follow-minutes", type=int, default=10)
    args = parser.parse_args(argv)
    config = SoakConfig(
        events=args.events,
        nodes=args.nodes or max(300, args.events // 7),
        ledger=args.ledger,
        workers=args.workers,
        seed=args.seed,
        follow_minutes=args.follow_minutes,
    )
    result = run_soak(config)
    print(json.dumps(result.summary(), indent=2))
    for problem in result.violations[:50]:
        print("VIOLATION:", problem)
    return 1 if result.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())

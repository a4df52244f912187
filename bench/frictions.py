"""A Spot storm on a throttled account: warnings arriving over a minute, through a queue.

``events`` Spot warnings arrive evenly over ``spread`` seconds (each event's ``time`` is its
arrival, so its deadline is two minutes later); a simulated SQS queue hands them to
``concurrency`` invocations in batches of up to 10, as the event source mapping does. A
record reported failed comes back when the handler asked (``sqs:ChangeMessageVisibility``,
:class:`StormQueue` is the handler's ``redelivery``) or after the queue's visibility timeout.
The frictions of a real account during a large reclaim:

* EC2: ``DescribeInstances`` through botocore to :class:`bench.aws_endpoints.Ec2Endpoint`,
  a round trip of :data:`EC2_LATENCY`, throttled by EC2's token bucket for Describe*
  requests (100, refilled at 20 a second) of which the account's other callers take
  ``ec2_others_per_second``, starting empty: a share answered ``RequestLimitExceeded``.
* Kubernetes: the API server answers a share of requests 429 with ``Retry-After: 1`` (API
  Priority and Fairness shedding load), on top of its latency.
* DynamoDB: the Powertools ledger on DynamoDB in a process of its own, a round trip away
  (bench.dynamodb).

Reported: receipt -> tainted (p50, p99, max: from the first delivery of a warning to the
taint-and-cordon patch the API server applied), arrival -> tainted, the share tainted before
the deadline and at least 30 s before it, EC2 calls refused, 429s answered, redeliveries.
"""

from __future__ import annotations

import heapq
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.events import spot_interruption, sqs_record
from bench.harness import Bench, LambdaContext
from bench.scenarios import DecisionLog, NullMetrics, _summary_ms
from lifeboat.flow.pipeline import Pipeline
from lifeboat.marks.node_marks import taint_key
from lifeboat.model.deadline import QUEUE_VISIBILITY_TIMEOUT
from lifeboat.model.notice import Kind
from lifeboat.runtime.handler import handle_batch

EC2_LATENCY = 0.1  # DescribeInstances' round trip, typically 50-200 ms
SPOT_NOTICE = timedelta(minutes=2)
AHEAD = timedelta(seconds=30)  # "tainted at least 30 s before the deadline"


@dataclass
class _Message:
    index: int
    body: str
    arrival: float  # perf_counter seconds
    deadline: float
    receipts: int = 0
    first_receipt: float | None = None
    handle: str = ""


@dataclass
class StormQueue:
    """The queue between EventBridge and the invocations: messages visible from their
    arrival, taken up to 10 at a time, deleted when handled, made visible again when the
    handler asks (``redeliver_in``) or after the visibility timeout."""

    messages: list[_Message]
    visibility_timeout: float = QUEUE_VISIBILITY_TIMEOUT.total_seconds()
    redeliveries: int = 0
    _heap: list[tuple[float, int]] = field(default_factory=list)
    _by_handle: dict[str, _Message] = field(default_factory=dict)
    _pending: int = 0
    _until: dict[int, float] = field(default_factory=dict)
    _lock: threading.Condition = field(default_factory=threading.Condition)

    def __post_init__(self) -> None:
        self._heap = [(m.arrival, m.index) for m in self.messages]
        heapq.heapify(self._heap)
        self._pending = len(self.messages)

    def receive(self, give_up_at: float) -> list[_Message] | None:
        """Up to 10 visible messages (waiting for the next to become visible); None when
        every message is deleted or ``give_up_at`` has passed."""
        with self._lock:
            while True:
                now = time.perf_counter()
                if self._pending == 0 or now > give_up_at:
                    return None
                if self._heap and self._heap[0][0] <= now:
                    return self._take(now)
                wait = (self._heap[0][0] - now) if self._heap else 0.5
                self._lock.wait(min(0.5, max(0.001, wait)))

    def _take(self, now: float) -> list[_Message]:
        taken: list[_Message] = []
        while self._heap and self._heap[0][0] <= now and len(taken) < 10:
            _, index = heapq.heappop(self._heap)
            message = self.messages[index]
            message.receipts += 1
            message.first_receipt = message.first_receipt or now
            message.handle = f"h-{index}-{message.receipts}"
            self._by_handle[message.handle] = message
            self._until[index] = now + self.visibility_timeout
            taken.append(message)
        return taken

    def redeliver_in(self, receipt_handle: str, seconds: int) -> bool:
        with self._lock:
            message = self._by_handle.get(receipt_handle)
            if message is not None:
                self._until[message.index] = time.perf_counter() + seconds
                self.redeliveries += 1
        return message is not None

    def settle(self, taken: list[_Message], failed: set[str]) -> None:
        """Delete what was handled; what failed becomes visible when it was told to."""
        with self._lock:
            for message in taken:
                self._by_handle.pop(message.handle, None)
                if message.handle in failed:
                    heapq.heappush(self._heap, (self._until[message.index], message.index))
                else:
                    self._pending -= 1
            self._lock.notify_all()


def _messages(bench: Bench, events: int, spread: float, start: float) -> list[_Message]:
    machines = bench.cluster.karpenter[:events]
    wall = datetime.now(UTC)
    messages = []
    for index, machine in enumerate(machines):
        offset = spread * index / max(1, len(machines))
        body = spot_interruption(machine)
        # EventBridge's time has whole seconds; the deadline follows from it, as Lifeboat reads it.
        moment = (wall + timedelta(seconds=offset)).replace(microsecond=0)
        body["time"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        deadline = start + (moment + SPOT_NOTICE - wall).total_seconds()
        record = sqs_record(body)
        messages.append(_Message(index, record["body"], start + offset, deadline))
    return messages


def _invocations(
    pipelines: list[Pipeline], queue: StormQueue, log: DecisionLog, give_up_at: float
) -> tuple[list[threading.Thread], list[int]]:
    failures = [0]

    def run(pipeline: Pipeline) -> None:
        while (taken := queue.receive(give_up_at)) is not None:
            event = {
                "Records": [
                    {**sqs_record(m.body, f"m-{m.index}", m.receipts), "receiptHandle": m.handle}
                    for m in taken
                ]
            }
            context = LambdaContext()
            register = getattr(pipeline.ledger, "register_lambda_context", None)
            if register is not None:
                register(context)
            try:
                response = handle_batch(
                    event, context, pipeline, metrics=NullMetrics(), logger=log, redelivery=queue
                )
                failed = _failed_handles(taken, response)
            except Exception:  # the invocation failed: every record comes back
                failed = {m.handle for m in taken}
            failures[0] += len(failed)
            queue.settle(taken, failed)

    threads = [
        threading.Thread(target=run, args=(p,), name=f"invocation-{i}")
        for i, p in enumerate(pipelines)
    ]
    return threads, failures


def _failed_handles(taken: list[_Message], response: dict[str, Any]) -> set[str]:
    by_id = {f"m-{m.index}": m.handle for m in taken}
    return {by_id[f["itemIdentifier"]] for f in response.get("batchItemFailures", [])}


def spread_storm(
    bench: Bench,
    events: int = 1000,
    spread: float = 60.0,
    concurrency: int = 10,
    *,
    k8s_429_rate: float = 0.0,
) -> dict[str, Any]:
    """The storm over ``spread`` seconds (see the module's docstring); the emulator answers
    ``k8s_429_rate`` of requests 429 with Retry-After."""
    pipelines = [bench.pipeline(f"lifeboat-storm-{i}") for i in range(concurrency)]
    log = DecisionLog()
    bench.emulator.reset_counts()
    if k8s_429_rate:
        bench.emulator.set_fault_rate(k8s_429_rate, seed=36, statuses=(429,))
    start = time.perf_counter() + 0.5
    messages = _messages(bench, events, spread, start)
    queue = StormQueue(messages)
    give_up_at = max(m.deadline for m in messages) + 10
    threads, failures = _invocations(pipelines, queue, log, give_up_at)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        bench.emulator.clear_faults()
    wall = time.perf_counter() - start
    report = _report(bench, messages, queue, log, failures[0], wall, events, spread, concurrency)
    report["nodeclaim_lists"] = sum(getattr(p.directory, "lists", 0) for p in pipelines)
    return report


def _tainted_at(bench: Bench) -> dict[str, float]:
    """When the API server applied each node's taint-and-cordon patch (that is still there)."""
    patched: dict[str, float] = {}
    for (verb, _group, resource, _ns, name), (
        _arrived,
        answered,
    ) in bench.emulator.timed_request_log():
        if verb == "patch" and resource == "nodes" and name not in patched and answered:
            patched[name] = answered
    key = taint_key(Kind.SPOT_INTERRUPTION)
    done = {}
    for node in bench.emulator.objects("Node"):
        spec = node.get("spec", {})
        name = node["metadata"]["name"]
        taints = spec.get("taints") or []
        ours = any(t.get("key") == key for t in taints)
        if spec.get("unschedulable") and ours and name in patched:
            done[name] = patched[name]
    return done


def _report(
    bench: Bench,
    messages: list[_Message],
    queue: StormQueue,
    log: DecisionLog,
    failures: int,
    wall: float,
    events: int,
    spread: float,
    concurrency: int,
) -> dict[str, Any]:
    tainted = _tainted_at(bench)
    machines = bench.cluster.karpenter
    receipt, arrival, before, ahead = [], [], 0, 0
    for message in messages:
        at = tainted.get(machines[message.index].node_name)
        if at is None or message.first_receipt is None:
            continue
        receipt.append(at - message.first_receipt)
        arrival.append(at - message.arrival)
        before += at < message.deadline
        ahead += at <= message.deadline - AHEAD.total_seconds()
    endpoint = bench.endpoints.ec2
    answers = bench.emulator.answers
    return {
        "nodes": len(bench.cluster.machines),
        "events": events,
        "spread_seconds": spread,
        "concurrency": concurrency,
        "directory": bench.endpoints.directory,
        "ledger": bench.endpoints.ledger,
        "wall_seconds": round(wall, 1),
        "tainted_and_cordoned": len(receipt),
        "tainted_before_deadline_share": round(before / events, 4),
        "tainted_30s_before_deadline_share": round(ahead / events, 4),
        "receipt_to_tainted_ms": _summary_ms(receipt),
        "arrival_to_tainted_ms": _summary_ms(arrival),
        "batch_item_failures": failures,
        "redeliveries_asked": queue.redeliveries,
        "deliveries": sum(m.receipts for m in messages),
        "outcomes": dict(log.outcomes),
        "errors": log.errors[:5],
        "ec2_describe_calls": endpoint.calls if endpoint else None,
        "ec2_throttled": endpoint.throttled if endpoint else None,
        "ec2_throttled_share": round(endpoint.throttled / endpoint.calls, 3)
        if endpoint and endpoint.calls
        else None,
        "k8s_requests": len(bench.emulator.request_log),
        "k8s_429_answers": answers.get("429", 0),
    }

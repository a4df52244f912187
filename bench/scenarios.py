"""What is measured: Kubernetes requests and AWS calls per event kind, and the Spot storm."""

from __future__ import annotations

import math
import queue
import statistics
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.cluster import Machine
from bench.events import KINDS, sqs_batches
from bench.harness import Bench, LambdaContext
from lifeboat.flow.pipeline import Pipeline
from lifeboat.marks.node_marks import taint_key
from lifeboat.model.notice import Kind
from lifeboat.runtime.handler import handle_batch
from lifeboat.telemetry.observability import PowertoolsBatchMetrics


class DecisionLog:
    """A logger for ``handle_batch``: keeps each decision's outcome, prints nothing."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def log(self, level: int, message: str, *args: Any, extra: Any = None, **_: Any) -> None:
        decision = (extra or {}).get("decision")
        if decision is not None:
            with self._lock:
                self.outcomes[str(decision.get("outcome"))] += 1

    def error(self, message: str, *args: Any, extra: Any = None, **_: Any) -> None:
        with self._lock:
            self.errors.append(str((extra or {}).get("error", message)))

    def info(self, *args: Any, **kwargs: Any) -> None:
        pass

    warning = debug = info


class NullMetrics:
    """Counts observations and discards them (where EMF output is not what is measured)."""

    def __init__(self) -> None:
        self.emitted = 0

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
        self.emitted += 1


class EmfCount:
    """What production writes (PowertoolsBatchMetrics), counted instead of printed: EMF
    documents per batch, and the distinct (cluster, nodepool, kind, outcome) among its
    reports, the fewest documents EMF allows (one value per dimension per document)."""

    def __init__(self) -> None:
        self.documents: list[int] = []
        self.groups: list[int] = []
        self._lock = threading.Lock()

    def sink(self) -> PowertoolsBatchMetrics:
        sink = PowertoolsBatchMetrics("Lifeboat", out=lambda _line: None)
        sink.flush()  # the environment's cold start is not a batch's document
        return sink

    def record(self, sink: PowertoolsBatchMetrics, event: dict[str, Any]) -> None:
        groups = {tuple(sorted(d.items())) for _n, _v, _u, d in sink._pending if d}
        written = sink.flush()
        with self._lock:
            self.documents.append(written)
            self.groups.append(len(groups))


def _invoke(
    pipeline: Pipeline, event: dict[str, Any], log: DecisionLog, emf: EmfCount | None = None
) -> dict[str, Any]:
    context = LambdaContext()
    # As functions/interruption/app.py does before every batch.
    register = getattr(pipeline.ledger, "register_lambda_context", None)
    if register is not None:
        register(context)
    if emf is None:
        return handle_batch(event, context, pipeline, metrics=NullMetrics(), logger=log)
    sink = emf.sink()
    flush = sink.flush
    sink.flush = lambda: 0  # type: ignore[method-assign]  # counted below instead
    try:
        return handle_batch(event, context, pipeline, metrics=sink, logger=log)
    finally:
        sink.flush = flush  # type: ignore[method-assign]
        emf.record(sink, event)


def _kind_machines(bench: Bench, per_kind: int) -> dict[str, list[Machine]]:
    """Disjoint machines per kind (Karpenter nodes spread over the pools; node group nodes
    for the ASG lifecycle hook), so no kind meets a node an earlier kind already tainted."""
    karpenter = iter(bench.cluster.karpenter)
    chosen: dict[str, list[Machine]] = {}
    for kind in KINDS:
        if kind == "asg-termination":
            chosen[kind] = bench.cluster.node_group[:per_kind]
        else:
            chosen[kind] = [m for _, m in zip(range(per_kind), karpenter, strict=False)]
    return chosen


def requests_per_kind(bench: Bench, per_kind: int, batch_size: int = 10) -> dict[str, Any]:
    """For each kind, ``per_kind`` events in SQS batches, one invocation at a time: the
    emulator's request counts (reset between kinds) and the AWS calls of every batch."""
    pipeline = bench.pipeline()
    results: dict[str, Any] = {}
    for kind, machines in _kind_machines(bench, per_kind).items():
        if not machines:
            continue
        bench.emulator.reset_counts()
        log = DecisionLog()
        per_batch: list[Counter[str]] = []
        failures = 0
        for event, _chunk in sqs_batches(kind, machines, batch_size):
            before = bench.aws.snapshot()
            response = _invoke(pipeline, event, log)
            failures += len(response.get("batchItemFailures", []))
            per_batch.append(bench.aws.snapshot() - before)
        events = len(machines)
        by_verb = Counter(bench.emulator.requests)
        by_kind_verb = Counter(
            {
                f"{verb} {resource}": n
                for (verb, resource), n in bench.emulator.requests_by_resource.items()
            }
        )
        total_aws: Counter[str] = sum(per_batch, Counter())
        results[kind] = {
            "events": events,
            "batches": len(per_batch),
            "outcomes": dict(log.outcomes),
            "batch_item_failures": failures,
            "errors": log.errors[:5],
            "k8s_requests_per_event": round(sum(by_verb.values()) / events, 2),
            "k8s_by_verb_per_event": {k: round(v / events, 2) for k, v in sorted(by_verb.items())},
            "k8s_by_resource_per_event": {
                k: round(v / events, 2) for k, v in sorted(by_kind_verb.items())
            },
            "aws_calls_per_batch": {
                k: round(v / len(per_batch), 2) for k, v in sorted(total_aws.items())
            },
            "aws_calls_per_batch_total": round(sum(total_aws.values()) / len(per_batch), 2),
        }
    return results


# --- the storm ----------------------------------------------------------------------------


@dataclass
class Wave:
    machines: list[Machine]
    wall: float = 0.0
    receipt_to_tainted: list[float] = field(default_factory=list)
    start_to_tainted: list[float] = field(default_factory=list)
    batch_seconds: list[float] = field(default_factory=list)
    tainted: int = 0
    failures: int = 0
    k8s_requests: int = 0


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def _run_wave(
    bench: Bench,
    pipelines: list[Pipeline],
    machines: list[Machine],
    log: DecisionLog,
    emf: EmfCount,
) -> Wave:
    wave = Wave(machines)
    batches = sqs_batches("spot-interruption", machines, 10)
    work: queue.Queue[int] = queue.Queue()
    for index in range(len(batches)):
        work.put(index)
    receipts: dict[int, float] = {}
    lock = threading.Lock()

    def invocation(pipeline: Pipeline) -> None:
        while True:
            try:
                index = work.get_nowait()
            except queue.Empty:
                return
            started = time.perf_counter()
            with lock:
                receipts[index] = started
            response = _invoke(pipeline, batches[index][0], log, emf)
            with lock:
                wave.batch_seconds.append(time.perf_counter() - started)
                wave.failures += len(response.get("batchItemFailures", []))

    bench.emulator.reset_counts()
    threads = [
        threading.Thread(target=invocation, args=(p,), name=f"invocation-{i}")
        for i, p in enumerate(pipelines)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wave.wall = time.perf_counter() - start

    # When the taint-and-cordon patch of each node was applied by the API server.
    patched: dict[str, float] = {}
    for (verb, _group, resource, _ns, name), (
        arrived,
        answered,
    ) in bench.emulator.timed_request_log():
        if verb == "patch" and resource == "nodes" and name not in patched:
            patched[name] = answered if answered is not None else arrived
    wave.k8s_requests = len(bench.emulator.request_log)
    nodes = {o["metadata"]["name"]: o for o in bench.emulator.objects("Node")}
    key = taint_key(Kind.SPOT_INTERRUPTION)
    for index, (_event, chunk) in enumerate(batches):
        for machine in chunk:
            node = nodes.get(machine.node_name) or {}
            spec = node.get("spec", {})
            done = spec.get("unschedulable") and any(
                t.get("key") == key for t in spec.get("taints") or []
            )
            if done and machine.node_name in patched:
                wave.tainted += 1
                wave.receipt_to_tainted.append(patched[machine.node_name] - receipts[index])
                wave.start_to_tainted.append(patched[machine.node_name] - start)
    return wave


def storm(bench: Bench, events: int, concurrency: int = 10) -> dict[str, Any]:
    """``events`` Spot interruptions, SQS batches of 10, ``concurrency`` invocations at once
    (threads, each with its own pipeline and clients, like separate Lambda containers).

    A Spot warning comes once per instance, so a cluster with fewer Karpenter nodes than
    ``events`` takes the storm in equal waves, restored between them (as if Karpenter had
    replaced every node); times and rates add up over the waves."""
    available = len(bench.cluster.karpenter)
    waves_needed = max(1, math.ceil(events / available))
    sizes = [
        events // waves_needed + (1 if i < events % waves_needed else 0)
        for i in range(waves_needed)
    ]
    pipelines = [bench.pipeline(f"lifeboat-bench-{i}") for i in range(concurrency)]
    log = DecisionLog()
    emf = EmfCount()
    waves = []
    for number, size in enumerate(sizes):
        if number:
            bench.restore()
        waves.append(_run_wave(bench, pipelines, bench.cluster.karpenter[:size], log, emf))
    wall = sum(w.wall for w in waves)
    receipt = [x for w in waves for x in w.receipt_to_tainted]
    from_start = [x for w in waves for x in w.start_to_tainted]
    batch_seconds = [x for w in waves for x in w.batch_seconds]
    k8s = sum(w.k8s_requests for w in waves)
    return {
        "nodes": len(bench.cluster.machines),
        "events": events,
        "waves": len(waves),
        "concurrency": concurrency,
        "directory": bench.endpoints.directory,
        "ledger": bench.endpoints.ledger,
        "latency_ms": round(bench.emulator.latency * 1000, 1),
        "wall_seconds": round(wall, 3),
        "events_per_second": round(events / wall, 1),
        "per_event_ms": round(wall / events * 1000, 3),
        "tainted_and_cordoned": sum(w.tainted for w in waves),
        "batch_item_failures": sum(w.failures for w in waves),
        "outcomes": dict(log.outcomes),
        "errors": log.errors[:5],
        "k8s_requests_per_event": round(k8s / events, 2),
        "receipt_to_tainted_ms": _summary_ms(receipt),
        "storm_start_to_tainted_ms": _summary_ms(from_start),
        "invocation_ms": _summary_ms(batch_seconds),
        # Before: about 7 EMF documents per event.
        "emf_documents_per_batch": round(statistics.mean(emf.documents), 2),
        "emf_dimension_groups_per_batch": round(statistics.mean(emf.groups), 2),
        "emf_documents_per_dimension_group": round(sum(emf.documents) / sum(emf.groups), 3),
    }


def _summary_ms(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    return {
        "p50": round(statistics.median(values) * 1000, 1),
        "p99": round(_percentile(values, 99) * 1000, 1),
        "max": round(max(values) * 1000, 1),
    }

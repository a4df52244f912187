"""Many clusters at once: one queue carrying Spot warnings for 50 clusters (20 each), batches
of 10, 10 concurrent invocations, 10 ms of latency per Kubernetes request.

Laid out as production is. Each of the 10 concurrent invocations is its own process (a
Lambda execution environment is one: its own interpreter, its own lock on it), taking batch
after batch from the queue as an environment does, with its own pipeline and its
own ``lifeboat.runtime.service.EksClusters``, whose per-cluster client is made on first use behind a
simulated ``eks:DescribeCluster`` of 50 ms, so first contact with many clusters is part of
what is measured. The clusters' API servers (one emulator each) run in other processes, 50
clusters a process: an API server's work is not the function's. All share this machine's
cores, which a fleet of Lambda environments would not. Each process has started (its
imports done, and with SnapStart its snapshot hooks run) before the first batch is taken:
what is measured is the storm, not the environments' start-up (``bench.coldstart`` and
``bench.first_message`` measure that).

The queue interleaves the clusters (as warnings for a fleet arrive); receipt is the moment an
invocation takes the batch, tainted the moment the cluster's API server applied the
taint-and-cordon patch (``time.perf_counter()``: one monotonic clock for every process).
"""

from __future__ import annotations

import base64
import math
import multiprocessing
import os
import statistics
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from queue import Empty
from typing import Any

from bench.cluster import Cluster, Machine, build_cluster
from bench.events import sqs_batches
from bench.harness import LambdaContext
from bench.scenarios import DecisionLog, NullMetrics
from lifeboat.aws.discovery import ClusterCatalog
from lifeboat.flow.pipeline import Pipeline
from lifeboat.kube.eks_auth import ClusterInfo
from lifeboat.kube.rest import RestClient
from lifeboat.marks.node_marks import taint_key
from lifeboat.model.instances import InstanceInfo, StaticInstanceDirectory
from lifeboat.model.ledger import Ledger, MemoryLedger
from lifeboat.model.notice import Kind
from lifeboat.model.settings import Settings
from lifeboat.runtime import snapstart
from lifeboat.runtime.handler import handle_batch
from lifeboat.runtime.service import BATCH_WORKERS, EksClusters, Service, utc_now

DESCRIBE_CLUSTER_SECONDS = 0.05
CLUSTERS_PER_SERVER_PROCESS = 50
# The tag the discovered fleet's clusters carry (``many_clusters(discovered=True)``).
DISCOVERY_TAG = "lifeboat.dev/managed"
# Processes start by importing what they run (spawn: nothing is inherited half-made).
_CONTEXT = multiprocessing.get_context("spawn")
# How long a process of the fleet may take to start or to finish before the bench gives up.
_PATIENCE_SECONDS = 600.0

Batch = tuple[dict[str, Any], list[tuple[str, str]]]  # the SQS event; (cluster, node) per record


class EmulatedEksAuth:
    """Stands in for ``lifeboat.kube.eks_auth.EksAuth``: a client per cluster, made on first use
    after a simulated DescribeCluster (the real one serialises per cluster, not globally)."""

    def __init__(self, urls: dict[str, str]) -> None:
        self._urls = urls
        self._clients: dict[str, RestClient] = {}
        self._locks = {name: threading.Lock() for name in urls}

    def api_client(self, cluster: str) -> RestClient:
        """The client ``EksAuth`` makes (the REST layer, no ``ApiClient``), for the emulator."""
        from kubernetes.client.configuration import Configuration

        with self._locks[cluster]:
            if cluster not in self._clients:
                time.sleep(DESCRIBE_CLUSTER_SECONDS)
                self._clients[cluster] = RestClient(Configuration(host=self._urls[cluster]))
            return self._clients[cluster]

    def remember(self, info: ClusterInfo) -> None:
        """What discovery described (``EksAuth.remember``): the client needs no describe."""
        from kubernetes.client.configuration import Configuration

        with self._locks[info.name]:
            if info.name not in self._clients:
                self._clients[info.name] = RestClient(Configuration(host=info.endpoint))

    def forget(self, cluster: str) -> None:
        with self._locks[cluster]:
            self._clients.pop(cluster, None)

    def forget_tokens(self) -> None:
        pass  # no tokens: the emulators do not authenticate

    def close_connections(self) -> None:
        for api_client in self._clients.values():
            api_client.rest_client.pool_manager.clear()


class _NotFound(Exception):
    pass


class EmulatedEks:
    """Stands in for the EKS client discovery uses (``lifeboat.aws.discovery``): every cluster of
    the fleet listed (100 a page, as ListClusters) and tagged, each DescribeCluster taking
    :data:`DESCRIBE_CLUSTER_SECONDS`."""

    class exceptions:  # botocore's spelling: client.exceptions.ResourceNotFoundException
        ResourceNotFoundException = _NotFound

    def __init__(self, urls: dict[str, str]) -> None:
        self._urls = urls

    def describe_cluster(self, *, name: str) -> dict[str, Any]:
        time.sleep(DESCRIBE_CLUSTER_SECONDS)
        if name not in self._urls:
            raise _NotFound(name)
        pem = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nbench\n").decode()
        return {
            "cluster": {
                "name": name,
                "endpoint": self._urls[name],
                "certificateAuthority": {"data": pem},
                "tags": {DISCOVERY_TAG: "true"},
            }
        }

    def get_paginator(self, operation: str) -> Any:
        assert operation == "list_clusters"
        names = sorted(self._urls)

        class Pages:
            def paginate(self) -> Any:
                return ({"clusters": names[i : i + 100]} for i in range(0, len(names), 100))

        return Pages()


@dataclass(frozen=True)
class Shape:
    """Each cluster's make-up. The fleet's default: a few nodes more than it has warnings, two
    pools; ``bench.runner`` also storms one large cluster this way (:func:`one_cluster`)."""

    nodes: int | None = None  # None: the warnings per cluster and 2
    pools: int = 2
    pods_per_node: int = 2
    asg_nodes: int = 0
    seed: int | None = None  # None: the cluster's index (clusters of one fleet differ)


def _names(clusters: int) -> list[str]:
    return [f"cluster-{i:02d}" for i in range(clusters)]


def _fleet(
    clusters: int, per_cluster: int, shard: range | None = None, shape: Shape = Shape()
) -> dict[str, Cluster]:
    """The same fleet wherever it is built: the seeds fix every id and name. ``shard``: only
    the clusters of these indices."""
    names = _names(clusters)
    return {
        names[i]: build_cluster(
            shape.nodes if shape.nodes is not None else per_cluster + 2,
            pools=shape.pools,
            pods_per_node=shape.pods_per_node,
            asg_nodes=shape.asg_nodes,
            seed=shape.seed if shape.seed is not None else i,
        )
        for i in shard or range(clusters)
    }


def _shards(clusters: int) -> list[range]:
    """The clusters each API servers' process serves, :data:`CLUSTERS_PER_SERVER_PROCESS` at
    most: real API servers share nothing, and one interpreter serving hundreds of them (and
    a keep-alive connection, so a thread, per environment and cluster) would measure its own
    lock rather than Lifeboat."""
    step = CLUSTERS_PER_SERVER_PROCESS
    return [range(i, min(i + step, clusters)) for i in range(0, clusters, step)]


def _directory(fleet: dict[str, Cluster]) -> list[InstanceInfo]:
    """What DescribeInstances would say: each machine, in its own cluster."""
    return [
        replace(m.info(), cluster=name) for name, cluster in fleet.items() for m in cluster.machines
    ]


def _interleaved(fleet: dict[str, Cluster], per_cluster: int) -> list[tuple[str, Machine]]:
    """Round-robin over the clusters: warning 1 of every cluster, then warning 2, ..."""
    chosen = {name: c.karpenter[:per_cluster] for name, c in fleet.items()}
    return [
        (name, machines[i])
        for i in range(per_cluster)
        for name, machines in chosen.items()
        if i < len(machines)
    ]


def _serve_api_servers(
    conn: Connection,
    clusters: int,
    per_cluster: int,
    latency_ms: float,
    shard: range,
    shape: Shape = Shape(),
) -> None:
    """The API servers' process: an emulator per cluster until told to report, then, per
    cluster, when each node's first patch was answered and which nodes carry the taint."""
    from kubemu import Emulator
    from kubemu.validation import compile_validators

    compile_validators()  # as a long-running API server would have them
    key = taint_key(Kind.SPOT_INTERRUPTION)
    with ExitStack() as stack:
        emulators = {
            name: stack.enter_context(Emulator(c.objects, latency=latency_ms / 1000))
            for name, c in _fleet(clusters, per_cluster, shard, shape).items()
        }
        conn.send({name: emulator.url for name, emulator in emulators.items()})
        try:
            conn.recv()
        except EOFError:  # the bench gave up: nobody to report to
            return
        served: dict[str, tuple[dict[str, float], set[str]]] = {}
        for name, emulator in emulators.items():
            patched: dict[str, float] = {}
            for (verb, _g, resource, _ns, node), (
                arrived,
                answered,
            ) in emulator.timed_request_log():
                if verb == "patch" and resource == "nodes" and node not in patched:
                    patched[node] = answered if answered is not None else arrived
            tainted = {  # tainted and cordoned, as the threads storm counts them
                o["metadata"]["name"]
                for o in emulator.objects("Node")
                if o["spec"].get("unschedulable")
                and any(t.get("key") == key for t in o["spec"].get("taints") or [])
            }
            served[name] = (patched, tainted)
        conn.send(served)


def _invocation(
    urls: dict[str, str],
    infos: list[InstanceInfo],
    batches: list[Batch],
    work: Any,
    ready: Any,
    go: Any,
    results: Any,
    restored: bool,
    discovered: bool = False,
    ledger: str = "memory",
) -> None:
    """One Lambda environment: takes batches from the queue until it is empty.

    ``ledger``: "memory", or "dynamodb": Powertools' idempotency on ``bench.dynamodb``'s
    table, a round trip away, as the stack runs it (each environment has its own table here:
    the storm's warnings are all distinct, so no write meets another environment's).

    ``restored``: started as the stack runs it, from a SnapStart snapshot: the service's
    ``before_snapshot`` ran (every cluster described, its client made), then
    ``after_restore`` (tokens forgotten, pooled connections closed). Otherwise initialised
    without SnapStart: each cluster is described on its first warning.

    ``discovered``: no cluster is named; each is served by its tag (``lifeboat.aws.discovery``),
    found by ListClusters and DescribeCluster (:class:`EmulatedEks`)."""
    settings = Settings(clusters=tuple(urls))
    the_ledger, table = _ledger(ledger)
    auth = EmulatedEksAuth(urls)
    clusters = EksClusters(settings, auth)  # type: ignore[arg-type]
    catalog = None
    if discovered:
        settings = Settings(cluster_tag_key=DISCOVERY_TAG)
        clusters = EksClusters(settings, auth)  # type: ignore[arg-type]
        catalog = ClusterCatalog(
            EmulatedEks(urls),
            tag_key=DISCOVERY_TAG,
            on_described=auth.remember,
            on_dropped=clusters.forget,
        )
        clusters.catalog = catalog
    pipeline = Pipeline(
        clusters=clusters,
        directory=StaticInstanceDirectory(infos),
        settings=settings,
        clock=utc_now,
        ledger=the_ledger,
        workers=BATCH_WORKERS,
        scope=catalog,
    )
    if restored:
        service = Service(pipeline, settings, clusters=clusters)
        snapstart.before_snapshot(service)
        snapstart.after_restore(service)
    log = DecisionLog()
    receipts: dict[int, float] = {}
    invocation_seconds: list[float] = []
    failures = 0
    before = (catalog.calls.list_clusters, catalog.calls.describe_cluster) if catalog else (0, 0)
    ready.put(None)
    go.wait()
    register = getattr(pipeline.ledger, "register_lambda_context", None)
    while (index := work.get()) is not None:
        receipts[index] = time.perf_counter()
        context = LambdaContext()
        if register is not None:  # as functions/interruption/app.py does each invocation
            register(context)
        response = handle_batch(
            batches[index][0], context, pipeline, metrics=NullMetrics(), logger=log
        )
        failures += len(response.get("batchItemFailures", []))
        invocation_seconds.append(time.perf_counter() - receipts[index])
    # Discovery calls: at the snapshot (once per published version), and during the storm.
    calls = {
        "snapshot_list_pages": before[0],
        "snapshot_describes": before[1],
        "storm_list_pages": (catalog.calls.list_clusters - before[0]) if catalog else 0,
        "storm_describes": (catalog.calls.describe_cluster - before[1]) if catalog else 0,
    }
    ledger_requests = table.requests if table is not None else 0
    results.put(
        (receipts, failures, dict(log.outcomes), calls, invocation_seconds, ledger_requests)
    )


def _ledger(kind: str) -> tuple[Ledger, Any]:
    """The environment's ledger, and its DynamoDB table (None in memory), whose request
    count says the ledger was written to."""
    if kind == "memory":
        return MemoryLedger(), None
    if kind != "dynamodb":
        raise ValueError(f"unknown ledger {kind!r}")
    from bench.dynamodb import DynamoDbTable
    from bench.harness import AWS_ENV, IDEMPOTENCY_TABLE
    from lifeboat.aws.idempotency import PowertoolsLedger

    os.environ.update(AWS_ENV)  # dummy credentials: botocore signs, nothing leaves
    table = DynamoDbTable(IDEMPOTENCY_TABLE)
    return PowertoolsLedger(IDEMPOTENCY_TABLE, boto3_client=table.client()), table


def one_cluster(
    nodes: int,
    warnings: int,
    concurrency: int = 10,
    latency_ms: float = 10.0,
    *,
    ledger: str = "memory",
    pools: int = 20,
    pods_per_node: int = 3,
) -> dict[str, Any]:
    """The burst storm of ``bench.scenarios.storm`` (``warnings`` Spot warnings at once on
    one cluster of ``nodes``, batches of 10), with the fleet's layout: each of the
    ``concurrency`` invocations its own process, as a Lambda environment is, restored from
    a SnapStart snapshot as the stack deploys them, and the API server in another. The
    storm's cluster shape (20 pools, 3 pods a node, 10 node-group nodes; seed 7)."""
    shape = Shape(nodes=nodes, pools=pools, pods_per_node=pods_per_node, asg_nodes=10, seed=7)
    result = many_clusters(1, warnings, concurrency, latency_ms, shape=shape, ledger=ledger)
    return {**result, "nodes": nodes, "ledger": ledger}


def many_clusters(
    clusters: int = 50,
    per_cluster: int = 20,
    concurrency: int = 10,
    latency_ms: float = 10.0,
    *,
    restored: bool = True,
    discovered: bool = False,
    shape: Shape = Shape(),
    ledger: str = "memory",
) -> dict[str, Any]:
    """``restored``: the invocations' environments start from a SnapStart snapshot, as the
    stack deploys them (``SnapStart: ApplyOn: PublishedVersions``); False: initialised without
    SnapStart, so each describes a cluster on its first warning for it."""
    names = _names(clusters)
    fleet = _fleet(clusters, per_cluster, shape=shape)
    order = _interleaved(fleet, per_cluster)
    batches: list[Batch] = []
    for start in range(0, len(order), 10):
        chunk = order[start : start + 10]
        [(event, _)] = sqs_batches("spot-interruption", [m for _, m in chunk], 10)
        batches.append((event, [(name, m.node_name) for name, m in chunk]))

    pipes = [_CONTEXT.Pipe() for _ in _shards(clusters)]
    servers = [
        _CONTEXT.Process(
            target=_serve_api_servers,
            args=(theirs, clusters, per_cluster, latency_ms, shard, shape),
        )
        for (theirs, _), shard in zip(pipes, _shards(clusters), strict=True)
    ]
    for server in servers:
        server.start()
    invocations: list[BaseProcess] = []
    try:
        urls: dict[str, str] = {}
        for _, ours in pipes:
            if not ours.poll(_PATIENCE_SECONDS):
                raise RuntimeError("an API servers' process did not start")
            urls.update(ours.recv())
        work, ready, results, go = (
            _CONTEXT.Queue(),
            _CONTEXT.Queue(),
            _CONTEXT.Queue(),
            _CONTEXT.Event(),
        )
        for index in range(len(batches)):
            work.put(index)
        for _ in range(concurrency):
            work.put(None)  # one end mark per invocation
        invocations[:] = [
            _CONTEXT.Process(
                target=_invocation,
                args=(
                    urls,
                    _directory(fleet),
                    batches,
                    work,
                    ready,
                    go,
                    results,
                    restored,
                    discovered,
                    ledger,
                ),
            )
            for _ in range(concurrency)
        ]
        for process in invocations:
            process.start()
        for _ in invocations:
            _take(ready, invocations)
        started = time.perf_counter()
        go.set()
        receipts: dict[int, float] = {}
        failures = 0
        outcomes: Counter[str] = Counter()
        calls: Counter[str] = Counter()
        invocation_seconds: list[float] = []
        ledger_requests = 0
        for _ in invocations:
            theirs, failed, seen, called, durations, requests = _take(results, invocations)
            receipts.update(theirs)
            failures += failed
            outcomes.update(seen)
            calls.update(called)
            invocation_seconds += durations
            ledger_requests += requests
        wall = time.perf_counter() - started
        for process in invocations:
            process.join(_PATIENCE_SECONDS)
        served: dict[str, tuple[dict[str, float], set[str]]] = {}
        for _, ours in pipes:
            ours.send("report")
            served.update(ours.recv())
    finally:  # on an error too: nothing of the fleet is left running
        for process in invocations:
            if process.is_alive():
                process.kill()
            process.join(_PATIENCE_SECONDS)
        for _, ours in pipes:
            ours.close()  # an API servers' process stops on it if it was still waiting
        for server in servers:
            server.join(_PATIENCE_SECONDS)
            if server.is_alive():
                server.kill()

    per_cluster_latency: dict[str, list[float]] = {name: [] for name in names}
    from_start: list[float] = []
    for index, (_event, records) in enumerate(batches):
        for cluster_name, node in records:
            patched, tainted = served[cluster_name]
            if node in tainted:
                per_cluster_latency[cluster_name].append(patched[node] - receipts[index])
                from_start.append(patched[node] - started)
    everything = [x for values in per_cluster_latency.values() for x in values]
    worst = {
        name: round(max(values) * 1000, 1) if values else None
        for name, values in per_cluster_latency.items()
    }
    tainted_per_cluster = {name: len(v) for name, v in per_cluster_latency.items()}
    return {
        "clusters": clusters,
        "warnings_per_cluster": per_cluster,
        "events": len(order),
        "concurrency": concurrency,
        "latency_ms": latency_ms,
        "environments": (
            "restored from a SnapStart snapshot"
            if restored
            else "initialised without SnapStart, clusters described on first use"
        ),
        "wall_seconds": round(wall, 2),
        "tainted": len(everything),
        "batch_item_failures": failures,
        "outcomes": dict(outcomes),
        "receipt_to_tainted_ms": _summary_ms(everything),
        # What receipt -> tainted does not see: a longer invocation (the ledger's round trips
        # come after the taints) takes its next batch later.
        "storm_start_to_tainted_ms": _summary_ms(from_start),
        "invocation_ms": _summary_ms(invocation_seconds),
        # Requests the environments' DynamoDB tables answered (0 with the ledger in memory):
        # two a warning (Powertools' PutItem and UpdateItem) when the ledger did its work.
        "ledger_requests": ledger_requests,
        # Starvation shows as one cluster's worst far above the others', or untainted nodes.
        "worst_cluster_max_ms": max((v for v in worst.values() if v is not None), default=None),
        "best_cluster_max_ms": min((v for v in worst.values() if v is not None), default=None),
        "clusters_fully_tainted": sum(1 for n in tainted_per_cluster.values() if n == per_cluster),
        # Summed over the environments (discovered only: named clusters are not listed).
        "discovery_calls": dict(calls) if discovered else None,
    }


def _take(queue: Any, processes: list[BaseProcess]) -> Any:
    """The next item of ``queue``; an error as soon as one of ``processes`` died failing,
    or after the bench's patience, rather than a wait for an item that never comes."""
    deadline = time.monotonic() + _PATIENCE_SECONDS
    while time.monotonic() < deadline:
        try:
            return queue.get(timeout=1)
        except Empty:
            failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            if failed:
                raise RuntimeError(f"an invocation's process failed (exit {failed[0]})") from None
    raise RuntimeError("the fleet's invocations did not answer in time")


def _summary_ms(values: list[float]) -> dict[str, float | None]:
    return {
        "p50": round(statistics.median(values) * 1000, 1) if values else None,
        "p99": round(_percentile(values, 99) * 1000, 1) if values else None,
        "max": round(max(values) * 1000, 1) if values else None,
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]

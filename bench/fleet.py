"""Many clusters at once: one queue carrying Spot warnings for 50 clusters (20 each), batches
of 10, 10 concurrent invocations, 10 ms of latency per Kubernetes request.

Each cluster is its own API emulator. Each invocation is a thread with its own pipeline and
its own ``lifeboat.service.EksClusters`` (as each Lambda environment has), whose
per-cluster client is made on first use behind a simulated ``eks:DescribeCluster`` of 50 ms,
so first contact with many clusters is part of what is measured. The queue interleaves the
clusters (as warnings for a fleet arrive); receipt is the moment an invocation takes the
batch, tainted the moment the cluster's API server applied the taint-and-cordon patch.
"""

from __future__ import annotations

import math
import queue
import statistics
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

from bench.cluster import Cluster, Machine, build_cluster
from bench.events import sqs_batches
from bench.harness import LambdaContext
from bench.scenarios import DecisionLog, NullMetrics
from kubemu import Emulator
from lifeboat.events.notice import Kind
from lifeboat.handler import handle_batch
from lifeboat.instances import StaticInstanceDirectory
from lifeboat.ledger import MemoryLedger
from lifeboat.nodes import taint_key
from lifeboat.pipeline import Pipeline
from lifeboat.service import BATCH_WORKERS, EksClusters, utc_now
from lifeboat.settings import Settings

DESCRIBE_CLUSTER_SECONDS = 0.05


class EmulatedEksAuth:
    """Stands in for ``lifeboat.eks_auth.EksAuth``: a client per cluster, made on first use
    after a simulated DescribeCluster (the real one serialises per cluster, not globally)."""

    def __init__(self, emulators: dict[str, Emulator]) -> None:
        self._emulators = emulators
        self._clients: dict[str, Any] = {}
        self._locks = {name: threading.Lock() for name in emulators}

    def api_client(self, cluster: str) -> Any:
        with self._locks[cluster]:
            if cluster not in self._clients:
                time.sleep(DESCRIBE_CLUSTER_SECONDS)
                self._clients[cluster] = self._emulators[cluster].api_client()
            return self._clients[cluster]

    def forget_tokens(self) -> None:
        pass

    def close_connections(self) -> None:
        pass


@dataclass
class Fleet:
    clusters: dict[str, Cluster]
    emulators: dict[str, Emulator]


def _directory(fleet: Fleet) -> StaticInstanceDirectory:
    """What DescribeInstances would say: each machine, in its own cluster."""
    return StaticInstanceDirectory(
        replace(m.info(), cluster=name)
        for name, cluster in fleet.clusters.items()
        for m in cluster.machines
    )


def _interleaved(fleet: Fleet, per_cluster: int) -> list[tuple[str, Machine]]:
    """Round-robin over the clusters: warning 1 of every cluster, then warning 2, ..."""
    chosen = {name: c.karpenter[:per_cluster] for name, c in fleet.clusters.items()}
    return [
        (name, machines[i])
        for i in range(per_cluster)
        for name, machines in chosen.items()
        if i < len(machines)
    ]


def many_clusters(
    clusters: int = 50,
    per_cluster: int = 20,
    concurrency: int = 10,
    latency_ms: float = 10.0,
) -> dict[str, Any]:
    names = [f"cluster-{i:02d}" for i in range(clusters)]
    built = {
        name: build_cluster(per_cluster + 2, pools=2, pods_per_node=2, asg_nodes=0, seed=i)
        for i, name in enumerate(names)
    }
    with ExitStack() as stack:
        emulators = {
            name: stack.enter_context(Emulator(c.objects, latency=latency_ms / 1000))
            for name, c in built.items()
        }
        fleet = Fleet(built, emulators)
        directory = _directory(fleet)
        settings = Settings(clusters=tuple(names))
        order = _interleaved(fleet, per_cluster)
        batches = []
        for start in range(0, len(order), 10):
            chunk = order[start : start + 10]
            [(event, _)] = sqs_batches("spot-interruption", [m for _, m in chunk], 10)
            batches.append((event, chunk))
        work: queue.Queue[int] = queue.Queue()
        for index in range(len(batches)):
            work.put(index)
        receipts: dict[int, float] = {}
        lock = threading.Lock()
        log = DecisionLog()
        failures = 0

        def invocation() -> None:
            nonlocal failures
            pipeline = Pipeline(
                clusters=EksClusters(settings, EmulatedEksAuth(emulators)),  # type: ignore[arg-type]
                directory=directory,
                settings=settings,
                clock=utc_now,
                ledger=MemoryLedger(),
                workers=BATCH_WORKERS,
            )
            while True:
                try:
                    index = work.get_nowait()
                except queue.Empty:
                    return
                with lock:
                    receipts[index] = time.perf_counter()
                response = handle_batch(
                    batches[index][0], LambdaContext(), pipeline, metrics=NullMetrics(), logger=log
                )
                with lock:
                    failures += len(response.get("batchItemFailures", []))

        threads = [threading.Thread(target=invocation) for _ in range(concurrency)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started

        key = taint_key(Kind.SPOT_INTERRUPTION)
        per_cluster_latency: dict[str, list[float]] = {name: [] for name in names}
        for name, emulator in emulators.items():
            patched: dict[str, float] = {}
            for (verb, _g, resource, _ns, node), (
                arrived,
                answered,
            ) in emulator.timed_request_log():
                if verb == "patch" and resource == "nodes" and node not in patched:
                    patched[node] = answered if answered is not None else arrived
            tainted = {
                o["metadata"]["name"]
                for o in emulator.objects("Node")
                if any(t.get("key") == key for t in o["spec"].get("taints") or [])
            }
            for index, (_event, chunk) in enumerate(batches):
                for cluster_name, machine in chunk:
                    if cluster_name == name and machine.node_name in tainted:
                        latency = patched[machine.node_name] - receipts[index]
                        per_cluster_latency[name].append(latency)
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
        "wall_seconds": round(wall, 2),
        "tainted": len(everything),
        "batch_item_failures": failures,
        "outcomes": dict(log.outcomes),
        "receipt_to_tainted_ms": {
            "p50": round(statistics.median(everything) * 1000, 1) if everything else None,
            "p99": round(_percentile(everything, 99) * 1000, 1) if everything else None,
            "max": round(max(everything) * 1000, 1) if everything else None,
        },
        # Starvation shows as one cluster's worst far above the others', or untainted nodes.
        "worst_cluster_max_ms": max((v for v in worst.values() if v is not None), default=None),
        "best_cluster_max_ms": min((v for v in worst.values() if v is not None), default=None),
        "clusters_fully_tainted": sum(1 for n in tainted_per_cluster.values() if n == per_cluster),
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]

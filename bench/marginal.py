"""The marginal cost of a Spot warning at two cluster sizes: the same number of warnings
handled one batch of 10 after another, by one pipeline, against a cluster of each size.

Cost is the process's CPU time per warning (Lifeboat and the emulator answering it, both in
this process), with what was built before the measure frozen out of cyclic garbage
collections (``kubemu.gcpause.heap_frozen``: the cluster's few million containers would
otherwise be rescanned by every full collection, a cost of the bench's heap, not of the
warning). The storm's milliseconds per event are not used for this: ten concurrent
invocations of ten threads each measure contention for one interpreter, and the two sizes
take their 1,000 events in different waves (3 of 333 at 500 nodes, one at 5,000), so their
ratio moved between 0.8 and 1.6 from run to run with the same code.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from bench.cluster import Cluster
from bench.events import sqs_batches
from bench.harness import LambdaContext
from bench.scenarios import DecisionLog, NullMetrics
from kubemu import Emulator
from kubemu.gcpause import heap_frozen
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import StaticInstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from lifeboat.runtime.service import utc_now


def cost_per_warning(cluster: Cluster, warnings: int = 300, latency: float = 0.0) -> dict[str, Any]:
    """CPU and wall milliseconds per Spot warning, ``warnings`` of them, against ``cluster``
    (a fresh emulator of it); every warning must end acted, with 6 requests or fewer (the
    NodeClaim is read for its pool)."""
    machines = cluster.karpenter[:warnings]
    with Emulator(cluster.objects, latency=latency) as emulator:
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client())),
            directory=StaticInstanceDirectory([m.info() for m in cluster.machines]),
            settings=Settings(clusters=("bench",)),
            clock=utc_now,
            ledger=MemoryLedger(),
        )
        batches = [event for event, _ in sqs_batches("spot-interruption", machines, 10)]
        log = DecisionLog()
        gc.collect()
        with heap_frozen():
            cpu, wall = time.process_time(), time.perf_counter()
            for event in batches:
                handle_batch(event, LambdaContext(), pipeline, metrics=NullMetrics(), logger=log)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        requests = len(emulator.request_log)
    if log.outcomes != {"acted": len(machines)}:
        raise RuntimeError(f"marginal cost: not every warning acted on: {dict(log.outcomes)}")
    return {
        "nodes": len(cluster.machines),
        "warnings": len(machines),
        "cpu_ms_per_warning": round(cpu / len(machines) * 1000, 3),
        "wall_ms_per_warning": round(wall / len(machines) * 1000, 3),
        "k8s_requests_per_warning": round(requests / len(machines), 2),
    }

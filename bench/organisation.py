"""A stack serving clusters it discovers by their tag (``lifeboat.aws.discovery``), at 50 and at
500 clusters: what grows with the number of clusters.

Three measures per size:

* **the storm** (``bench.fleet.many_clusters(discovered=True)``): 20 Spot warnings per
  cluster, 10 environments (processes), 10 ms per Kubernetes request, no cluster named:
  each found by ListClusters and DescribeCluster (50 ms each, simulated). p99 receipt to
  tainted, and the discovery calls made at the snapshot and during the storm;
* **memory per cached cluster client**: the real ``EksAuth`` holding N clusters (endpoint,
  CA, its ``RestClient`` and a minted token), ``tracemalloc``'s count of what stays
  allocated, divided by N;
* **discovery calls per minute at steady state**: a simulated hour (injected clock) of
  warnings spread at random over the clusters and the environments, each environment with
  its own ``ClusterCatalog`` (default TTL), counting ListClusters pages and DescribeCalls.
"""

from __future__ import annotations

import base64
import gc
import os
import random
import tracemalloc
from typing import Any

from bench import fleet
from lifeboat.aws.discovery import DEFAULT_TTL_SECONDS, ClusterCatalog
from lifeboat.kube.eks_auth import ClusterInfo

_PEM = "-----BEGIN CERTIFICATE-----\nbench\n-----END CERTIFICATE-----\n"


def client_memory(clusters: int) -> dict[str, Any]:
    """Bytes that stay allocated per cluster the real EksAuth holds a client and token for."""
    import boto3

    from lifeboat.kube.eks_auth import EksAuth

    for name, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}.items():
        os.environ.setdefault(name, value)
    session = boto3.Session(region_name="us-east-1")
    auth = EksAuth(session=session, region="us-east-1", eks_client=object())
    # One cluster first, so what is made once (the STS client, module state) is not counted.
    auth.remember(ClusterInfo("warm-up", "https://warm-up.example", _PEM))
    auth.api_client("warm-up")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for index in range(clusters):
        name = f"cluster-{index:03d}"
        auth.remember(ClusterInfo(name, f"https://{name}.eks.example", _PEM))
        auth.api_client(name)  # mints its token too
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(auth.cached_clusters()) == clusters + 1
    return {"clusters": clusters, "bytes_per_client": round((after - before) / clusters)}


class _CountingEks:
    """An EKS of ``clusters`` tagged clusters that answers at once (the clock is simulated)."""

    class exceptions:  # botocore's spelling: client.exceptions.ResourceNotFoundException
        ResourceNotFoundException = LookupError

    def __init__(self, names: list[str]) -> None:
        self._names = names
        self._ca = base64.b64encode(_PEM.encode()).decode()

    def describe_cluster(self, *, name: str) -> dict[str, Any]:
        return {
            "cluster": {
                "name": name,
                "endpoint": f"https://{name}.eks.example",
                "certificateAuthority": {"data": self._ca},
                "tags": {fleet.DISCOVERY_TAG: "true"},
            }
        }

    def get_paginator(self, operation: str) -> Any:
        names = self._names

        class Pages:
            def paginate(self) -> Any:
                return ({"clusters": names[i : i + 100]} for i in range(0, len(names), 100))

        return Pages()


def steady_state(
    clusters: int,
    environments: int = 10,
    warnings_per_cluster_per_hour: float = 20.0,
    minutes: int = 60,
    ttl: float = DEFAULT_TTL_SECONDS,
    seed: int = 26,
) -> dict[str, Any]:
    """Discovery calls a minute over a simulated hour, after the snapshot's full discovery
    (not counted: once per published version). Each warning goes to a random environment
    (as SQS hands batches out) about a random cluster."""
    names = [f"cluster-{i:03d}" for i in range(clusters)]
    eks = _CountingEks(names)
    now = [0.0]
    catalogs = [
        ClusterCatalog(eks, tag_key=fleet.DISCOVERY_TAG, ttl=ttl, clock=lambda: now[0])
        for _ in range(environments)
    ]
    for catalog in catalogs:
        catalog.refresh()
    start = [(c.calls.list_clusters, c.calls.describe_cluster) for c in catalogs]
    chance = random.Random(seed)
    per_minute = warnings_per_cluster_per_hour * clusters / 60
    warnings = 0
    for minute in range(minutes):
        count = int(per_minute) + (1 if chance.random() < per_minute % 1 else 0)
        for _ in range(count):
            now[0] = minute * 60 + chance.random() * 60
            assert chance.choice(catalogs).serves(chance.choice(names))
            warnings += 1
    lists = sum(c.calls.list_clusters - s[0] for c, s in zip(catalogs, start, strict=True))
    describes = sum(c.calls.describe_cluster - s[1] for c, s in zip(catalogs, start, strict=True))
    return {
        "clusters": clusters,
        "environments": environments,
        "warnings_per_minute": round(warnings / minutes, 1),
        "ttl_seconds": ttl,
        "describes_per_minute": round(describes / minutes, 1),
        "list_pages_per_minute": round(lists / minutes, 2),
        "describes_per_minute_bound": round(environments * clusters * 60 / ttl, 1),
    }


def organisation(
    sizes: tuple[int, ...] = (50, 500),
    warnings: int = 20,
    concurrency: int = 10,
    latency_ms: float = 10.0,
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for clusters in sizes:
        storm = fleet.many_clusters(clusters, warnings, concurrency, latency_ms, discovered=True)
        rows.append(
            {
                "clusters": clusters,
                "storm": storm,
                "memory": client_memory(clusters),
                "steady_state": steady_state(clusters, environments=concurrency),
            }
        )
    growth: dict[str, Any] = {}
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        growth = {
            "clusters": round(last["clusters"] / first["clusters"], 1),
            "p99_receipt_to_tainted": _ratio(
                last["storm"]["receipt_to_tainted_ms"]["p99"],
                first["storm"]["receipt_to_tainted_ms"]["p99"],
            ),
            "bytes_per_client": _ratio(
                last["memory"]["bytes_per_client"], first["memory"]["bytes_per_client"]
            ),
            "steady_describes_per_minute": _ratio(
                last["steady_state"]["describes_per_minute"],
                first["steady_state"]["describes_per_minute"],
            ),
        }
    return {"sizes": rows, "growth": growth}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 2)

"""Which EKS clusters this stack serves, found at run time by a tag on the cluster.

A cluster opts in by carrying the tag ``<key>=true`` (``LIFEBOAT_CLUSTER_TAG_KEY``, e.g.
``lifeboat.dev/managed``); the clusters named in ``LIFEBOAT_CLUSTERS`` are served as well, with
no call to EKS. One stack per account and region (a StackSet deploys it everywhere) then
serves every opted-in cluster there with no list typed by hand.

A warning's instance names its cluster (EC2 tags). Whether that cluster is served:

* **a name EKS does not list** here (an instance of a self-managed cluster, of another
  account's cluster, a forged name) is not served, at no cost: the account's cluster names
  (``eks:ListClusters``) are kept, and listed again on such a miss at most once every
  :data:`LIST_INTERVAL_SECONDS`. A flood of warnings about clusters no one knows costs at
  most two ``ListClusters`` a minute, whatever their number;
* **a listed cluster** is described (``eks:DescribeCluster``: its tags, and the endpoint and
  CA its client needs, handed to :class:`lifeboat.kube.eks_auth.EksAuth` so its first request does
  not describe it again), and the answer kept for ``ttl`` seconds: a cluster created a minute
  ago is served on its first warning, an untagged one costs one call per ``ttl`` however
  many warnings it has, and a removed tag stops the service within ``ttl``. The cost follows
  the clusters that have warnings, not all the clusters of the account;
* if EKS fails to answer (throttled, denied), an expired answer is used as it is; a cluster
  never described raises, so its message goes back to the queue and is tried again.

:meth:`ClusterCatalog.refresh` is the full discovery (``ListClusters`` and a ``DescribeCluster``
of each, a few at a time): run before a SnapStart snapshot so the snapshot holds every served
cluster's endpoint, and by ``make bench``.

The clock is injected (monotonic seconds) so tests move time by hand.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lifeboat.kube.eks_auth import ClusterInfo, decode_ca

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "LIST_INTERVAL_SECONDS",
    "TAG_VALUE",
    "ClusterCatalog",
    "ClusterNames",
    "DiscoveryCalls",
]

# The value that opts a cluster in; anything else (or no tag) does not.
TAG_VALUE = "true"
DEFAULT_TTL_SECONDS = 300.0
# A name EKS did not list is looked for again at most this often.
LIST_INTERVAL_SECONDS = 30.0
# Clusters described at once by a full discovery.
REFRESH_WORKERS = 8

Clock = Callable[[], float]

_log = logging.getLogger(__name__)


@dataclass
class DiscoveryCalls:
    """EKS calls made so far (for the bench and for tests)."""

    list_clusters: int = 0  # pages
    describe_cluster: int = 0


@dataclass(frozen=True)
class _Answer:
    served: bool
    checked_at: float
    info: ClusterInfo | None = None


class ClusterNames:
    """The account's cluster names (``eks:ListClusters``), listed again on a miss at most once
    per ``interval`` seconds: one caller lists, the others wait for its answer."""

    def __init__(self, eks: Any, clock: Clock, interval: float, calls: DiscoveryCalls) -> None:
        self._eks = eks
        self._clock = clock
        self._interval = interval
        self._calls = calls
        # The names as last listed, and when (None: never).
        self._names: frozenset[str] = frozenset()
        self._listed_at: float | None = None
        self._lock = threading.Lock()  # guards the names and the counter
        self._list_lock = threading.Lock()

    def list(self) -> list[str]:
        """``ListClusters``, every page; remembered for :meth:`listed`."""
        names: list[str] = []
        paginator = self._eks.get_paginator("list_clusters")
        for page in paginator.paginate():
            with self._lock:
                self._calls.list_clusters += 1
            names.extend(page.get("clusters", []))
        with self._lock:
            self._names = frozenset(names)
            self._listed_at = self._clock()
        return names

    def listed(self, cluster: str) -> bool:
        """Whether EKS lists ``cluster`` here, listing again if it did not and the list is
        older than the interval (one caller lists, the others wait for its answer)."""
        if cluster in self._names:
            return True
        with self._list_lock:
            if cluster in self._names:
                return True
            at = self._listed_at
            if at is not None and self._clock() - at < self._interval:
                return False
            return cluster in self.list()


class ClusterCatalog:
    """Whether a cluster is served: named, or tagged ``tag_key=true`` (see the module doc).

    ``on_described`` gets the endpoint and CA of each served cluster described;
    ``on_dropped`` the name of a cluster that was served and no longer is (its client and
    token can go). Safe to share between the threads of a batch.
    """

    def __init__(
        self,
        eks: Any,
        *,
        tag_key: str | None,
        named: Sequence[str] = (),
        ttl: float = DEFAULT_TTL_SECONDS,
        list_interval: float = LIST_INTERVAL_SECONDS,
        clock: Clock = time.monotonic,
        on_described: Callable[[ClusterInfo], None] | None = None,
        on_dropped: Callable[[str], None] | None = None,
    ) -> None:
        self._eks = eks
        self.tag_key = tag_key or None
        self._named = frozenset(named)
        self._ttl = ttl
        self._clock = clock
        self._on_described = on_described
        self._on_dropped = on_dropped
        self._answers: dict[str, _Answer] = {}
        self._lock = threading.Lock()  # guards the dictionaries, names and counters
        self._name_locks: dict[str, threading.Lock] = {}
        # When :meth:`serving` last ran the full discovery (None: never).
        self._refreshed_at: float | None = None
        self._refresh_lock = threading.Lock()
        self.calls = DiscoveryCalls()
        self._listing = ClusterNames(eks, clock, list_interval, self.calls)

    # -- asking ------------------------------------------------------------------------------

    def serves(self, cluster: str | None) -> bool:
        """Whether ``cluster`` is served now (may describe it: see the module doc)."""
        if cluster is None:
            return False
        if cluster in self._named:
            return True
        if self.tag_key is None:
            return False
        answer = self._answers.get(cluster)
        if answer is not None and self._fresh(answer):
            return answer.served
        with self._name_lock(cluster):
            answer = self._answers.get(cluster)
            if answer is not None and self._fresh(answer):  # another thread just asked
                return answer.served
            if not self._listing.listed(cluster):
                if answer is not None:  # deleted since: forget it
                    with self._lock:
                        self._answers.pop(cluster, None)
                    if answer.served:
                        self._dropped(cluster)
                return False
            try:
                return self._describe(cluster).served
            except Exception as error:
                if answer is None:
                    raise
                _log.warning(
                    "could not describe cluster %s again, keeping the last answer: %r",
                    cluster,
                    error,
                )
                return answer.served

    def serving(self) -> tuple[str, ...]:
        """Every cluster served now, for work that concerns each of them and no instance
        (the sweep's look at each cluster's marked nodes): the full discovery, at most once
        per ``ttl``, else what it found. ``ListClusters`` failing raises (the caller says
        so); a cluster that cannot be described is left out until it can be."""
        if self.tag_key is None:
            return self.served()
        with self._refresh_lock:
            at = self._refreshed_at
            if at is None or self._clock() - at >= self._ttl:
                self.refresh()
                self._refreshed_at = self._clock()
        return self.served()

    def served(self) -> tuple[str, ...]:
        """The clusters known to be served (named, or tagged when last described)."""
        with self._lock:
            tagged = {name for name, answer in self._answers.items() if answer.served}
        return tuple(sorted(self._named | tagged))

    def refresh(self) -> tuple[str, ...]:
        """Full discovery: every cluster of the account and region described now.

        A cluster that is no longer listed is forgotten (and dropped if it was served).
        Returns the served clusters."""
        if self.tag_key is None:
            return self.served()
        names = self._listing.list()

        def describe(name: str) -> None:
            with self._name_lock(name):
                try:
                    self._describe(name)
                except Exception as error:  # one broken cluster must not hide the others
                    _log.warning("could not describe cluster %s: %r", name, error)

        with ThreadPoolExecutor(max_workers=REFRESH_WORKERS) as pool:
            list(pool.map(describe, names))
        listed = set(names)
        with self._lock:
            gone = [name for name in self._answers if name not in listed]
            dropped = [name for name in gone if self._answers.pop(name).served]
        for name in dropped:
            self._dropped(name)
        return self.served()

    # -- inside ------------------------------------------------------------------------------

    def _fresh(self, answer: _Answer) -> bool:
        return self._clock() - answer.checked_at < self._ttl

    def _name_lock(self, cluster: str) -> threading.Lock:
        with self._lock:
            return self._name_locks.setdefault(cluster, threading.Lock())

    def _describe(self, cluster: str) -> _Answer:
        """Describe ``cluster`` and record the answer (the caller holds its name lock)."""
        with self._lock:
            self.calls.describe_cluster += 1
            before = self._answers.get(cluster)
        try:
            described = self._eks.describe_cluster(name=cluster)["cluster"]
        except self._eks.exceptions.ResourceNotFoundException:
            described = None
        tags = (described or {}).get("tags") or {}
        served = tags.get(self.tag_key or "") == TAG_VALUE
        info = _cluster_info(cluster, described) if served and described else None
        answer = _Answer(served=served, checked_at=self._clock(), info=info)
        with self._lock:
            self._answers[cluster] = answer
        if info is not None and self._on_described is not None:
            self._on_described(info)
        if before is not None and before.served and not served:
            self._dropped(cluster)
        return answer

    def _dropped(self, cluster: str) -> None:
        _log.info("cluster %s is no longer served (tag %s removed)", cluster, self.tag_key)
        if self._on_dropped is not None and cluster not in self._named:
            self._on_dropped(cluster)


def _cluster_info(name: str, described: dict[str, Any]) -> ClusterInfo | None:
    """The endpoint and CA of a described cluster; None while it has none (being created)."""
    endpoint = described.get("endpoint")
    ca = (described.get("certificateAuthority") or {}).get("data")
    if not endpoint or not ca:
        return None
    return ClusterInfo(name=name, endpoint=endpoint, ca_data=decode_ca(ca))

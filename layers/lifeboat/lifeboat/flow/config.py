"""What a pipeline is built with: the clusters' clients, the instance directory, the
settings, the clock and the seams (Auto Scaling, Scheduler, the ledger, EC2's statuses).

:class:`FlowConfig` holds them for every step of the flow (``read``, ``sweep_request``,
``notices``, ``carry``, ``wake``); ``lifeboat.flow.pipeline.Pipeline`` is built from it. The
steps read it when they run, never a copy, so a caller (a test) that changes a field of its
pipeline changes what the next message sees.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from lifeboat.aws.capacity_blocks import CapacityReservations
from lifeboat.aws.sweep import InstanceStatuses
from lifeboat.decide import Decision
from lifeboat.errors import BrokenInvariant
from lifeboat.flow.act import Actor, LifecycleActions
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceDirectory, ReservationDirectory
from lifeboat.model.ledger import Ledger
from lifeboat.model.notice import Notice
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import Wakeup, WakeupSink


class ClusterClients(Protocol):
    """The API of each managed cluster (``None``: the instance named no cluster)."""

    def kube(self, cluster: str | None) -> KubeApi: ...


class ClusterScope(Protocol):
    """Whether a cluster is this stack's to serve, found at run time (lifeboat.aws.discovery)."""

    def serves(self, cluster: str | None) -> bool: ...

    def serving(self) -> tuple[str, ...]:
        """Every cluster served now (the sweep looks at each one's marked nodes)."""
        ...


@dataclass(frozen=True)
class OneCluster:
    """Every instance is in the same cluster: replay, tests, single-cluster stacks."""

    api: KubeApi

    def kube(self, cluster: str | None) -> KubeApi:
        return self.api


@dataclass
class FlowConfig:
    """What every step of the flow reads: the clients, the settings, the clock."""

    clusters: ClusterClients
    directory: InstanceDirectory
    settings: Settings
    clock: Callable[[], datetime]
    lifecycle: LifecycleActions | None = None
    wakeups: WakeupSink | None = None
    ledger: Ledger | None = None
    drain_patience: float = 0.0
    # How the drain waits between rounds of PDB-blocked evictions (tests inject their own,
    # moving their clock).
    sleep: Callable[[float], None] = time.sleep
    # The clock a near deadline's retry window runs on (lifeboat.kube.client.retrying_for): the
    # one the clients' sleep moves.
    monotonic: Callable[[], float] = time.monotonic
    holder: str = "lifeboat"
    # Messages of a batch handled at once; 1 keeps replay's output in a stable order.
    workers: int = 1
    # Told of each decision about a notice, with the target it judged, before it is carried
    # out: ``lifeboat explain`` reads the cluster at that moment. Must not write.
    on_decision: Callable[[Notice, Target, Decision], None] | None = None
    # Instances one message acts on; the rest are handed on as remainders (lifeboat.flow.split).
    # None: every one (replay, where no function timeout applies).
    notices_per_message: int | None = None
    # Where a sweep request (lifeboat.aws.sweep) reads DescribeInstanceStatus; None: ignored.
    statuses: InstanceStatuses | None = None
    # Clusters served by their tag (lifeboat.aws.discovery); None: settings.clusters decide.
    scope: ClusterScope | None = None
    # The ARN of the stack's sweep schedule: the only sender of sweep requests obeyed
    # (lifeboat.aws.sweep.sweep_request_problem); None: not checked (replay, tests).
    sweep_schedule: str | None = None
    # Where an ending Capacity Block's instances are found (lifeboat.aws.capacity_blocks), and
    # where the sweep reads the capacity reservations; None: not looked up, not swept.
    reservations: ReservationDirectory | None = None
    capacity_reservations: CapacityReservations | None = None

    def actor(self, kube: KubeApi) -> Actor:
        """The actor (lifeboat.flow.act) on ``kube``, with this pipeline's seams."""
        return Actor(
            kube,
            self.settings,
            self.lifecycle,
            clock=self.clock,
            sleep=self.sleep,
            drain_patience=self.drain_patience,
        )

    def managed(self, cluster: str | None) -> frozenset[str] | None:
        """The served clusters triage needs to know of (None: the named ones decide). Asked
        here, before the pure triage: it may describe the cluster (lifeboat.aws.discovery)."""
        if self.scope is None:
            return None
        return (
            frozenset([cluster])
            if cluster is not None and self.scope.serves(cluster)
            else frozenset()
        )

    def served_clusters(self) -> tuple[str | None, ...]:
        """The clusters a sweep looks at: those named, and those found by their tag
        (lifeboat.aws.discovery); neither: the one cluster of replay and tests."""
        named = tuple(self.settings.clusters)
        if self.scope is not None:
            named = tuple(dict.fromkeys(named + self.scope.serving()))
        return named or (None,)

    def hand_on(self, later: Sequence[Wakeup]) -> None:
        """Schedule the wake-ups a message hands on (remainders, sweep parts)."""
        for wakeup in later:
            if self.wakeups is None:
                raise BrokenInvariant(
                    "FlowConfig.hand_on: self.wakeups is None (only split when there is a sink)"
                )
            self.wakeups.schedule(wakeup)

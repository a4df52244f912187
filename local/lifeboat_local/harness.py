"""The Lambda's pipeline as the operator tools run it: on a simulated clock, with Auto Scaling
recorded instead of called, and wake-ups and the idempotency ledger kept in memory.

``replay`` and ``explain`` both build their pipeline here, so what one shows the other does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from lifeboat.decide import Decision
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import InstanceDirectory, ReservationDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.notice import LifecycleHook, Notice
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import MemoryWakeups


@dataclass
class SimulatedClock:
    """The tools' "now": fixed unless ``replay --follow`` moves it to the next wake-up."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class RecordedLifecycle:
    """Stands in for Auto Scaling: remembers what would have been sent."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        self.calls.append(("complete", hook.instance_id, result))

    def heartbeat(self, hook: LifecycleHook) -> None:
        self.calls.append(("heartbeat", hook.instance_id, ""))


def local_pipeline(
    kube: KubeApi,
    directory: InstanceDirectory,
    settings: Settings,
    clock: SimulatedClock,
    wakeups: MemoryWakeups,
    on_decision: Callable[[Notice, Target, Decision], None] | None = None,
) -> Pipeline:
    """The Lambda's pipeline on one cluster, one message at a time (a stable order)."""
    return Pipeline(
        clusters=OneCluster(kube),
        directory=directory,
        settings=settings,
        clock=clock,
        lifecycle=RecordedLifecycle(),
        wakeups=wakeups,
        ledger=MemoryLedger(),
        on_decision=on_decision,
        # An ending Capacity Block's instances, as EC2 would find them: those the cluster file's
        # nodes say run in it (lifeboat_local.directory).
        reservations=directory if isinstance(directory, ReservationDirectory) else None,
    )

"""A cluster with its controllers simulated, the real pipeline, and a clock to move: what the
rotation tests drive. Everything talks to the emulator through the official client over
HTTP; the simulations (Karpenter, the workload controllers and the scheduler) write to the
emulator's store between two moves of the clock, as ``lifeboat replay --follow`` does."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.ledger import Ledger, MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.rotation import store
from lifeboat.rotation.model import Rotation
from lifeboat.wakeup.codec import MemoryWakeups, encode
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.karpenter_sim import KarpenterSimulation

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
ROTATION = EVENTS / "rotation"
# The sample's clock: Tuesday 14:05 UTC, inside NodePool general's weekday freeze.
START = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
LEGACY = ["ip-10-0-4-21.ec2.internal", "ip-10-0-4-22.ec2.internal", "ip-10-0-4-23.ec2.internal"]
ROTATION_TAINT = "lifeboat.dev/rotation"


def sample_objects() -> list[dict[str, Any]]:
    return load_cluster_file(EVENTS / "cluster.yaml")


def request(name: str = "legacy-to-karpenter", **detail: Any) -> dict[str, Any]:
    """The sample request, with ``detail`` fields replaced (and a fresh id per name)."""
    event: dict[str, Any] = json.loads((ROTATION / "legacy-to-karpenter.json").read_text())
    event["detail"].update(detail)
    return event


def control(verb: str, event_id: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((ROTATION / f"{verb}.json").read_text())
    event["id"] = event_id
    return event


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Rig:
    emu: Emulator
    kube: KubeApi
    pipeline: Pipeline
    clock: Clock
    wakeups: MemoryWakeups
    # Karpenter, and the workload controllers and kube-scheduler that bring evicted pods
    # back elsewhere (the health gate waits for them).
    karpenter: KarpenterSimulation
    # (when, report) of everything the pipeline reported, in order.
    log: list[tuple[datetime, Report]] = field(default_factory=list)

    def send(self, *messages: Mapping[str, Any] | str) -> list[Report]:
        bodies = [m if isinstance(m, str) else json.dumps(m) for m in messages]
        reports = []
        for result in self.pipeline.process(bodies):
            assert result.error is None, result.error
            reports += result.reports
        self.log += [(self.clock.now, report) for report in reports]
        return reports

    def follow(
        self,
        *,
        until: datetime | None = None,
        each: Callable[[Rig], None] | None = None,
        before: Callable[[Rig], None] | None = None,
        rounds: int = 2000,
    ) -> None:
        """Move the clock from one due wake-up to the next (the simulations playing in
        between) until none is left, or until ``until``; ``before`` looks at the cluster as
        each round's wake-ups find it, ``each`` after they ran."""
        for _ in range(rounds):
            due = self.wakeups.next_due()
            if due is None or (until is not None and due > until):
                if until is not None:
                    self.advance_to(until)
                return
            self.advance_to(due)
            if before is not None:
                before(self)
            self.send(*[encode(w) for w in self.wakeups.pop_due(self.clock.now)])
            if each is not None:
                each(self)
        raise AssertionError(f"still pending after {rounds} rounds: {self.wakeups.pending}")

    def advance_to(self, moment: datetime) -> None:
        self.clock.now = max(self.clock.now, moment)
        # The emulator's own clock too: evicted pods terminate after their grace period.
        self.emu.clock.set(self.clock.now, frozen=True)
        self.karpenter.advance(self.clock.now)

    def rotation(self, name: str = "legacy-to-karpenter") -> Rotation:
        stored = store.load(self.kube, "lifeboat", name)
        assert stored is not None
        return stored.rotation

    def node(self, name: str) -> dict[str, Any] | None:
        return self.emu.get_object("Node", name)

    def out_of_service(self, name: str) -> bool:
        """The node carries the rotation's NoSchedule taint (the rotation acted on it)."""
        found = self.node(name)
        return found is not None and any(
            t.get("key") == ROTATION_TAINT and t.get("effect") != "PreferNoSchedule"
            for t in nodes.taints(found)
        )

    def marked(self, name: str) -> bool:
        """The node carries the rotation's waiting mark (PreferNoSchedule)."""
        found = self.node(name)
        return found is not None and node_marks.pending_mark(found, ROTATION_TAINT)

    def events(self, reason: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.emu.objects("Event")
            if e["reason"] == reason and (kind is None or e["involvedObject"]["kind"] == kind)
        ]


@contextmanager
def rig(
    objects: list[dict[str, Any]] | None = None,
    *,
    settings: Settings | None = None,
    ledger: Ledger | None = None,
    workers: int = 1,
    start: datetime = START,
) -> Iterator[Rig]:
    objects = copy.deepcopy(objects if objects is not None else sample_objects())
    clock = Clock(start)
    wakeups = MemoryWakeups()
    with Emulator(objects) as emu:
        # The API server's clock reads the simulated one from the start, as in replay: a pod
        # evicted before the first move terminates after its grace period in simulated time.
        emu.clock.set(start, frozen=True)
        kube = KubeApi(emu.api_client(), RetryPolicy(attempts=2, base_delay=0.01))
        pipeline = Pipeline(
            clusters=OneCluster(kube),
            directory=directory_from_objects(objects),
            settings=settings or Settings(),
            clock=clock,
            wakeups=wakeups,
            ledger=ledger if ledger is not None else MemoryLedger(),
            workers=workers,
        )
        yield Rig(
            emu,
            kube,
            pipeline,
            clock,
            wakeups,
            KarpenterSimulation(emu, start),
        )


def pods_on(emu: Emulator, node: str) -> list[dict[str, Any]]:
    return [p for p in emu.objects("Pod") if p.get("spec", {}).get("nodeName") == node]


def serving(pod: Mapping[str, Any]) -> bool:
    return (
        pod.get("status", {}).get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
        and nodes.is_ready(pod)
    )


def ready_since(pod: Mapping[str, Any]) -> datetime | None:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            stamp = condition.get("lastTransitionTime")
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    return None


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)

"""One old NodeClaim gets at most one replacement (issue 10.1), whatever asks for it: two
different notices for the same instance in one batch, the same wake-up delivered twice, two
invocations at once. The replacement's name derives from the old claim, so every create
after the first is answered 409 AlreadyExists by the API server (as a real one answers a
create of an existing name).

Through the real pipeline with concurrent workers, the official client over HTTP, and the
emulator loaded with the sample cluster.
"""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import node_marks
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups, Task, encode
from lifeboat_local.directory import directory_from_objects

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events"
OBJECTS = load_cluster_file(ROOT / "events" / "cluster.yaml")
INSTANCE = "i-0a1b2c3d4e5f60001"  # a Spot node of pool "general"
OLD_CLAIM = "general-7xkqz"
# Tuesday 18:00 UTC: outside general's business-hours freeze, so voluntary notices act.
EVENING = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
TRIALS = 5


def event(name: str, **detail: Any) -> str:
    """A sample event, re-aimed at INSTANCE."""
    body = json.loads((EVENTS / f"{name}.json").read_text())
    body["id"] = f"{name}-{INSTANCE}"
    if name == "scheduled-change":
        body["detail"]["affectedEntities"] = [{"entityValue": INSTANCE}]
    else:
        body["detail"]["instance-id"] = INSTANCE
    body["detail"].update(detail)
    body["time"] = "2026-12-01T17:59:30Z"
    return json.dumps(body)


def pipeline(emu: Emulator, wakeups: MemoryWakeups, at: datetime) -> Pipeline:
    return Pipeline(
        clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2, base_delay=0.01))),
        directory=directory_from_objects(OBJECTS),
        settings=Settings(),
        clock=lambda: at,
        wakeups=wakeups,
        ledger=MemoryLedger(),
        workers=10,
    )


def replacements_of(emu: Emulator, old: str) -> list[str]:
    return [
        nodes.name_of(claim)
        for claim in emu.objects("NodeClaim")
        if nodes.labels_of(claim).get(node_marks.REPLACES_LABEL) == old
    ]


PAIRS = [
    ("spot-interruption", "state-change"),
    ("spot-interruption", "capacity-reservation-interruption"),
    ("spot-interruption", "rebalance-recommendation"),
    ("rebalance-recommendation", "scheduled-change"),
]


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_two_notices_for_one_instance_in_one_batch_make_one_replacement(
    first: str, second: str
) -> None:
    extra = {"state": "stopping"} if second == "state-change" else {}
    for _ in range(TRIALS):
        with Emulator(copy.deepcopy(OBJECTS)) as emu:
            bodies = [event(first), event(second, **extra)]
            results = pipeline(emu, MemoryWakeups(), EVENING).process(bodies)
            assert all(r.error is None for r in results), [r.error for r in results]
            assert len(replacements_of(emu, OLD_CLAIM)) == 1


def test_two_invocations_at_once_make_one_replacement() -> None:
    """Two Lambdas, each with its own client, handle a Spot warning and a state change for
    the same instance at the same moment."""
    for _ in range(TRIALS):
        with Emulator(copy.deepcopy(OBJECTS)) as emu:
            start = threading.Barrier(2)
            errors: list[BaseException] = []

            def invoke(
                body: str,
                emu: Emulator = emu,
                start: threading.Barrier = start,
                errors: list[BaseException] = errors,
            ) -> None:
                lifeboat = pipeline(emu, MemoryWakeups(), EVENING)
                start.wait()
                errors.extend(r.error for r in lifeboat.process([body]) if r.error)

            threads = [
                threading.Thread(target=invoke, args=(body,))
                for body in (event("spot-interruption"), event("state-change", state="stopping"))
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=30)
            assert not errors
            assert len(replacements_of(emu, OLD_CLAIM)) == 1


def test_a_wakeup_delivered_twice_in_a_batch_makes_one_replacement() -> None:
    """A rebalance recommendation deferred during general's freeze comes back at 17:00; SQS
    delivers the wake-up twice in the same batch (at-least-once)."""
    afternoon = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
    body = json.loads(event("rebalance-recommendation"))
    body["time"] = "2026-12-01T14:04:30Z"
    for _ in range(TRIALS):
        with Emulator(copy.deepcopy(OBJECTS)) as emu:
            wakeups = MemoryWakeups()
            [deferred] = pipeline(emu, wakeups, afternoon).process([json.dumps(body)])
            assert deferred.reports[0].outcome == "deferred"
            [wakeup] = wakeups.pending.values()
            assert wakeup.task is Task.DECIDE
            due = pipeline(emu, MemoryWakeups(), wakeup.due)
            results = due.process([encode(wakeup), encode(wakeup)])
            assert all(r.error is None for r in results)
            assert len(replacements_of(emu, OLD_CLAIM)) == 1


def test_notices_about_one_instance_share_a_lane_and_never_race() -> None:
    """Within a batch, messages about a common instance are handled one after the other
    (different instances side by side), so two notices about one node (here a Spot warning
    and its state change on a node-group node) never both drain it: each pod is evicted once.
    """
    node_group = "i-0a1b2c3d4e5f60006"
    spot = json.loads(event("spot-interruption"))
    state = json.loads(event("state-change", state="stopping"))
    for body in (spot, state):
        body["detail"]["instance-id"] = node_group
    for _ in range(TRIALS):
        with Emulator(copy.deepcopy(OBJECTS)) as emu:
            lifeboat = pipeline(emu, MemoryWakeups(), EVENING)
            results = lifeboat.process([json.dumps(spot), json.dumps(state)])
            assert all(r.error is None for r in results)
            evictions = [e[4] for e in emu.request_log if e[2] == "pods/eviction"]
            assert evictions and len(evictions) == len(set(evictions))

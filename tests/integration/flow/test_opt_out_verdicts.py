"""The taint at once of a Spot warning asks whether the node's NodePool opted out of
Lifeboat from a verdict read up to ``OPT_OUT_TTL`` seconds ago, by this pipeline's (this
Lambda environment's) earlier batches: no NodePool GET before its PATCH (issue 36: half of
a taint's time in a storm was that GET). Past the TTL, or for a pool never read, the pool
is read first, as before. The decision still reads the pool fresh.

Through the real ``kubernetes`` client over HTTP to the emulator; the pipeline's monotonic
clock is injected (the TTL's), the request log tells what was asked before the taints.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from bench.cluster import CLUSTER, REGION, Cluster, Machine, build_cluster
from bench.events import spot_interruption
from kubemu import Emulator
from kubemu.dispatch import LogEntry
from lifeboat.flow.batch import MessageResult
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.flow.resolve import OPT_OUT_TTL
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks.node_marks import OPT_OUT_ANNOTATION, taint_key
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.notice import Kind
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups
from tests.support.events import stamp

AT = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
SPOT_TAINT = taint_key(Kind.SPOT_INTERRUPTION)
POOL = "pool-00"


class Monotonic:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    emulator: Emulator
    cluster: Cluster
    clock: Monotonic

    def pipeline(self, workers: int = 1) -> Pipeline:
        return Pipeline(
            clusters=OneCluster(
                KubeApi(self.emulator.api_client(), RetryPolicy(attempts=2, base_delay=0.01))
            ),
            directory=self.cluster.directory(),
            settings=Settings(clusters=(CLUSTER,), region=REGION),
            clock=lambda: AT + timedelta(seconds=20),
            monotonic=self.clock,
            wakeups=MemoryWakeups(),
            ledger=MemoryLedger(),
            workers=workers,
        )

    def machines(self, batch: int, size: int = 2) -> list[Machine]:
        """The Karpenter machines of the ``batch``-th batch (each batch its own nodes)."""
        return self.cluster.karpenter[batch * size : (batch + 1) * size]

    def storm(self, pipeline: Pipeline, machines: list[Machine]) -> tuple[list[str], bool]:
        """One Spot warning per machine, one batch: each message's outcome and reason, and
        whether a NodePool was read in its taint phase, before the taints."""
        self.emulator.reset_counts()
        bodies = []
        for machine in machines:
            body = spot_interruption(machine)
            body["id"] = f"spot-{machine.instance_id}"
            body["time"] = stamp(AT)
            bodies.append(body)
        results = pipeline.process(bodies)
        return [describe(r) for r in results], pool_read_in_taint_phase(self.emulator.request_log)

    def tainted(self, machines: list[Machine]) -> list[bool]:
        found = []
        for machine in machines:
            node = self.emulator.get_object("Node", machine.node_name) or {}
            taints = (node.get("spec") or {}).get("taints") or []
            found.append(any(t.get("key") == SPOT_TAINT for t in taints))
        return found

    def opt_out(self, recreate: bool = False) -> None:
        """The operator opts the pool out (``recreate``: deletes it and makes it again, opted
        out: another uid)."""
        pool = self.emulator.get_object("NodePool", POOL)
        assert pool is not None
        pool["metadata"].setdefault("annotations", {})[OPT_OUT_ANNOTATION] = "true"
        if recreate:
            old_uid = pool["metadata"].pop("uid")
            pool["metadata"].pop("resourceVersion", None)
            assert self.emulator.delete_object("NodePool", POOL)
            assert self.emulator.put_object(pool)["metadata"]["uid"] != old_uid
        else:
            self.emulator.put_object(pool)


def describe(result: MessageResult) -> str:
    if result.error is not None:
        return repr(result.error)
    report = result.reports[0]
    return f"{report.outcome.value}: {report.reason}"


def pool_read_in_taint_phase(log: list[LogEntry]) -> bool:
    """Whether a NodePool was read in the batch's taint phase: before the first request of
    the handling that follows it (the first that is neither a node PATCH, the phase's
    taint, nor a NodePool GET). The phase ends before any message is handled."""
    for verb, _group, resource, _namespace, _name in log:
        if (verb, resource) == ("get", "nodepools"):
            return True
        if (verb, resource) != ("patch", "nodes"):
            return False
    return False


@pytest.fixture
def rig() -> Iterator[Rig]:
    cluster = build_cluster(30, pools=1, pods_per_node=1)
    with Emulator(cluster.objects) as emulator:
        yield Rig(emulator, cluster, Monotonic())


@pytest.mark.parametrize("workers", [1, 10])
def test_a_second_batch_within_the_ttl_taints_before_reading_its_pool(
    rig: Rig, workers: int
) -> None:
    """The first batch reads the pool before its taints; the next one, 5 s later, taints
    first (the pool then read once, fresh, for the decisions: as many requests as before)."""
    pipeline = rig.pipeline(workers)
    reports, read_first = rig.storm(pipeline, rig.machines(0))
    assert read_first
    assert all(r.startswith("acted") for r in reports)
    rig.clock.now += 5
    reports, read_first = rig.storm(pipeline, rig.machines(1))
    assert not read_first
    assert all(r.startswith("acted") for r in reports)
    assert rig.emulator.requests_by_resource[("get", "nodepools")] == 1


def test_past_the_ttl_the_pool_is_read_before_the_taints(rig: Rig) -> None:
    pipeline = rig.pipeline()
    rig.storm(pipeline, rig.machines(0))
    rig.clock.now += OPT_OUT_TTL
    _reports, read_first = rig.storm(pipeline, rig.machines(1))
    assert read_first


def test_a_clock_gone_backwards_reads_the_pool_first(rig: Rig) -> None:
    pipeline = rig.pipeline()
    rig.storm(pipeline, rig.machines(0))
    rig.clock.now -= 1
    _reports, read_first = rig.storm(pipeline, rig.machines(1))
    assert read_first


@pytest.mark.parametrize("recreate", [False, True])
def test_an_opt_out_during_a_storm_is_honoured_by_the_taint_once_the_ttl_passed(
    rig: Rig, recreate: bool
) -> None:
    """The pool opted out (or deleted and made again opted out, another uid) between two
    batches 5 s apart: the second batch's nodes are tainted and cordoned on the verdict read
    before (the bounded staleness docs/ states), and nothing more: the decision reads the
    pool fresh and leaves them alone. Past the TTL, a third batch's nodes are not touched."""
    pipeline = rig.pipeline()
    rig.storm(pipeline, rig.machines(0))
    rig.opt_out(recreate)
    rig.clock.now += 5
    reports, read_first = rig.storm(pipeline, rig.machines(1))
    assert not read_first
    assert rig.tainted(rig.machines(1)) == [True, True]
    assert all(r.startswith("ignored") and "opted out" in r for r in reports)
    assert rig.emulator.requests_by_resource[("create", "nodeclaims")] == 0
    assert rig.emulator.requests_by_resource[("delete", "nodeclaims")] == 0
    rig.clock.now += OPT_OUT_TTL
    reports, read_first = rig.storm(pipeline, rig.machines(2))
    assert read_first
    assert rig.tainted(rig.machines(2)) == [False, False]
    assert all(r.startswith("ignored") and "opted out" in r for r in reports)


def test_the_decisions_fresh_read_renews_the_verdict(rig: Rig) -> None:
    """The batch that found the pool opted out in its decisions' fresh read leaves that
    verdict: the next batch, within the TTL, does not taint (and reads no pool first)."""
    pipeline = rig.pipeline()
    rig.storm(pipeline, rig.machines(0))
    rig.opt_out()
    rig.clock.now += 5
    rig.storm(pipeline, rig.machines(1))
    rig.clock.now += 1
    _reports, read_first = rig.storm(pipeline, rig.machines(2))
    assert not read_first
    assert rig.tainted(rig.machines(2)) == [False, False]


def test_a_deleted_pool_is_read_again_and_its_nodes_tainted_as_before(rig: Rig) -> None:
    """The pool deleted (Karpenter is then deleting its nodes): no verdict is kept for an
    absent pool, each batch asks again, and the nodes are tainted (an absent pool did not
    opt out), as before the verdicts."""
    pipeline = rig.pipeline()
    assert rig.emulator.delete_object("NodePool", POOL)
    for batch in (0, 1):
        _reports, read_first = rig.storm(pipeline, rig.machines(batch))
        assert read_first
        assert rig.tainted(rig.machines(batch)) == [True, True]
        rig.clock.now += 1


def test_two_environments_keep_their_own_verdicts(rig: Rig) -> None:
    """Two Lambda environments (two pipelines): the one that never read the pool reads it
    and honours an opt-out at once; the one that read it before uses its verdict."""
    warm, fresh = rig.pipeline(), rig.pipeline()
    rig.storm(warm, rig.machines(0))
    rig.opt_out()
    rig.clock.now += 1
    _reports, read_first = rig.storm(fresh, rig.machines(1))
    assert read_first
    assert rig.tainted(rig.machines(1)) == [False, False]
    _reports, read_first = rig.storm(warm, rig.machines(2))
    assert not read_first
    assert rig.tainted(rig.machines(2)) == [True, True]


def test_an_opt_out_removed_is_acted_on_by_the_decision_meanwhile(rig: Rig) -> None:
    """The reverse staleness: the pool read opted out, then the annotation removed; within
    the TTL the taint at once is skipped, and the decision (a fresh read) taints, replaces
    and deletes the nodes as usual."""
    pool = rig.emulator.get_object("NodePool", POOL)
    assert pool is not None
    pool["metadata"].setdefault("annotations", {})[OPT_OUT_ANNOTATION] = "true"
    rig.emulator.put_object(pool)
    pipeline = rig.pipeline()
    reports, _read_first = rig.storm(pipeline, rig.machines(0))
    assert all("opted out" in r for r in reports)
    del pool["metadata"]["annotations"][OPT_OUT_ANNOTATION]
    rig.emulator.put_object(pool)
    rig.clock.now += 1
    reports, _read_first = rig.storm(pipeline, rig.machines(1))
    assert all(r.startswith("acted") for r in reports)
    assert rig.emulator.requests_by_resource[("patch", "nodes")] == 2
    assert rig.emulator.requests_by_resource[("delete", "nodeclaims")] == 2

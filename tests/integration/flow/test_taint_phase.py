"""The batch's taint phase (issue 36): every involuntary notice's node of a batch tainted and
cordoned before any message of the batch is handled, so the last node of a batch of Spot
warnings stops taking pods without waiting for the ledger's writes and the replacements of
the messages before it.

The pipeline is built directly on the Kubernetes emulator (the real ``kubernetes`` client
over HTTP), with a ledger that notes, at each of its writes, what the API server had done
by then. Each test runs with the lanes one after the other (``workers=1``: the order is then
certain, and before the phase the first write came after the first node's taint alone) and
side by side (as the Lambda runs them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest

import lifeboat.flow.pipeline as pipeline_module
from bench.cluster import CLUSTER, REGION, Machine, build_cluster
from bench.events import spot_interruption
from kubemu import Emulator
from lifeboat.flow.batch import Batch, MessageResult
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks.node_marks import taint_key
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.notice import Kind
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups
from tests.support.events import notice, stamp

AT = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
SPOT_TAINT = taint_key(Kind.SPOT_INTERRUPTION)
# The policy's tries of a request answered 500 (a 500 is not retried past them).
ATTEMPTS = 2


@dataclass
class WatchedLedger:
    """A memory ledger that notes, at each of its writes, which of the batch's nodes were
    tainted and cordoned, and which the API server had been asked to patch (answered or
    refused: the client waits for the answer)."""

    emulator: Emulator
    inner: MemoryLedger = field(default_factory=MemoryLedger)
    tainted_at_writes: list[set[str]] = field(default_factory=list)
    patched_at_writes: list[set[str]] = field(default_factory=list)
    # Whether the taint phase had given up on a message (logged it) by each write.
    gave_up: threading.Event = field(default_factory=threading.Event)
    gave_up_at_writes: list[bool] = field(default_factory=list)

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        self.gave_up_at_writes.append(self.gave_up.is_set())
        self.tainted_at_writes.append(tainted(self.emulator))
        self.patched_at_writes.append(
            {
                name
                for (verb, _group, resource, _ns, name), _times in self.emulator.timed_request_log()
                if verb == "patch" and resource == "nodes"
            }
        )
        return self.inner.once(key, handle)


def tainted(emulator: Emulator) -> set[str]:
    """The nodes bearing the Spot taint and cordoned."""
    return {
        node["metadata"]["name"]
        for node in emulator.objects("Node")
        if node["spec"].get("unschedulable")
        and any(t.get("key") == SPOT_TAINT for t in node["spec"].get("taints") or [])
    }


@dataclass
class Rig:
    emulator: Emulator
    machines: list[Machine]
    ledger: WatchedLedger
    make: Callable[..., Pipeline]

    @property
    def names(self) -> set[str]:
        return {m.node_name for m in self.machines}

    def bodies(self, stale: int | None = None) -> list[dict[str, Any]]:
        """One Spot warning per machine, each its own message, sent at ``AT`` (the one at
        index ``stale`` an hour before: past its deadline by more than the age limit)."""
        bodies = []
        for index, machine in enumerate(self.machines):
            body = spot_interruption(machine)
            body["id"] = f"spot-{index}"
            body["time"] = stamp(AT - timedelta(hours=1) if index == stale else AT)
            bodies.append(body)
        return bodies

    def process(self, workers: int, **settings: Any) -> list[MessageResult]:
        return self.make(workers, **settings).process(self.bodies())


@pytest.fixture
def rig() -> Iterator[Rig]:
    cluster = build_cluster(20, pools=2, pods_per_node=1)
    machines = cluster.karpenter[:10]
    with Emulator(cluster.objects) as emulator:
        ledger = WatchedLedger(emulator)

        def make(workers: int, **settings: Any) -> Pipeline:
            return Pipeline(
                clusters=OneCluster(
                    KubeApi(
                        emulator.api_client(),
                        RetryPolicy(attempts=ATTEMPTS, base_delay=0.01, max_delay=0.05),
                    )
                ),
                directory=cluster.directory(),
                settings=Settings(clusters=(CLUSTER,), region=REGION, **settings),
                clock=lambda: AT + timedelta(seconds=20),
                wakeups=MemoryWakeups(),
                ledger=ledger,
                workers=workers,
            )

        yield Rig(emulator, machines, ledger, make)


def outcomes(results: list[MessageResult]) -> list[Outcome | str]:
    return [repr(r.error) if r.error is not None else r.reports[0].outcome for r in results]


@pytest.mark.parametrize("workers", [1, 10])
def test_every_node_of_the_batch_is_tainted_before_any_ledger_write(rig: Rig, workers: int) -> None:
    """Ten Spot warnings, ten messages: by the ledger's first write (the Powertools record,
    a DynamoDB round trip), all ten nodes bear the taint and are cordoned; then each is
    handled as before (replaced, deleted)."""
    results = rig.process(workers)
    assert outcomes(results) == [Outcome.ACTED] * 10
    assert len(rig.ledger.tainted_at_writes) == 10
    for seen in rig.ledger.tainted_at_writes:
        assert seen >= rig.names


@pytest.mark.parametrize("workers", [1, 10])
def test_a_taint_that_fails_in_the_phase_is_tried_again_by_its_message(
    rig: Rig, workers: int
) -> None:
    """The third node's PATCH answered 500 for as many tries as the client makes: the phase
    gives up on it (logged), the others' taints go on, and that message's own handling
    taints it (before its ledger write) and acts, like the others."""
    third = rig.machines[2].node_name
    rig.emulator.fail_next(500, times=ATTEMPTS, verb="patch", resource="nodes", name=third)
    results = rig.process(workers)
    assert outcomes(results) == [Outcome.ACTED] * 10
    assert rig.emulator.answers["500"] == ATTEMPTS
    for seen in rig.ledger.tainted_at_writes:
        assert seen >= rig.names - {third}
    assert tainted(rig.emulator) >= rig.names - {third}  # and third: replaced and deleted


@pytest.mark.parametrize("workers", [1, 10])
def test_a_taint_that_keeps_failing_fails_only_its_message(rig: Rig, workers: int) -> None:
    """The third node's PATCH fails in the phase and again in its message's handling: that
    message alone returns to the queue (with the API server's error); the nine others were
    tainted before any ledger write and are acted on."""
    third = rig.machines[2].node_name
    rig.emulator.fail_next(500, times=2 * ATTEMPTS, verb="patch", resource="nodes", name=third)
    results = rig.process(workers)
    got = outcomes(results)
    assert got[:2] + got[3:] == [Outcome.ACTED] * 9
    assert "500" in str(got[2])
    assert results[2].error is not None
    for seen in rig.ledger.tainted_at_writes:
        assert seen >= rig.names - {third}
    assert third not in tainted(rig.emulator)


@pytest.mark.parametrize("workers", [1, 10])
def test_a_duplicate_batch_is_tainted_again_idempotently_and_reported_duplicate(
    rig: Rig, workers: int
) -> None:
    """The whole batch delivered again (SQS at least once): every node's guarded taint is
    tried before the first ledger write and refused (422: our taint is there), nothing
    changes, and each message says duplicate."""
    rig.process(workers)
    before = rig.emulator.objects("Node")
    rig.emulator.reset_counts()
    rig.ledger.patched_at_writes.clear()
    results = rig.process(workers)
    assert outcomes(results) == [Outcome.IGNORED] * 10
    assert {r.reports[0].reason for r in results} == {"duplicate delivery: already handled"}
    for seen in rig.ledger.patched_at_writes:
        assert seen >= rig.names
    writes = {verb for (verb, *_rest) in rig.emulator.request_log} - {"get", "list"}
    assert writes == {"patch"}
    assert rig.emulator.answers["422"] == rig.emulator.requests_by_resource[("patch", "nodes")]
    assert rig.emulator.objects("Node") == before


@pytest.mark.parametrize("workers", [1, 10])
def test_a_dry_run_taints_nothing(rig: Rig, workers: int) -> None:
    """Dry run: the phase sends no PATCH (nor does the handling): the nodes are as they were."""
    before = rig.emulator.objects("Node")
    results = rig.process(workers, dry_run=True)
    assert all(r.error is None for r in results)
    assert not [e for e in rig.emulator.request_log if e[0] == "patch" and e[2] == "nodes"]
    assert rig.emulator.objects("Node") == before


@pytest.mark.parametrize("workers", [1, 10])
def test_a_stale_notice_is_not_tainted_at_once(rig: Rig, workers: int) -> None:
    """One warning of the batch an hour old (past its deadline by more than the age limit,
    lifeboat.decide.staleness): it is judged as a voluntary notice, its node not tainted in
    the phase; the nine fresh ones are, before any ledger write."""
    stale = rig.machines[4].node_name
    results = rig.make(workers).process(rig.bodies(stale=4))
    assert [o for i, o in enumerate(outcomes(results)) if i != 4] == [Outcome.ACTED] * 9
    first_write = rig.ledger.patched_at_writes[0]
    assert first_write >= rig.names - {stale}
    assert stale not in first_write


@pytest.mark.parametrize("workers", [1, 10])
def test_one_warning_twice_in_a_batch_is_acted_on_once(rig: Rig, workers: int) -> None:
    """The same Spot warning delivered twice in one batch (SQS at least once): both
    messages name one instance, so they share a lane; the phase taints the node once, the
    first message acts on it as read fresh (other work of the batch names it), the second
    is a duplicate."""
    bodies = rig.bodies()
    bodies[9] = bodies[0]
    results = rig.make(workers).process(bodies)
    assert outcomes(results) == [Outcome.ACTED] * 9 + [Outcome.IGNORED]
    assert results[9].reports[0].reason == "duplicate delivery: already handled"
    for seen in rig.ledger.tainted_at_writes:
        assert seen >= rig.names - {rig.machines[9].node_name}
    first = rig.machines[0].node_name
    assert [e[4] for e in rig.emulator.request_log if e[0] == "patch"].count(first) >= 1


@pytest.mark.parametrize("workers", [1, 10])
def test_two_warnings_for_one_instance_are_handled_from_the_node_as_it_is(
    rig: Rig, workers: int
) -> None:
    """Two Spot warnings (two events) for one instance in a batch: the phase taints its
    node for both, and records no node for either (the first one's handling replaces and
    deletes it before the second is handled): each handling reads the node as it is then,
    both acted on as before the phase (Resolver.resolve reads the node when none is
    given)."""
    bodies = rig.bodies()
    bodies[9] = dict(bodies[0], id="spot-again")
    results = rig.make(workers).process(bodies)
    assert outcomes(results) == [Outcome.ACTED] * 10
    for seen in rig.ledger.tainted_at_writes:
        assert seen >= rig.names - {rig.machines[9].node_name}


@pytest.mark.parametrize("workers", [1, 10])
def test_a_node_already_deleted_is_not_an_error(rig: Rig, workers: int) -> None:
    """Another controller (Karpenter's own interruption handling) deleted the third node
    before the batch: the phase's guarded patch is answered 404 and nothing is recorded as
    patched; the message's handling goes on as it did before the phase, without failing."""
    third = rig.machines[2].node_name
    rig.emulator.delete_object("Node", third)
    results = rig.process(workers)
    assert all(r.error is None for r in results), [r.error for r in results]
    got = outcomes(results)
    assert got[:2] + got[3:] == [Outcome.ACTED] * 9
    assert got[2] is Outcome.IGNORED
    assert results[2].reports[0].reason.startswith("no Kubernetes node for instance")
    for seen in rig.ledger.tainted_at_writes:
        assert seen >= rig.names - {third}


@pytest.mark.parametrize("workers", [1, 10])
def test_a_crash_after_the_phase_leaves_the_nodes_tainted_and_the_retry_acts_once(
    rig: Rig, workers: int
) -> None:
    """The invocation stops between the phase and the handling (here: the ledger cannot be
    reached, every message fails before its record is written): every node is tainted
    and cordoned already, every message returns to the queue; their next receipt taints
    again (refused, nothing changes), finds no record, and acts on each node once: one
    replacement each."""
    claims = {c["metadata"]["name"] for c in rig.emulator.objects("NodeClaim")}

    def unreachable(key: str, handle: Callable[[], Report]) -> Report | None:
        raise ConnectionError("DynamoDB unreachable")

    inner = rig.ledger.inner
    rig.ledger.inner = cast(MemoryLedger, SimpleNamespace(once=unreachable))
    failed = rig.process(workers)
    assert all(isinstance(r.error, ConnectionError) for r in failed)
    assert tainted(rig.emulator) >= rig.names
    assert {c["metadata"]["name"] for c in rig.emulator.objects("NodeClaim")} == claims

    rig.ledger.inner = inner
    again = rig.make(workers).process(rig.bodies(), receives=[2] * 10)
    assert outcomes(again) == [Outcome.ACTED] * 10
    made = {c["metadata"]["name"] for c in rig.emulator.objects("NodeClaim")} - claims
    assert len(made) == 10


def test_a_lane_whose_taint_keeps_retrying_holds_back_only_its_own_message(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third node's PATCH answered 503 (unavailable) again and again, its warning near
    its deadline: the phase retries it within the message's window (the invocation's 6.5 s
    left less the handling margin, on a ``HeldClock``). The other lanes, their taints done,
    wait for it only ``TAINT_PHASE_WAIT`` and are handled (their ledger writes made) while
    the third is still refused; the third fails alone when its own window runs out."""
    third = rig.machines[2].node_name
    got = _third_refused(rig, monkeypatch, workers=10)
    assert got[:2] + got[3:] == [Outcome.ACTED] * 9
    assert "503" in str(got[2])
    assert rig.ledger.gave_up.is_set()  # the phase gave up on the third, and said so
    assert rig.ledger.gave_up_at_writes == [False] * 9  # the nine went on before that
    for seen in rig.ledger.tainted_at_writes:
        assert seen >= rig.names - {third}


def _third_refused(rig: Rig, monkeypatch: pytest.MonkeyPatch, workers: int) -> list[Outcome | str]:
    """The batch handled with the third node's PATCH answered 503 again and again (and
    ``TAINT_PHASE_WAIT`` 0.1 s), the phase's give-up logged to the rig's ledger: outcomes."""
    monkeypatch.setattr(pipeline_module, "TAINT_PHASE_WAIT", 0.1)
    third = rig.machines[2].node_name
    rig.emulator.fail_next(503, times=10_000, verb="patch", resource="nodes", name=third)
    logger = logging.getLogger(pipeline_module.__name__)
    told = Told(rig.ledger.gave_up)
    logger.addHandler(told)
    pipeline = rig.make(workers)
    pipeline.monotonic = HeldClock(rig.ledger, writes=9)
    try:
        results = pipeline.process(rig.bodies(), time_left=lambda: 6.5)
    finally:
        logger.removeHandler(told)
    return outcomes(results)


class HeldClock:
    """The pipeline's monotonic clock (its retry windows' clock), still until the ledger has
    seen ``writes`` writes, then past any window (the rig's backoff is capped at 0.05 s, so
    no single wait outgrows a window while the clock stands still). The third's window then
    runs out after the nine other messages are handled when the scheduling lets them go
    ahead, however loaded the machine (on real time, a 1.5 s window, they sometimes were not
    all done in time under a loaded make test). When the scheduling holds them back behind
    the third, they are never all written while it retries: the clock moves on after
    ``REAL_LIMIT`` seconds of real time, the third gives up, and the writes come after that
    (the test fails)."""

    REAL_LIMIT = 10.0

    def __init__(self, ledger: WatchedLedger, writes: int) -> None:
        self._ledger = ledger
        self._writes = writes
        self._start = time.monotonic()

    def __call__(self) -> float:
        held = time.monotonic() - self._start < self.REAL_LIMIT
        if held and len(self._ledger.gave_up_at_writes) < self._writes:
            return 0.0
        return 1e6


class Told(logging.Handler):
    """Sets ``event`` when the taint phase logs that it gave up on a message."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__(logging.WARNING)
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("taint before handling failed"):
            self.event.set()


def test_more_lanes_than_workers_a_retrying_taint_holds_back_only_its_own_message(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above with two workers for ten lanes (``lifeboat replay``'s larger batches, or a
    smaller ``workers``): the lanes whose taints are done are handled first; a lane whose
    taint is still retrying must not take a worker to wait for it ahead of them (it did:
    the handling of lane 0, 1, then 2 in batch order, lane 2's wait holding a worker while
    the other worker's own taint retried, lanes 3-9 behind both)."""
    got = _third_refused(rig, monkeypatch, workers=2)
    assert got[:2] + got[3:] == [Outcome.ACTED] * 9
    assert "503" in str(got[2])
    assert rig.ledger.gave_up_at_writes == [False] * 9


def test_the_phase_starts_no_further_notice_of_a_message_when_the_invocation_is_nearly_over(
    rig: Rig,
) -> None:
    """A message naming five instances (up to ``NOTICES_PER_MESSAGE``, 50), with less than
    ``INVOCATION_RESERVE`` left of the invocation: its handling acts on the first notice and
    hands the rest on as wake-ups (``NoticeHandler.handle_all``); the phase stops at the same
    point, and does not spend what is left on taints (one request each, 10 s each when the
    API server is slow) until the invocation times out and the whole batch comes back only
    after the queue's 380 s visibility timeout."""
    pipeline = rig.make(1)
    machines = rig.machines[:5]
    infos = cluster_infos(pipeline, machines)
    batch = Batch(infos, pipeline.clusters, time_left=lambda: 10.0)
    warnings = [
        notice(
            Kind.SPOT_INTERRUPTION,
            at=AT,
            instance=m.instance_id,
            event_id=f"spot-{i}",
            deadline=AT + timedelta(minutes=2),
        )
        for i, m in enumerate(machines)
    ]
    pipeline._taint_first(pipeline_module._Steps(pipeline), batch, [warnings], set())
    assert tainted(rig.emulator) == {machines[0].node_name}
    assert list(batch.tainted) == [warnings[0].ledger_key]


def cluster_infos(pipeline: Pipeline, machines: list[Machine]) -> dict[str, Any]:
    return dict(pipeline.directory.describe([m.instance_id for m in machines]))


@pytest.mark.parametrize("workers", [1, 10])
def test_an_outage_the_phase_waited_out_is_not_waited_out_again_by_the_handling(
    rig: Rig, workers: int
) -> None:
    """The third node's PATCH answered 503 (unavailable) again and again: the phase retries
    it for the message's whole window, then the message fails with that error without its
    handling retrying the taint for a second window. Twice the window (each up to the
    client's attempts of a 10 s request timeout when the server does not answer at all)
    could outlast the invocation, and a timed-out invocation returns every message of the
    batch only after the queue's 380 s visibility timeout, past a Spot warning's deadline,
    instead of within seconds (lifeboat.model.deadline.redelivery_delay)."""
    third = rig.machines[2].node_name
    rig.emulator.fail_next(503, times=10_000, verb="patch", resource="nodes", name=third)
    logger = logging.getLogger(pipeline_module.__name__)
    at_give_up: list[int] = []
    told = Counted(lambda: at_give_up.append(third_patches(rig.emulator, third)))
    logger.addHandler(told)
    try:
        results = rig.make(workers).process(rig.bodies(), time_left=lambda: 6.5)
    finally:
        logger.removeHandler(told)
    got = outcomes(results)
    assert got[:2] + got[3:] == [Outcome.ACTED] * 9
    assert "503" in str(got[2])
    assert at_give_up == [third_patches(rig.emulator, third)]


def third_patches(emulator: Emulator, name: str) -> int:
    return sum(1 for e in emulator.request_log if e[0] == "patch" and e[4] == name)


class Counted(logging.Handler):
    """Calls ``note`` when the taint phase logs that it gave up on a message."""

    def __init__(self, note: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self.note = note

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("taint before handling failed"):
            self.note()

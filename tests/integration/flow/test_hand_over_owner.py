"""Nothing protected without an owner (issue 33.3): a when-ready hand-over whose wake-up could
never be scheduled (EventBridge Scheduler failing through every delivery, the message
dead-lettered) leaves the old node held (do-not-disrupt, taint, cordon) and the replacement
protected; each instance status sweep finds them by the hand-over they carry, past its
take-over instant, and finishes or undoes it. A hand-over given up for a scheduled maintenance
keeps the wake-up that takes the node out before the maintenance starts.

Through the real handler and pipeline, the Kubernetes client over HTTP to the emulator
(``kubemu``); the sample cluster (events/cluster.yaml) at 18:00, when ``general`` allows 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubemu import Emulator
from lifeboat.aws.sweep import sweep_request
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.marks import handover, node_marks
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import AllRecordsFailed, handle_batch
from lifeboat.wakeup.codec import MemoryWakeups, Task, Wakeup, encode
from lifeboat_local.directory import directory_from_objects
from tests.support.events import health_time, sqs_record
from tests.support.replaying import sample, sample_cluster

INSTANCE, CLAIM, NODE = "i-0a1b2c3d4e5f60002", "general-b4wpl", "ip-10-0-1-12.ec2.internal"
START = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
MAINTENANCE = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
MAX_RECEIVES = 3  # the queue's maxReceiveCount in this test


class SchedulerDown(RuntimeError):
    """What a Scheduler outage looks like to the pipeline."""


@dataclass
class FlakyWakeups:
    """Wake-ups in memory, or failing like a Scheduler outage while ``down``."""

    down: bool = False
    held: MemoryWakeups = field(default_factory=MemoryWakeups)

    def schedule(self, wakeup: Wakeup) -> None:
        if self.down:
            raise SchedulerDown("scheduler: CreateSchedule answered 500, every retry")
        self.held.schedule(wakeup)


class Rig:
    def __init__(self, emulator: Emulator, objects: list[dict[str, Any]]) -> None:
        self.emulator = emulator
        retry = RetryPolicy(attempts=1, base_delay=0.0, max_delay=0.0)
        self.kube = KubeApi(emulator.api_client(), retry, sleep=lambda _: None)
        self.now = START
        self.wakeups = FlakyWakeups()
        self.pipeline = Pipeline(
            clusters=OneCluster(self.kube),
            directory=directory_from_objects(objects),
            settings=Settings(hand_over=handover.WHEN_READY),
            clock=lambda: self.now,
            wakeups=self.wakeups,
            ledger=MemoryLedger(),
            statuses=NoTrouble(),
        )

    def deliver(self, body: str, receive_count: int = 1) -> tuple[bool, list[dict[str, Any]]]:
        """One SQS delivery through the handler: whether it failed, and its decisions."""
        logged: list[dict[str, Any]] = []

        class Logger:
            def log(self, level: int, msg: str, *a: Any, extra: Any = None, **k: Any) -> None:
                if msg == "decision":
                    logged.append(extra["decision"])

            def error(self, *a: Any, **k: Any) -> None:
                pass

            def warning(self, *a: Any, **k: Any) -> None:
                pass

        event = {"Records": [sqs_record(body, "m-0", receive_count=receive_count)]}
        try:
            failed = bool(
                handle_batch(event, None, self.pipeline, logger=Logger())["batchItemFailures"]
            )
        except AllRecordsFailed:
            failed = True
        return failed, logged

    def sweep(self) -> list[dict[str, Any]]:
        request = sweep_request(f"sweep-{self.now:%H%M}", self.now.isoformat())
        failed, logged = self.deliver(json.dumps(request))
        assert not failed
        return [line for line in logged if line.get("wakeup") == str(Task.HAND_OVER)]

    def claim(self, name: str) -> dict[str, Any]:
        claim = self.kube.get_nodeclaim(name)
        assert claim is not None
        return claim

    def node(self) -> dict[str, Any]:
        node = self.kube.get_node(NODE)
        assert node is not None
        return node


class NoTrouble:
    """DescribeInstanceStatus answering that no instance is in trouble (three filter sets,
    one empty page each)."""

    def pages(self) -> list[dict[str, Any]]:
        return [{"InstanceStatuses": []} for _ in range(3)]

    def describe(self, instance_ids: list[str]) -> list[dict[str, Any]]:
        return [{"InstanceStatuses": []}]

    def complete(self, pages: list[dict[str, Any]]) -> bool:
        return True


@pytest.fixture
def rig() -> Iterator[Rig]:
    objects = sample_cluster()
    with Emulator(objects) as emulator:
        yield Rig(emulator, objects)


def _retirement() -> str:
    event = sample("scheduled-change.json")
    event["time"] = "2026-12-01T17:59:00Z"
    event["resources"] = [INSTANCE]
    event["detail"]["startTime"] = health_time(MAINTENANCE)
    event["detail"]["affectedEntities"] = [{"entityValue": INSTANCE, "status": "IMPAIRED"}]
    return json.dumps(event)


def _held(obj: dict[str, Any]) -> bool:
    return nodes.annotations_of(obj).get(handover.PROTECTED_ANNOTATION) == "true"


def _dead_lettered_hand_over(rig: Rig) -> str:
    """The retirement handled while Scheduler is down, on every receive: the message goes to
    the DLQ with its replacement created and the old node held. The replacement's name."""
    rig.wakeups.down = True
    for receive in range(1, MAX_RECEIVES + 1):
        failed, logged = rig.deliver(_retirement(), receive)
        assert failed
        rig.now += timedelta(minutes=1)
    # What the first receipt did was reported although the message failed (issue 33.4).
    (first,) = [line for line in logged if line["instance_id"] == INSTANCE]
    assert "interrupted (SchedulerDown" in first["reason"]
    (replacement,) = [
        nodes.name_of(c)
        for c in rig.kube.list_nodeclaims(node_marks.REPLACES_LABEL)
        if nodes.labels_of(c)[node_marks.REPLACES_LABEL] == CLAIM
    ]
    for obj in (rig.node(), rig.claim(replacement)):
        assert _held(obj) and handover.HAND_OVER_LABEL in nodes.labels_of(obj)
    assert rig.node()["spec"]["unschedulable"] is True
    return replacement


def test_a_dead_lettered_hand_over_is_given_up_by_the_sweep_and_its_maintenance_kept(
    rig: Rig,
) -> None:
    replacement = _dead_lettered_hand_over(rig)
    rig.wakeups.down = False
    # Before the take-over instant the sweep leaves it to its (would-be) wake-ups.
    rig.now = START + handover.PATIENCE + handover.SWEEP_GRACE - timedelta(minutes=1)
    assert rig.sweep() == []
    assert _held(rig.node())

    rig.now = START + handover.PATIENCE + handover.SWEEP_GRACE + timedelta(minutes=1)
    (line,) = rig.sweep()
    assert line["outcome"] == "ignored"
    assert line["reason"].startswith("hand-over taken over by the instance status sweep")
    assert "not initialized within 10m" in line["reason"]
    # Nothing of the hand-over is left: the old node is back in service, claim kept.
    node = rig.node()
    assert not node["spec"].get("unschedulable")
    assert not [t for t in nodes.taints(node) if str(t["key"]).startswith("lifeboat.dev/")]
    for obj in (node, rig.claim(replacement)):
        assert not _held(obj) and nodes.DO_NOT_DISRUPT not in nodes.annotations_of(obj)
        assert handover.HAND_OVER_LABEL not in nodes.labels_of(obj)
        assert handover.HAND_OVER_ANNOTATION not in nodes.annotations_of(obj)
    assert not nodes.is_deleting(rig.claim(CLAIM))
    # ... but its maintenance is not forgotten: decided again at the latest start.
    (decide,) = rig.wakeups.held.pending.values()
    assert decide.task is Task.DECIDE and decide.notice.instance_id == INSTANCE
    assert decide.due == MAINTENANCE - Settings().scheduled_change_lead
    # A later sweep finds nothing more to do.
    rig.now += timedelta(minutes=1)
    assert rig.sweep() == []

    _taken_out_at_the_latest_start(rig, decide)


def _taken_out_at_the_latest_start(rig: Rig, decide: Wakeup) -> None:
    rig.now = decide.due
    failed, logged = rig.deliver(encode(decide))
    assert not failed and logged[0]["outcome"] == "acted"
    assert "acting regardless of budgets" in logged[0]["reason"]
    old = rig.kube.get_nodeclaim(CLAIM)
    assert old is None or nodes.is_deleting(old)


def test_a_hand_over_given_up_for_a_maintenance_keeps_the_wake_up_that_takes_it_out(
    rig: Rig,
) -> None:
    """Its own wake-ups give the hand-over up after 10 minutes (the replacement never
    initializes: no Karpenter here): the node is back in service, and the retirement 7 days
    out, remembered as handled, would be a duplicate if AWS Health sent it again; the
    wake-up decided at its latest start takes the node out."""
    failed, logged = rig.deliver(_retirement())
    assert not failed and logged[0]["outcome"] == "acted"
    for _ in range(40):
        (hand_over,) = [w for w in rig.wakeups.held.pending.values() if w.task is Task.HAND_OVER]
        rig.now = hand_over.due
        rig.wakeups.held.pop_due(rig.now)
        failed, logged = rig.deliver(encode(hand_over))
        assert not failed
        if logged[0]["outcome"] != "deferred":
            break
    assert "hand-over given up" in logged[0]["reason"]
    assert not rig.node()["spec"].get("unschedulable") and not _held(rig.node())
    (decide,) = rig.wakeups.held.pending.values()
    assert decide.task is Task.DECIDE
    assert decide.due == MAINTENANCE - Settings().scheduled_change_lead
    rig.now = decide.due - timedelta(minutes=10)
    _, logged = rig.deliver(_retirement())
    assert logged[0]["reason"] == "duplicate delivery: already handled"
    _taken_out_at_the_latest_start(rig, decide)


def test_the_sweep_finishes_a_hand_over_whose_replacement_initialized(rig: Rig) -> None:
    replacement = _dead_lettered_hand_over(rig)
    rig.wakeups.down = False
    # Karpenter initialized it meanwhile (its status, as Karpenter's lifecycle controller
    # writes it through the status subresource).
    claim = rig.claim(replacement)
    at = "2026-12-01T18:04:00Z"
    claim["status"] = {
        "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": at}]
    }
    rig.emulator.put_object(claim)
    rig.now = START + handover.PATIENCE + handover.SWEEP_GRACE
    (line,) = rig.sweep()
    assert line["outcome"] == "acted", line["reason"]
    assert [a["type"] for a in line["actions"]] == ["unprotect-nodeclaim", "delete-nodeclaim"]
    old = rig.kube.get_nodeclaim(CLAIM)
    assert old is None or nodes.is_deleting(old)
    assert not _held(rig.claim(replacement))
    assert handover.HAND_OVER_LABEL not in nodes.labels_of(rig.claim(replacement))


def test_a_give_up_waits_for_the_scheduler_that_keeps_its_maintenance(rig: Rig) -> None:
    """The wake-up that takes the node out before its maintenance is scheduled before the
    node is put back in service: with Scheduler still down, the sweep leaves the node held
    and cordoned (its owner is still the sweep), and the next sweep, Scheduler back, gives
    it up."""
    _dead_lettered_hand_over(rig)
    rig.now = START + handover.PATIENCE + handover.SWEEP_GRACE + timedelta(minutes=1)
    (line,) = rig.sweep()
    assert "could not finish or give up the hand-over (SchedulerDown" in line["reason"]
    assert _held(rig.node()) and rig.node()["spec"]["unschedulable"] is True
    rig.wakeups.down = False
    rig.now += timedelta(minutes=1)
    (line,) = rig.sweep()
    assert "hand-over given up" in line["reason"]
    assert not _held(rig.node()) and not rig.node()["spec"].get("unschedulable")
    assert [w.task for w in rig.wakeups.held.pending.values()] == [Task.DECIDE]


def test_a_hand_over_record_that_is_not_lifeboats_is_reported_and_left(rig: Rig) -> None:
    """The record is read as strictly as a queued wake-up: a forged or damaged one acts on
    nothing, and the sweep says so."""
    until = handover.Record(START, "{}").label
    rig.kube.patch_node(
        NODE,
        [
            {"op": "add", "path": "/metadata/labels/lifeboat.dev~1hand-over-until", "value": until},
            {"op": "add", "path": "/metadata/annotations/lifeboat.dev~1hand-over", "value": "{"},
        ],
    )
    rig.now = START + timedelta(minutes=1)
    request = sweep_request("sweep-x", rig.now.isoformat())
    failed, logged = rig.deliver(json.dumps(request))
    assert not failed
    (problem,) = [line for line in logged if "hand-over" in line["reason"]]
    assert problem["outcome"] == str(Outcome.IGNORED)
    assert "is no hand-over Lifeboat wrote" in problem["reason"]


def test_a_hand_over_record_copied_onto_another_node_acts_on_nothing_it_names(
    rig: Rig,
) -> None:
    """Hostile review of 33.3: a well-formed record, Lifeboat's own (taken from a real
    hand-over in another cluster), written by whoever may patch a Node (its own kubelet) onto
    a Node of another instance, naming the victim's claim and uid, past its take-over time.
    The sweep reads a Node's record about another instance as a replacement's copy: it
    never finishes or gives up the hand-over it names (no delete of the victim's claim, no
    write to the victim's node), and only removes the copy."""
    objects = sample_cluster()
    with Emulator(objects) as elsewhere:
        donor = Rig(elsewhere, objects)
        _dead_lettered_hand_over(donor)
        donor_node = donor.node()
    record = nodes.annotations_of(donor_node)[handover.HAND_OVER_ANNOTATION]
    until = nodes.labels_of(donor_node)[handover.HAND_OVER_LABEL]
    attacker = "ip-10-0-1-11.ec2.internal"
    rig.kube.patch_node(
        attacker,
        [
            {"op": "add", "path": "/metadata/labels/lifeboat.dev~1hand-over-until", "value": until},
            {"op": "add", "path": "/metadata/annotations/lifeboat.dev~1hand-over", "value": record},
        ],
    )
    victim_claim, victim_node = rig.claim(CLAIM), rig.node()
    rig.now = START + handover.PATIENCE + handover.SWEEP_GRACE + timedelta(minutes=5)
    assert rig.sweep() == []
    assert rig.claim(CLAIM) == victim_claim and rig.node() == victim_node
    copy = rig.kube.get_node(attacker)
    assert copy is not None
    assert handover.HAND_OVER_ANNOTATION not in nodes.annotations_of(copy)
    assert handover.HAND_OVER_LABEL not in nodes.labels_of(copy)


def test_a_crash_between_the_give_up_wake_up_and_the_release_is_given_up_once(
    rig: Rig,
) -> None:
    """Hostile review of 33.3: the give-up schedules the maintenance's wake-up, then the
    API server fails the patch that releases the old node. The node stays held and the
    record stays, so the next sweep gives it up again: the node back in service, and still
    one wake-up for the maintenance (the same key: scheduling it twice makes no second)."""
    _dead_lettered_hand_over(rig)
    rig.wakeups.down = False
    rig.now = START + handover.PATIENCE + handover.SWEEP_GRACE + timedelta(minutes=1)
    rig.emulator.fail_next(500, times=1, verb="patch", resource="nodes", name=NODE)
    (line,) = rig.sweep()
    assert "could not finish or give up the hand-over (KubeError" in line["reason"]
    assert "the next sweep tries again" in line["reason"]
    assert _held(rig.node()) and rig.node()["spec"]["unschedulable"] is True
    assert [w.task for w in rig.wakeups.held.pending.values()] == [Task.DECIDE]
    rig.now += timedelta(minutes=1)
    (line,) = rig.sweep()
    assert "hand-over given up" in line["reason"]
    assert not _held(rig.node()) and not rig.node()["spec"].get("unschedulable")
    assert handover.HAND_OVER_LABEL not in nodes.labels_of(rig.node())
    assert [w.task for w in rig.wakeups.held.pending.values()] == [Task.DECIDE]
    assert rig.sweep() == []

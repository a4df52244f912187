"""The rotation's pure decisions (lifeboat.rotation.plan) and its stored state's JSON."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lifeboat.model.report import Outcome
from lifeboat.rotation import plan
from lifeboat.rotation.model import (
    NodePhase,
    Phase,
    Rotation,
    RotationNode,
    StateError,
    Workload,
    from_json,
    to_json,
)
from lifeboat.rotation.plan import NodeView, Snapshot
from lifeboat.rotation.request import RotationSpec, Verb

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
TIMEOUT = timedelta(minutes=10)
WEB = Workload(
    "ReplicaSet", "shop", "web-5d8f7", "uid-web", {"app": "web"}, ready_before=3, on_node=2
)
DB = Workload("StatefulSet", "shop", "db", "uid-db", {"app": "db"}, ready_before=2, on_node=1)


def rotation(
    *nodes: RotationNode, max_in_flight: int = 1, phase: Phase = Phase.RUNNING
) -> Rotation:
    spec = RotationSpec("legacy", labels={"group": "legacy"}, max_in_flight=max_in_flight)
    return Rotation(spec, "request-1", NOW - timedelta(hours=1), tuple(nodes), phase)


def node(
    name: str,
    phase: NodePhase = NodePhase.PENDING,
    *,
    claim: str | None = None,
    gate_started: datetime | None = None,
    workloads: tuple[Workload, ...] = (),
) -> RotationNode:
    return RotationNode(
        name,
        f"i-0000000000000{name[-3:]}",
        claim,
        phase,
        since=NOW - timedelta(minutes=1) if phase is not NodePhase.PENDING else None,
        gate_started=gate_started,
        workloads=workloads,
    )


def out(pods_left: tuple[str, ...] = (), *, drain_started: bool = True, **ready: int) -> NodeView:
    return NodeView(True, True, drain_started, pods_left, {f"uid-{k}": v for k, v in ready.items()})


# -- starting nodes ---------------------------------------------------------------------------


def test_pending_nodes_start_oldest_first_up_to_max_in_flight_waiting_ones_included() -> None:
    r = rotation(
        node("n-001", NodePhase.WAITING),
        node("n-002"),
        node("n-003"),
        node("n-004"),
        max_in_flight=3,
    )
    assert plan.candidates(r) == ["n-002", "n-003"]
    assert plan.candidates(replace(r, phase=Phase.PAUSED)) == []
    assert plan.candidates(replace(r, phase=Phase.FAILED)) == []


def test_a_started_node_waits_with_its_workloads_or_is_skipped_when_gone_or_going() -> None:
    r = rotation(node("n-001"), node("n-002"), node("n-003"))
    r = plan.start(r, "n-001", Snapshot(True, None, (WEB,), ("default/debug",)), NOW).rotation
    started = r.node("n-001")
    assert (started.phase, started.workloads, started.unmanaged, started.since) == (
        NodePhase.WAITING,
        (WEB,),
        ("default/debug",),
        NOW,
    )
    gone = plan.start(r, "n-002", Snapshot(False), NOW)
    assert gone.rotation.node("n-002").phase is NodePhase.SKIPPED
    assert [c.reason for c in gone.changes] == [plan.NODE_SKIPPED]
    going = plan.start(r, "n-003", Snapshot(True, "Karpenter is disrupting it"), NOW)
    assert going.rotation.node("n-003").note == "already going: Karpenter is disrupting it"


def test_a_decision_acted_takes_the_node_out_of_service_at_once() -> None:
    """A node group's drain starts with the act (the gate's clock too); a Karpenter node's
    replacement launches first, and its drain starts when its old claim goes."""
    r = rotation(
        node("n-001", NodePhase.WAITING),
        node("n-002", NodePhase.WAITING, claim="general-abc"),
        max_in_flight=2,
    )
    r = plan.decided(r, "n-001", Outcome.ACTED, "drained", NOW).rotation
    r = plan.decided(r, "n-002", Outcome.ACTED, "replacing", NOW).rotation
    assert (r.node("n-001").phase, r.node("n-001").gate_started) == (NodePhase.DRAINING, NOW)
    assert (r.node("n-002").phase, r.node("n-002").gate_started) == (NodePhase.REPLACING, None)


def test_a_decision_let_go_skips_the_node_and_frees_its_slot() -> None:
    r = rotation(node("n-001", NodePhase.WAITING), node("n-002"))
    step = plan.decided(r, "n-001", Outcome.IGNORED, "NodePool general opted out", NOW)
    assert step.rotation.node("n-001").phase is NodePhase.SKIPPED
    assert [c.ok for c in step.changes] == [False]
    assert plan.candidates(step.rotation) == ["n-002"]
    deferred = plan.decided(r, "n-001", Outcome.DEFERRED, "window closed", NOW).rotation
    assert (deferred.node("n-001").phase, deferred.node("n-001").note) == (
        NodePhase.WAITING,
        "window closed",
    )


# -- progress and the health gate -----------------------------------------------------------


def test_a_waiting_node_stays_while_the_cluster_shows_it_in_service() -> None:
    r = rotation(node("n-001", NodePhase.WAITING, workloads=(WEB,)))
    step = plan.advance(r, {"n-001": NodeView(True)}, NOW)
    assert step.rotation == r and step.changes == ()


def test_a_karpenter_node_is_replacing_until_its_claim_goes_then_draining() -> None:
    r = rotation(node("n-001", NodePhase.WAITING, claim="general-abc", workloads=(WEB,)))
    r = plan.advance(r, {"n-001": out(("shop/web-a",), drain_started=False)}, NOW).rotation
    assert (r.node("n-001").phase, r.node("n-001").gate_started) == (NodePhase.REPLACING, None)
    later = NOW + timedelta(minutes=5)
    r = plan.advance(r, {"n-001": out(("shop/web-a",), web=1)}, later).rotation
    assert (r.node("n-001").phase, r.node("n-001").gate_started) == (NodePhase.DRAINING, later)


def test_the_gate_passes_only_with_the_node_drained_and_every_workload_ready_elsewhere() -> None:
    r = rotation(node("n-001", NodePhase.DRAINING, gate_started=NOW, workloads=(WEB, DB)))
    step = plan.advance(r, {"n-001": out(("shop/web-b",), web=3, db=2)}, NOW)
    assert step.rotation.node("n-001").phase is NodePhase.DRAINING  # a pod is still there
    step = plan.advance(r, {"n-001": out(web=2, db=2)}, NOW)
    drained = step.rotation.node("n-001")
    assert drained.phase is NodePhase.RESCHEDULING
    assert "ReplicaSet shop/web-5d8f7 2 of 3 Ready elsewhere" in drained.note
    step = plan.advance(r, {"n-001": out(web=3, db=2)}, NOW)
    assert step.rotation.node("n-001").phase is NodePhase.DONE
    assert [c.reason for c in step.changes] == [plan.NODE_DONE]
    assert "its 3 pod(s) of 2 workload(s) run Ready elsewhere" in step.changes[0].message


def test_a_node_gone_is_judged_by_its_workloads_alone() -> None:
    r = rotation(node("n-001", NodePhase.REPLACING, claim="c", workloads=(WEB,)))
    gone = NodeView(False, ready_elsewhere={"uid-web": 3})
    assert plan.advance(r, {"n-001": gone}, NOW).rotation.node("n-001").phase is NodePhase.DONE


def test_a_gate_that_times_out_stops_the_rotation_and_touches_no_further_node() -> None:
    started = NOW - TIMEOUT
    r = rotation(
        node("n-001", NodePhase.RESCHEDULING, gate_started=started, workloads=(WEB,)),
        node("n-002", NodePhase.WAITING),
        node("n-003"),
        max_in_flight=2,
    )
    early = plan.advance(r, {"n-001": out(web=2)}, NOW - timedelta(seconds=1))
    assert early.rotation.phase is Phase.RUNNING  # a second before the deadline: still waiting
    step = plan.advance(r, {"n-001": out(web=2)}, NOW)
    after = step.rotation
    assert after.phase is Phase.FAILED
    assert after.node("n-001").phase is NodePhase.FAILED
    assert "ReplicaSet shop/web-5d8f7 2 of 3 Ready elsewhere" in after.reason
    # The waiting node is let go (its mark to be cleared), the pending one never starts.
    assert step.release == ("n-002",)
    assert [after.node(n).phase for n in ("n-002", "n-003")] == [NodePhase.RELEASED] * 2
    assert plan.candidates(after) == []
    assert [(c.reason, c.warning, c.ok) for c in step.changes] == [
        (plan.HEALTH_GATE_FAILED, True, False),
        (plan.ROTATION_FAILED, True, False),
    ]


def test_a_node_put_back_into_service_by_someone_else_is_skipped() -> None:
    r = rotation(node("n-001", NodePhase.DRAINING, gate_started=NOW, workloads=(WEB,)))
    step = plan.advance(r, {"n-001": NodeView(True)}, NOW)
    assert step.rotation.node("n-001").phase is NodePhase.SKIPPED
    assert "taken back into service" in step.rotation.node("n-001").note


def test_a_rotation_with_nothing_pending_or_in_flight_completes() -> None:
    r = rotation(node("n-001", NodePhase.DONE), node("n-002", NodePhase.DONE))
    step = plan.finish_if_done(r, NOW)
    assert step.rotation.phase is Phase.COMPLETED
    assert step.rotation.reason == "2 of 2 node(s) rotated"
    busy = rotation(node("n-001", NodePhase.DONE), node("n-002", NodePhase.WAITING))
    assert plan.finish_if_done(busy, NOW).rotation.phase is Phase.RUNNING


# -- commands ---------------------------------------------------------------------------------


def test_pause_resume_and_cancel() -> None:
    r = rotation(
        node("n-001", NodePhase.DRAINING),
        node("n-002", NodePhase.WAITING),
        node("n-003"),
        max_in_flight=2,
    )
    paused = plan.command(r, Verb.PAUSE, NOW)
    assert isinstance(paused, plan.Advance)
    assert paused.rotation.phase is Phase.PAUSED and paused.release == ()
    assert (
        plan.command(paused.rotation, Verb.PAUSE, NOW)
        == "it is paused (pause requested at 2026-12-01T14:05:00Z)"
    )
    resumed = plan.command(paused.rotation, Verb.RESUME, NOW)
    assert isinstance(resumed, plan.Advance) and resumed.rotation.phase is Phase.RUNNING
    assert plan.command(r, Verb.RESUME, NOW) == "it is running"
    cancelled = plan.command(paused.rotation, Verb.CANCEL, NOW)
    assert isinstance(cancelled, plan.Advance)
    assert cancelled.release == ("n-002",)
    phases = [n.phase for n in cancelled.rotation.nodes]
    assert phases == [NodePhase.DRAINING, NodePhase.RELEASED, NodePhase.RELEASED]
    refused = plan.command(cancelled.rotation, Verb.RESUME, NOW)
    assert isinstance(refused, str) and refused.startswith("it is cancelled")


def test_resuming_a_failed_rotation_restarts_its_gates_and_its_let_go_nodes() -> None:
    """The operator fixed what kept the pods from running: the failed node is taken up again
    first (its drain and its gate), the nodes let go wait for their turn again."""
    r = rotation(
        node("n-001", NodePhase.RESCHEDULING, gate_started=NOW - TIMEOUT, workloads=(WEB,)),
        node("n-002"),
    )
    failed = plan.advance(r, {"n-001": out(web=1)}, NOW).rotation
    assert failed.phase is Phase.FAILED
    later = NOW + timedelta(hours=1)
    resumed = plan.command(failed, Verb.RESUME, later)
    assert isinstance(resumed, plan.Advance)
    after = resumed.rotation
    assert after.phase is Phase.RUNNING
    assert [n.phase for n in after.nodes] == [NodePhase.PENDING] * 2
    assert plan.candidates(after) == ["n-001"]  # the failed node first, taken up again
    # Started again, it keeps the workloads its gate waits for (its pods are gone now).
    again = plan.start(after, "n-001", Snapshot(True, None, (DB,)), later).rotation
    assert again.node("n-001").workloads == (WEB, DB)


def test_a_cancelled_rotation_still_watches_its_node_out_of_service() -> None:
    r = rotation(
        node("n-001", NodePhase.DRAINING, gate_started=NOW, workloads=(WEB,)), phase=Phase.CANCELLED
    )
    assert plan.next_look(r, NOW) == NOW + plan.GATE_INTERVAL
    done = plan.advance(r, {"n-001": out(web=3)}, NOW).rotation
    assert (done.node("n-001").phase, done.phase) == (NodePhase.DONE, Phase.CANCELLED)
    assert plan.next_look(done, NOW) is None


# -- when to look again ---------------------------------------------------------------------


def test_next_look_every_30_s_out_of_service_every_5_min_waiting_none_when_idle() -> None:
    assert plan.next_look(rotation(node("n", NodePhase.DRAINING)), NOW) == NOW + timedelta(
        seconds=30
    )
    assert plan.next_look(rotation(node("n", NodePhase.WAITING)), NOW) == NOW + timedelta(minutes=5)
    assert plan.next_look(rotation(node("n"), phase=Phase.PAUSED), NOW) is None
    assert plan.next_look(rotation(node("n", NodePhase.DONE), phase=Phase.COMPLETED), NOW) is None


@given(st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=30))
def test_looks_scheduled_out_of_turn_converge_on_one_chain(offsets: list[int]) -> None:
    """Each look asks for the next one 30 s on; extra looks (a node acted on asks for one at
    once) may arrive at any time. However many there are, once they have run, at most one
    look remains scheduled: no chain of looks multiplies."""
    planned: datetime | None = None
    pending = {NOW}
    extra = sorted(NOW + timedelta(seconds=s) for s in offsets)
    for _ in range(4 * len(offsets) + 4):  # bounded: a working rule ends far sooner
        if not extra and len(pending) <= 1:
            break
        now = min(pending | set(extra[:1]))
        if extra and extra[0] == now:
            extra.pop(0)
        pending.discard(now)
        due = now + plan.GATE_INTERVAL
        if plan.needs_scheduling(planned, due, now):
            planned = due
            pending.add(due)
    assert len(pending) <= 1


# -- state ------------------------------------------------------------------------------------


def test_the_state_round_trips_through_json() -> None:
    r = rotation(
        node("n-001", NodePhase.DONE, gate_started=NOW, workloads=(WEB, DB)),
        node("n-002", NodePhase.WAITING),
        max_in_flight=2,
    )
    r = replace(r, next_tick=NOW, reason="x")
    assert from_json(to_json(r)) == r
    assert r.summary() == "running: 1 of 2 node(s) done, 1 in flight (n-002: waiting)"


@pytest.mark.parametrize(
    ("text", "where"),
    [("{}", "spec"), ('{"spec": {"name": "x"}}', "request_id"), ("not json", "state")],
)
def test_an_unreadable_state_is_a_state_error_naming_the_field(text: str, where: str) -> None:
    with pytest.raises(StateError) as error:
        from_json(text)
    assert str(error.value).startswith(where)


# -- issue 22: a rotation never calls a stuck node done ---------------------------------------


def test_a_rotation_with_a_node_not_rotated_completes_with_skips_naming_it() -> None:
    """Only every node done is ``completed``: a skipped node still runs its pods, and the
    docs/migrating.md's next step (scale the group down) would kill them."""
    skipped = replace(node("n-002", NodePhase.SKIPPED), note="NodePool legacy opted out")
    step = plan.finish_if_done(rotation(node("n-001", NodePhase.DONE), skipped), NOW)
    assert step.rotation.phase is Phase.COMPLETED_WITH_SKIPS
    assert not step.rotation.phase.active
    assert step.rotation.reason == (
        "1 of 2 node(s) rotated; not rotated: n-002 skipped (NodePool legacy opted out)"
    )
    (change,) = step.changes
    assert change.warning and not change.ok


def test_a_node_held_back_past_the_health_gate_fails_the_rotation_naming_the_blocker() -> None:
    """The gate's clock starts when the node is first held back (its notice deferred), not
    once it is cordoned: a PDB that never allows fails the rotation after the gate's
    timeout, naming the PDB; no further node is started and the held node's mark is let go."""
    r = rotation(node("n-001", NodePhase.WAITING), node("n-002"), node("n-003"))
    why = "rotation: PDB shop/web allows no disruption now (pod shop/web-1)"
    r = plan.decided(r, "n-001", Outcome.DEFERRED, why, NOW).rotation
    assert r.node("n-001").gate_started == NOW
    later = plan.decided(r, "n-001", Outcome.DEFERRED, why, NOW + TIMEOUT / 2).rotation
    assert later.node("n-001").gate_started == NOW  # first held back, not the latest
    waiting = plan.advance(later, {"n-001": NodeView(True)}, NOW + TIMEOUT - timedelta(seconds=1))
    assert waiting.rotation.node("n-001").phase is NodePhase.WAITING
    step = plan.advance(later, {"n-001": NodeView(True)}, NOW + TIMEOUT)
    assert step.rotation.phase is Phase.FAILED
    assert step.rotation.node("n-001").phase is NodePhase.FAILED
    assert "PDB shop/web allows no disruption now" in step.rotation.reason
    assert step.release == ("n-001",)
    assert plan.candidates(step.rotation) == []
    assert [n.phase for n in step.rotation.nodes[1:]] == [NodePhase.RELEASED] * 2
    # Resumed (the PDB fixed): the node's gate starts again from its next hold-back.
    resumed = plan.command(step.rotation, Verb.RESUME, NOW + TIMEOUT * 2)
    assert not isinstance(resumed, str)
    assert resumed.rotation.node("n-001").gate_started is None


# -- issue 35: waiting is not failing; commands name their rotation --------------------------


def test_a_node_waiting_for_a_window_that_opens_waits_past_the_gate_without_failing() -> None:
    """Issue 35, item 1: a budget of 0 until 17:00 (its window opens then) ended the rotation
    ``failed`` after 10 minutes. A deferral with a known end (``deferred_until``) waits for
    it, without a health gate; one Event says what for and until when."""
    r = rotation(node("n-001", NodePhase.WAITING), node("n-002"))
    opens = NOW + timedelta(hours=3)
    why = "NodePool general budget: 0 allowed; next permitted at 2026-12-01T17:00:00Z"
    step = plan.decided(r, "n-001", Outcome.DEFERRED, why, NOW, opens)
    held = step.rotation.node("n-001")
    assert (held.gate_started, held.waits_until) == (None, opens)
    assert held.note == f"waiting until 2026-12-01T17:05:00Z: {why}"
    (change,) = step.changes
    assert (change.reason, change.ok, change.warning) == (plan.NODE_WAITING, True, False)
    assert "waiting until 2026-12-01T17:05:00Z" in change.message and "budget" in change.message
    # Decided again with the same end: no second Event.
    again = plan.decided(step.rotation, "n-001", Outcome.DEFERRED, why, NOW + TIMEOUT, opens)
    assert again.changes == ()
    # Hours later, far past the gate's timeout: still waiting, the rotation running.
    late = plan.advance(again.rotation, {"n-001": NodeView(True)}, opens - timedelta(seconds=1))
    assert late.rotation.node("n-001").phase is NodePhase.WAITING
    assert late.rotation.phase is Phase.RUNNING and late.changes == ()
    # The window opens and it is acted on: out of service, nothing left of the wait.
    acted = plan.decided(late.rotation, "n-001", Outcome.ACTED, "allowed", opens)
    assert acted.rotation.node("n-001").waits_until is None


def test_a_known_end_then_an_open_ended_blocker_starts_the_gate_then() -> None:
    r = rotation(node("n-001", NodePhase.WAITING))
    r = plan.decided(r, "n-001", Outcome.DEFERRED, "dnd", NOW, NOW + TIMEOUT).rotation
    pdb = "PDB shop/web allows no disruption now"
    r = plan.decided(r, "n-001", Outcome.DEFERRED, pdb, NOW + TIMEOUT).rotation
    assert (r.node("n-001").gate_started, r.node("n-001").waits_until) == (NOW + TIMEOUT, None)
    failed = plan.advance(r, {"n-001": NodeView(True)}, NOW + 2 * TIMEOUT)
    assert failed.rotation.phase is Phase.FAILED and pdb in failed.rotation.reason
    # A deferral whose "end" is already past is no known end either.
    r = rotation(node("n-001", NodePhase.WAITING))
    r = plan.decided(r, "n-001", Outcome.DEFERRED, pdb, NOW, NOW).rotation
    assert (r.node("n-001").gate_started, r.node("n-001").waits_until) == (NOW, None)


def test_a_paused_wake_up_is_due_at_the_same_instant_whenever_it_is_handled() -> None:
    """Issue 35, item 4: a paused rotation's waiting node got its wake-up twice (17:05:00 and
    17:05:01): the next one was counted from the clock, not from the wake-up's due time."""
    due = NOW
    interval = plan.WAITING_INTERVAL
    assert plan.next_after(due, NOW, interval) == NOW + interval
    assert plan.next_after(due, NOW + timedelta(seconds=1), interval) == NOW + interval
    assert plan.next_after(due, NOW + interval, interval) == NOW + 2 * interval
    assert plan.next_after(due, NOW - timedelta(minutes=1), interval) == NOW + interval


def test_a_command_for_another_uid_or_older_than_the_rotation_is_refused() -> None:
    """Issue 35, item 4: a Resume dated a week before the rotation passed its checkpoint; a
    Rollback dated a week earlier rolled it back; a command bound only to the name."""
    r = rotation(node("n-001", NodePhase.DONE), phase=Phase.PAUSED)
    week = timedelta(days=7)
    assert plan.refusal(r, Verb.RESUME, r.uid, NOW) is None
    assert r.uid == "request-1"  # no uid in the request: its event's id
    other = plan.refusal(r, Verb.RESUME, "another-uid", NOW)
    assert other is not None and "for rotation uid another-uid" in other
    old = plan.refusal(r, Verb.ROLLBACK, r.uid, r.requested_at - week)
    assert old is not None and "before the rotation was requested" in old
    commanded = replace(r, commanded_at=NOW)
    stale = plan.refusal(commanded, Verb.PAUSE, r.uid, NOW - timedelta(seconds=1))
    assert stale is not None and "before the last command applied" in stale
    assert plan.refusal(commanded, Verb.PAUSE, r.uid, NOW) is None
    named = replace(r, spec=replace(r.spec, uid="u-1"))
    assert named.uid == "u-1" and plan.refusal(named, Verb.PAUSE, "u-1", NOW) is None


@pytest.mark.parametrize("phase", [Phase.COMPLETED, Phase.COMPLETED_WITH_SKIPS])
def test_a_completed_rotation_cannot_be_rolled_back(phase: Phase) -> None:
    r = rotation(node("n-001", NodePhase.DONE), phase=phase)
    why = plan.refusal(r, Verb.ROLLBACK, r.uid, NOW)
    assert why is not None and "cannot be rolled back" in why and "kubectl uncordon" in why
    assert plan.refusal(r, Verb.PAUSE, r.uid, NOW) is None  # weighed (and ignored) later


@pytest.mark.parametrize(("waves", "wave"), [(("1",), 1), (("1", "100%"), 1), (("50%", "3"), 1)])
def test_no_checkpoint_after_the_last_wave(waves: tuple[str, ...], wave: int) -> None:
    """Issue 35, item 5 (a surviving mutant, ``limit >= len(nodes)``): once the last wave's
    nodes are done there is nothing to resume into, so no extra checkpoint (nor Event)."""
    r = rotation(*(node(f"n-00{i}", NodePhase.DONE) for i in range(1, 4)))
    r = replace(r, spec=replace(r.spec, waves=waves), wave=wave)
    assert plan.wave_limit(r) == 3
    step = plan.checkpoint(r, NOW)
    assert (step.rotation, step.changes) == (r, ())


def test_the_gate_counts_from_the_act_not_from_an_earlier_hold_back() -> None:
    """Issue 35, item 1: the health gate applies once a node is taken out of service. A node
    held back 9 minutes by a PDB waiting for the previous node's pods, then drained, failed
    at once in the 200-node rehearsal (its gate counted from the hold-back)."""
    pdb = "PDB shop/web109 allows no disruption now"
    for claim in (None, "claim-1"):
        r = rotation(node("n-001", NodePhase.WAITING, claim=claim))
        r = plan.decided(r, "n-001", Outcome.DEFERRED, pdb, NOW).rotation
        later = NOW + TIMEOUT - timedelta(minutes=1)
        acted = plan.decided(r, "n-001", Outcome.ACTED, "allowed", later).rotation
        assert acted.node("n-001").gate_started == (later if claim is None else None)


def test_another_blocker_starts_the_hold_back_clock_again() -> None:
    """One blocker giving way to the next is progress (a ring of PDBs clearing one by one):
    only the same blocker past the gate fails the node."""
    r = rotation(node("n-001", NodePhase.WAITING))
    r = plan.decided(r, "n-001", Outcome.DEFERRED, "PDB shop/a allows no disruption", NOW).rotation
    later = NOW + TIMEOUT / 2
    r = plan.decided(
        r, "n-001", Outcome.DEFERRED, "PDB shop/b allows no disruption", later
    ).rotation
    assert r.node("n-001").gate_started == later
    kept = plan.advance(r, {"n-001": NodeView(True)}, NOW + TIMEOUT)
    assert kept.rotation.phase is Phase.RUNNING
    failed = plan.advance(r, {"n-001": NodeView(True)}, later + TIMEOUT)
    assert failed.rotation.phase is Phase.FAILED and "PDB shop/b" in failed.rotation.reason

"""What a rotation does next. Pure: no I/O, the clock passed in.

The caller reads the cluster (``observe``), this judges what it read, and the caller writes
the result (``store``) and carries it out: a node to start becomes a notice of kind
``rotation`` that the pipeline triages, resolves, decides and acts on like any AWS warning
(budgets, windows, do-not-disrupt, PodDisruptionBudgets, replace before delete).

What is decided here and nowhere else:

- a node's progress, from what the cluster shows: out of service (Lifeboat's taint), its
  drain started (no NodeClaim, or its NodeClaim being deleted), its pods gone;
- the **health gate**: a drained node is done when every workload that had pods on it has
  as many pods Ready elsewhere as it had Ready before; if that takes longer than the
  request's timeout, counted from the start of the drain, the rotation stops (``failed``)
  and touches no further node, until it is resumed (the failed gates start again). A node
  held back before it is taken out of service waits, gate-free, for a blocker with a known
  end (a budget window opening, a do-not-disrupt expiring); a blocker with no known end (a
  PDB that allows nothing, do-not-disrupt without expiry) holding it past the timeout fails
  it the same way;
- which pending nodes start: only while ``running``, oldest first, up to ``maxInFlight``
  nodes in flight (waiting ones included);
- when to look again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from lifeboat.decide.model import RECHECK_INTERVAL
from lifeboat.errors import BrokenInvariant
from lifeboat.model.instants import format_instant
from lifeboat.model.report import Outcome
from lifeboat.rotation.model import NodePhase, Phase, Rotation, RotationNode, Workload
from lifeboat.rotation.request import Verb

# How often nodes out of service are looked at (their drain, then their health gate).
GATE_INTERVAL = timedelta(seconds=30)
# Nodes whose notice waits (a window, a budget, do-not-disrupt) come back through their own
# wake-up, which looks at the rotation at once when the node is acted on; this is the net.
WAITING_INTERVAL = RECHECK_INTERVAL


@dataclass(frozen=True)
class NodeView:
    """What the cluster shows of a node in flight (``observe.view``)."""

    present: bool  # the node, with the same instance, still exists
    out_of_service: bool = False  # it carries Lifeboat's NoSchedule taint: acted on
    drain_started: bool = False  # its pods are leaving: no NodeClaim, or its claim is going
    pods_left: tuple[str, ...] = ()  # pods a drain must still evict ("namespace/name")
    ready_elsewhere: Mapping[str, int] = field(default_factory=dict)  # by workload uid
    # The nodes its workloads' Ready pods run on elsewhere, with their AMI ("" unknown):
    # filled when the request names allowed AMIs (the health gate's AMI validation).
    host_amis: Mapping[str, str] = field(default_factory=dict)
    # A node held back with no known end: its workloads' pods no node took yet, and why
    # (a PDB that allows nothing because its pods wait for a place is not the problem).
    unplaced: tuple[str, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    """A pending node as read just before it is started (``observe.snapshot``)."""

    present: bool
    going: str | None = None  # why it is already going (another notice, Karpenter, deleted)
    workloads: tuple[Workload, ...] = ()
    unmanaged: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    """Something worth an Event and a line in the report. ``node`` None: the rotation."""

    reason: str  # the Kubernetes Event's reason
    message: str
    node: RotationNode | None = None
    warning: bool = False
    # Progress (a node done, the rotation completed, a command applied), or not: a node
    # skipped, a health gate failed, the rotation stopped.
    ok: bool = True


@dataclass(frozen=True)
class Advance:
    rotation: Rotation
    changes: tuple[Change, ...] = ()
    release: tuple[str, ...] = ()  # waiting nodes let go: their mark is to be cleared
    restore: tuple[str, ...] = ()  # nodes a rollback returns to service


def advance(rotation: Rotation, views: Mapping[str, NodeView], now: datetime) -> Advance:
    """Move the nodes in flight on, from ``views`` (those not viewed stay as they are);
    stop the rotation if a health gate failed; let waiting nodes go if it stopped."""
    changes: list[Change] = []
    moved: list[RotationNode] = []
    for node in rotation.in_flight:
        view = views.get(node.name)
        if view is None:
            continue
        after, change = _progress(
            node, view, rotation.spec.health_timeout, now, rotation.spec.allowed_amis
        )
        if node.phase is NodePhase.WAITING and rotation.phase is not Phase.RUNNING:
            # Held by the pause, not by a blocker: no gate verdict on it.
            after, change = node, None
        moved.append(after)
        if change is not None:
            changes.append(change)
    rotation = rotation.with_nodes(moved)
    failed = [c for c in changes if c.reason in (HEALTH_GATE_FAILED, NODE_BLOCKED)]
    blocked = tuple(c.node.name for c in changes if c.reason == NODE_BLOCKED and c.node)
    if failed and rotation.phase.active:
        why = f"health gate of {failed[0].message}"
        rotation = replace(rotation, phase=Phase.FAILED, reason=why)
        stopped = f"stopped, touching no further node: {why}"
        changes.append(Change(ROTATION_FAILED, stopped, None, warning=True, ok=False))
    rotation, released = _release_if_stopped(rotation, now)
    # A node that failed while held back was never taken out of service: its waiting mark
    # goes with the rest.
    return Advance(rotation, tuple(changes), released + blocked)


def candidates(rotation: Rotation) -> list[str]:
    """The pending nodes to start now: oldest first, as many as free slots allow, within
    the current wave."""
    if rotation.phase is not Phase.RUNNING:
        return []
    slots = rotation.spec.max_in_flight - len(rotation.in_flight)
    limit = wave_limit(rotation)
    pending = [
        node.name
        for index, node in enumerate(rotation.nodes)
        if node.phase is NodePhase.PENDING and index < limit
    ]
    return pending[: max(slots, 0)]


def wave_limit(rotation: Rotation) -> int:
    """How many of the rotation's nodes (in their order) the current wave may have started:
    the waves are cumulative sizes (``1``, ``10%``: rounded up, at least one more node than
    the wave before); past the last wave, all of them."""
    total = len(rotation.nodes)
    limit = 0
    for index, size in enumerate(rotation.spec.waves):
        wanted = -(-int(size[:-1]) * total // 100) if size.endswith("%") else int(size)
        limit = min(total, max(limit + 1, wanted))
        if index == rotation.wave:
            return limit
    return total


def checkpoint(rotation: Rotation, now: datetime) -> Advance:
    """At the end of a wave with nodes left for the next: pause (the checkpoint) until the
    operator resumes (the next wave) or rolls back; an Event says so."""
    waves = rotation.spec.waves
    if not waves or rotation.phase is not Phase.RUNNING or rotation.in_flight:
        return Advance(rotation)
    limit = wave_limit(rotation)
    if limit >= len(rotation.nodes) or any(
        node.phase is NodePhase.PENDING for node in rotation.nodes[:limit]
    ):
        return Advance(rotation)
    done = len([n for n in rotation.nodes[:limit] if n.phase is NodePhase.DONE])
    number = rotation.wave + 1
    why = (
        f"checkpoint after wave {number} of {max(len(waves), number + 1)} ({done} of {limit} "
        f"node(s) done, {len(rotation.nodes) - limit} to go): resume to go on, roll back to undo"
    )
    # Nothing is looked at until the operator answers: no next look to show.
    paused = replace(
        rotation, phase=Phase.PAUSED, reason=why, wave=rotation.wave + 1, next_tick=None
    )
    return Advance(paused, (Change(ROTATION_CHECKPOINT, why),))


def start(rotation: Rotation, name: str, snapshot: Snapshot, now: datetime) -> Advance:
    """``name`` as read just before it is started: waiting for its notice's decision, or
    skipped when it is gone or already going (nothing for the rotation to do there)."""
    node = rotation.node(name)
    if not snapshot.present:
        after = _to(node, NodePhase.SKIPPED, now, "gone before its turn")
    elif snapshot.going is not None:
        after = _to(node, NodePhase.SKIPPED, now, f"already going: {snapshot.going}")
    else:
        # A node taken up again keeps what it had (its evicted pods are gone from it now).
        known = {w.uid for w in node.workloads}
        after = replace(
            _to(node, NodePhase.WAITING, now, "started"),
            workloads=node.workloads + tuple(w for w in snapshot.workloads if w.uid not in known),
            unmanaged=tuple(dict.fromkeys(node.unmanaged + snapshot.unmanaged)),
        )
    change = None
    if after.phase is NodePhase.SKIPPED:
        change = Change(NODE_SKIPPED, f"{name} skipped: {after.note}", after, ok=False)
    return Advance(rotation.with_nodes([after]), (change,) if change else ())


def decided(
    rotation: Rotation,
    name: str,
    outcome: Outcome,
    reason: str,
    now: datetime,
    until: datetime | None = None,
) -> Advance:
    """What a waiting node's notice was decided: acted on takes it out of service now (a node
    group's drain, and its health gate's clock, start with that act; a Karpenter node's
    replacement launches); let go (ignored: an opted-out pool, patience run out, ...) skips
    it; deferred leaves it waiting, the reason its latest word. ``until``: a deferral's known
    end (a window opens, a do-not-disrupt expires): the node waits for it without a health
    gate, and a Change says what it waits for and until when (once per end)."""
    node = rotation.node(name)
    if node.phase is not NodePhase.WAITING:
        return Advance(rotation)  # the cluster moved it on already
    if outcome is Outcome.ACTED:
        # Out of service now: the health gate counts from here (a Karpenter node's from its
        # drain), whatever held the node back before.
        if node.nodeclaim is not None:
            after = replace(_to(node, NodePhase.REPLACING, now, reason), gate_started=None)
        else:
            after = replace(_to(node, NodePhase.DRAINING, now, reason), gate_started=now)
        return Advance(rotation.with_nodes([replace(after, waits_until=None)]))
    if outcome is Outcome.IGNORED:
        after = replace(_to(node, NodePhase.SKIPPED, now, reason), waits_until=None)
        skipped = Change(NODE_SKIPPED, f"{name} skipped: {reason}", after, ok=False)
        return Advance(rotation.with_nodes([after]), (skipped,))
    if until is not None and until > now:
        # A blocker that ends: waiting is what a rotation across days is for. No gate.
        note = f"waiting until {format_instant(until)}: {reason}"
        held = replace(node, note=note, gate_started=None, waits_until=until)
        if node.waits_until == until:
            return Advance(rotation.with_nodes([held]))
        waits = Change(NODE_WAITING, f"{name} {note}", held)
        return Advance(rotation.with_nodes([held]), (waits,))
    # Held back by a blocker with no known end: the health gate's clock starts now (a PDB
    # that never allows, a do-not-disrupt that never ends fail it, naming it), and again
    # when another blocker holds it (the one before gave way: the rotation is moving).
    same = node.gate_started is not None and node.note == reason
    started = node.gate_started if same else now
    held = replace(node, note=reason, gate_started=started, waits_until=None)
    return Advance(rotation.with_nodes([held]))


def finish_if_done(rotation: Rotation, now: datetime) -> Advance:
    """A rotation with nothing pending or in flight is over (paused or running):
    ``completed`` only when every node is done; otherwise ``completed-with-skips``, naming
    the nodes not rotated and why, so nobody scales the group down over pods still on them."""
    if not rotation.phase.active or rotation.in_flight or rotation.in_phase(NodePhase.PENDING):
        return Advance(rotation)
    done = len(rotation.in_phase(NodePhase.DONE))
    why = f"{done} of {len(rotation.nodes)} node(s) rotated"
    left = [node for node in rotation.nodes if node.phase is not NodePhase.DONE]
    if not left:
        completed = replace(rotation, phase=Phase.COMPLETED, reason=why)
        return Advance(completed, (Change(ROTATION_COMPLETED, f"completed: {why}"),))
    why += "; not rotated: " + "; ".join(f"{n.name} {n.phase} ({n.note})" for n in left)
    partial = replace(rotation, phase=Phase.COMPLETED_WITH_SKIPS, reason=why)
    change = Change(ROTATION_COMPLETED, f"completed with skips: {why}", warning=True, ok=False)
    return Advance(partial, (change,))


def refusal(rotation: Rotation, verb: Verb, uid: str, sent: datetime) -> str | None:
    """Why a command is refused before it is weighed (None: it is not): it names another
    rotation of that name (its uid), it was sent before the rotation was requested or
    before the last command applied, or it rolls back a rotation that completed."""
    if uid != rotation.uid:
        return (
            f"the command is for rotation uid {uid}, but rotation {rotation.spec.name} is uid "
            f"{rotation.uid} (requested {format_instant(rotation.requested_at)}): a command "
            "for an earlier or another rotation of that name; `lifeboat status` shows the uid"
        )
    if sent < rotation.requested_at:
        return (
            f"the command was sent at {format_instant(sent)}, before the rotation was "
            f"requested at {format_instant(rotation.requested_at)}"
        )
    if rotation.commanded_at is not None and sent < rotation.commanded_at:
        return (
            f"the command was sent at {format_instant(sent)}, before the last command "
            f"applied (sent at {format_instant(rotation.commanded_at)}): out of order"
        )
    if verb is Verb.ROLLBACK and rotation.phase in (Phase.COMPLETED, Phase.COMPLETED_WITH_SKIPS):
        return (
            f"it is {rotation.phase}: a completed rotation cannot be rolled back (its nodes "
            "were drained and the group may be scaled down already); to go back, uncordon "
            "the nodes still there (kubectl uncordon) or request a new rotation the other way"
        )
    return None


def command(rotation: Rotation, verb: Verb, now: datetime) -> Advance | str:
    """Pause, resume or cancel ``rotation``; a string says why the command changes nothing."""
    allowed = {
        Verb.PAUSE: ({Phase.RUNNING}, Phase.PAUSED),
        Verb.RESUME: ({Phase.PAUSED, Phase.FAILED}, Phase.RUNNING),
        Verb.CANCEL: ({Phase.RUNNING, Phase.PAUSED}, Phase.CANCELLED),
    }
    if verb not in allowed:
        return f"{verb} is not a command for an existing rotation"
    sources, target = allowed[verb]
    if rotation.phase not in sources:
        return f"it is {rotation.phase}" + (f" ({rotation.reason})" if rotation.reason else "")
    if rotation.phase is Phase.FAILED:
        rotation = _retry_failed(rotation, now)
    changed = replace(rotation, phase=target, reason=f"{verb} requested at {format_instant(now)}")
    changed, released = _release_if_stopped(changed, now)
    what = {
        Verb.PAUSE: "paused: no further node is started; nodes out of service finish",
        Verb.RESUME: "resumed",
        Verb.CANCEL: "cancelled: waiting nodes let go; nodes out of service finish",
    }[verb]
    return Advance(changed, (Change(_COMMAND_REASONS[verb], what),), released)


# Nodes the rotation took out of service (cordoned, tainted): what a rollback returns.
_TAKEN_OUT = (
    NodePhase.REPLACING,
    NodePhase.DRAINING,
    NodePhase.RESCHEDULING,
    NodePhase.FAILED,
    NodePhase.DONE,
)


def rollback(rotation: Rotation, now: datetime) -> Advance | str:
    """Cancel what is pending (waiting nodes let go, pending ones released) and return every
    node the rotation took out of service to service (``restore``: the caller uncordons
    them, removes Lifeboat's taints and load balancer exclusion, and says which are gone).
    From any phase but rolled back: a failed or completed rotation is undone as well."""
    if rotation.phase is Phase.ROLLED_BACK:
        return "it is rolled back already"
    taken = rotation.in_phase(*_TAKEN_OUT)
    waiting = rotation.in_phase(NodePhase.WAITING, NodePhase.PENDING)
    released = [_to(n, NodePhase.RELEASED, now, "rotation rolled back") for n in waiting]
    restored = [_to(n, NodePhase.RESTORED, now, "returned to service by a rollback") for n in taken]
    why = f"rollback requested at {format_instant(now)}"
    changed = replace(rotation.with_nodes(released + restored), phase=Phase.ROLLED_BACK, reason=why)
    what = (
        f"rolled back: {len(waiting)} node(s) not started let go; {len(taken)} node(s) it "
        "took out of service to return to service (each reported)"
    )
    return Advance(
        changed,
        (Change(ROTATION_ROLLED_BACK, what),),
        tuple(n.name for n in waiting if n.phase is NodePhase.WAITING),
        tuple(n.name for n in taken),
    )


def next_look(rotation: Rotation, now: datetime) -> datetime | None:
    """When the rotation must be looked at again (None: nothing to watch until a command)."""
    if any(node.phase.out_of_service for node in rotation.nodes):
        return now + GATE_INTERVAL
    if rotation.in_flight:
        return now + WAITING_INTERVAL
    if rotation.phase is Phase.RUNNING and rotation.in_phase(NodePhase.PENDING):
        return now + GATE_INTERVAL
    return None


def needs_scheduling(planned: datetime | None, due: datetime | None, now: datetime) -> bool:
    """Whether a look at ``due`` must be scheduled, given the one ``planned`` already (the
    state's ``next_tick``). Looks scheduled out of turn (a node just acted on asks for one
    at once) must not each start a chain of their own: a look already planned in the
    future, no later than ``due``, makes another one needless, so chains converge."""
    if due is None:
        return False
    return not (planned is not None and now < planned <= due)


def next_after(due: datetime, now: datetime, interval: timedelta) -> datetime:
    """The first of ``due + interval``, ``due + 2 * interval``, ... after ``now``: the same
    instant for every delivery of one wake-up, whenever each is handled."""
    steps = max(1, (now - due) // interval + 1)
    return due + steps * interval


def progress_text(rotation: Rotation) -> str:
    """One line on the nodes in flight, for reports: what each waits for."""
    flying = rotation.in_flight
    if not flying:
        return rotation.summary()
    return "; ".join(f"{node.name}: {node.note or node.phase}" for node in flying)


# -- a node in flight ---------------------------------------------------------------------------

NODE_DONE = "RotationNodeDone"
NODE_SKIPPED = "RotationNodeSkipped"
HEALTH_GATE_FAILED = "RotationHealthGateFailed"
NODE_BLOCKED = "RotationNodeBlocked"  # held back (never cordoned) past the health gate
NODE_WAITING = "RotationNodeWaiting"  # held back until a known end (a window, an expiry)
ROTATION_FAILED = "RotationFailed"
ROTATION_COMPLETED = "RotationCompleted"
ROTATION_ROLLED_BACK = "RotationRolledBack"
ROTATION_CHECKPOINT = "RotationCheckpoint"
NODE_RESTORED = "RotationNodeRestored"
NODE_NOT_RESTORED = "RotationNodeNotRestored"
_COMMAND_REASONS = {
    Verb.PAUSE: "RotationPaused",
    Verb.RESUME: "RotationResumed",
    Verb.CANCEL: "RotationCancelled",
}


def _progress(
    node: RotationNode,
    view: NodeView,
    timeout: timedelta,
    now: datetime,
    allowed_amis: tuple[str, ...] = (),
) -> tuple[RotationNode, Change | None]:
    if view.present and not view.out_of_service:
        if node.phase.out_of_service:
            # Someone took Lifeboat's taint off: the node is back in service, not ours.
            why = "taken back into service (Lifeboat's taint was removed)"
            after = _to(node, NodePhase.SKIPPED, now, why)
            return after, Change(NODE_SKIPPED, f"{node.name} skipped: {why}", after, ok=False)
        return _held_back(node, timeout, now, view.unplaced)  # its notice has not acted
    phase = node.phase
    if not view.present:
        phase = NodePhase.RESCHEDULING  # gone: whatever was on it left
    elif phase is NodePhase.WAITING:
        phase = NodePhase.DRAINING if view.drain_started else NodePhase.REPLACING
    elif phase is NodePhase.REPLACING and view.drain_started:
        phase = NodePhase.DRAINING
    if phase is NodePhase.DRAINING and not view.pods_left:
        phase = NodePhase.RESCHEDULING
    if phase is not node.phase:
        node = replace(node, phase=phase, since=now)
    if phase is NodePhase.REPLACING:
        return replace(node, note="out of service; its replacement is launching"), None
    if node.gate_started is None:
        node = replace(node, gate_started=now)
    return _health_gate(node, view, timeout, now, allowed_amis)


def _held_back(
    node: RotationNode, timeout: timedelta, now: datetime, unplaced: tuple[str, ...] = ()
) -> tuple[RotationNode, Change | None]:
    """A waiting node held back past the health gate's timeout by a blocker with no known
    end fails, naming what held it (its notice's latest deferral: the PDB, the pod with
    do-not-disrupt without expiry). A node waiting for a known end has no gate running."""
    if node.phase is not NodePhase.WAITING or node.gate_started is None:
        return node, None
    if now < node.gate_started + timeout:
        return node, None
    blocker = node.note or "its notice was deferred"
    if unplaced:
        # What the blocker waits for: pods that cannot be placed, not the PDB itself.
        blocker = f"pods it waits for cannot be placed: {'; '.join(unplaced)} (so: {blocker})"
    why = f"{node.name} failed after {_duration(timeout)} held back, never drained: {blocker}"
    after = _to(node, NodePhase.FAILED, now, f"held back, never drained: {blocker}")
    return after, Change(NODE_BLOCKED, why, after, warning=True, ok=False)


def _health_gate(
    node: RotationNode,
    view: NodeView,
    timeout: timedelta,
    now: datetime,
    allowed_amis: tuple[str, ...] = (),
) -> tuple[RotationNode, Change | None]:
    if node.gate_started is None:
        raise BrokenInvariant("lifeboat.rotation.plan._health_gate: node.gate_started is None")
    short = [
        (w, view.ready_elsewhere.get(w.uid, 0))
        for w in node.workloads
        if view.ready_elsewhere.get(w.uid, 0) < w.ready_before
    ]
    left = view.pods_left if view.present else ()
    if not left and not short and allowed_amis:
        # AMI validation: the load went to nodes running an allowed AMI, or the gate fails
        # at once (waiting would not change a node's AMI).
        wrong = sorted(
            f"{host} ({ami or 'AMI unknown'})"
            for host, ami in view.host_amis.items()
            if ami not in allowed_amis
        )
        if wrong:
            what = f"its pods run on node(s) not on an allowed AMI: {', '.join(wrong)}"
            after = _to(node, NodePhase.FAILED, now, "health gate failed: " + what)
            why = f"{node.name} failed: {what} (allowed: {', '.join(allowed_amis)})"
            return after, Change(HEALTH_GATE_FAILED, why, after, warning=True, ok=False)
    if not left and not short:
        moved = sum(w.on_node for w in node.workloads)
        text = (
            f"drained; its {moved} pod(s) of {len(node.workloads)} workload(s) run Ready elsewhere"
        )
        if node.unmanaged:
            text += f" ({len(node.unmanaged)} pod(s) without a controller not recreated)"
        after = _to(node, NodePhase.DONE, now, text + ": health gate passed")
        return after, Change(NODE_DONE, f"{node.name} {after.note}", after)
    missing = []
    if left:
        missing.append(f"{len(left)} pod(s) still on the node ({', '.join(left[:3])})")
    missing += [f"{w.describe()} {ready} of {w.ready_before} Ready elsewhere" for w, ready in short]
    if short and view.unplaced:
        missing.append(f"pods that cannot be placed: {'; '.join(view.unplaced)}")
    deadline = node.gate_started + timeout
    if now >= deadline:
        why = f"{node.name} failed after {_duration(timeout)}: " + "; ".join(missing)
        after = _to(node, NodePhase.FAILED, now, "health gate failed: " + "; ".join(missing))
        return after, Change(HEALTH_GATE_FAILED, why, after, warning=True, ok=False)
    what = "draining" if left else "rescheduling"
    note = f"{what}: " + "; ".join(missing) + f"; health gate until {format_instant(deadline)}"
    return replace(node, note=note), None


def _retry_failed(rotation: Rotation, now: datetime) -> Rotation:
    """Resuming a failed rotation (the operator fixed what kept the pods from running): its
    failed and let-go nodes wait for their turn again, the failed ones first (they were
    started first) and with the workloads they had, so their drain is taken up again and
    their health gate waits for what it waited for, from now."""
    again = [
        replace(_to(node, NodePhase.PENDING, now, "to be taken up again"), gate_started=None)
        for node in rotation.in_phase(NodePhase.FAILED, NodePhase.RELEASED)
    ]
    return rotation.with_nodes(again)


def _release_if_stopped(rotation: Rotation, now: datetime) -> tuple[Rotation, tuple[str, ...]]:
    """A cancelled or failed rotation lets its waiting nodes go (never touched: only their
    waiting mark is to be cleared); nodes already out of service finish their drain."""
    if rotation.phase not in (Phase.CANCELLED, Phase.FAILED):
        return rotation, ()
    waiting = rotation.in_phase(NodePhase.WAITING, NodePhase.PENDING)
    released = [_to(n, NodePhase.RELEASED, now, f"rotation {rotation.phase}") for n in waiting]
    names = tuple(n.name for n in waiting if n.phase is NodePhase.WAITING)
    return rotation.with_nodes(released), names


def _to(node: RotationNode, phase: NodePhase, now: datetime, note: str) -> RotationNode:
    return replace(node, phase=phase, since=now, note=note)


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"

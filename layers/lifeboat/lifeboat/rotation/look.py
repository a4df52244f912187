"""One look at a rotation: read the cluster, judge (``plan``), write the state, act.

A look runs when a rotation is requested or resumed, and then whenever its next look comes
due (a wake-up of task ``rotate``, through the queue like every wake-up), or at once when
one of its nodes was just acted on. In order:

1. read the state and the nodes in flight, move them on, apply the health gate, pick the
   nodes to start and write it all back, guarded by the ConfigMap's ``resourceVersion``
   (a concurrent command or look makes this step start over, never both win);
2. let go the waiting nodes of a rotation that stopped (clear their waiting mark);
3. hand each started node to the pipeline as a notice of kind ``rotation``: the same
   triage, resolve, decide (budgets, windows, do-not-disrupt) and act as an AWS warning;
4. write what was decided about them, schedule the next look, record Events.

A node is started (written ``waiting``, note ``started``) before its notice is handed over,
so a look that dies in between leaves it to the next look, which hands it over again:
deciding again from scratch is what every notice does, and every action is idempotent.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

from lifeboat.decide import Decision, Step
from lifeboat.kube.client import KubeApi
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target
from lifeboat.rotation import observe, plan, store
from lifeboat.rotation.model import NodePhase, Phase, Rotation, RotationNode
from lifeboat.telemetry.recorder import EVENT_NAMESPACE, object_event, record_event
from lifeboat.wakeup.codec import Task, Wakeup, WakeupSink

# The note of a node started whose notice was not decided yet: "started by <look>".
STARTED = "started by "

HandleNotices = Callable[[list[Notice]], list[Report]]
# Carries out a let-go decision on a node (the flow's actor, lent by the pipeline): the
# rotation receives it rather than reaching up into the flow.
LetGo = Callable[[KubeApi, Notice, Target, Decision, datetime], object]


@dataclass(frozen=True)
class Context:
    """What a look works with: one cluster, one instant."""

    kube: KubeApi
    namespace: str
    settings: Settings
    now: datetime
    handle: HandleNotices
    let_go: LetGo
    wakeups: WakeupSink | None
    cluster: str | None
    # DescribeInstances, for the health gate's AMI validation (allowed AMIs).
    describe: observe.Describe | None = None


def look(ctx: Context, name: str, request_id: str) -> list[Report]:
    """Look at rotation ``name`` (of request ``request_id``) once; its reports.

    One read and at most one write of the state when no node is started; a second write
    records what the pipeline decided about the nodes this look started."""
    me = uuid.uuid4().hex[:12]  # this look: it hands over the nodes it started, not others'
    progress = partial(_progress, ctx, request_id, me)
    try:
        stored, first = store.update(ctx.kube, ctx.namespace, name, progress)
    except store.Gone:
        first = None
    if first is None:
        why = f"rotation {name}: gone (deleted, or replaced by a newer request): nothing to do"
        return [Report(request_id, str(Kind.ROTATION), Outcome.IGNORED, why)]
    changes = list(first.changes)
    release(ctx, stored.rotation, first.release, why=f"rotation {name} {stored.rotation.phase}")
    reports = _hand_over(ctx, stored.rotation, me)
    if reports:
        settle = partial(_settle, ctx, reports)
        stored, settled = store.update(ctx.kube, ctx.namespace, name, settle)
        changes += settled
    record_changes(ctx, stored.rotation, changes)
    own = [change_report(stored.rotation, change) for change in changes]
    if not own and not reports:
        own = [_waiting_report(stored.rotation)]
    return own + reports


def _progress(
    ctx: Context, request_id: str, me: str, current: store.Stored
) -> tuple[Rotation | None, plan.Advance | None]:
    """Step 1 of a look, as one read-modify-write of the state: move the nodes in flight
    on, start the next ones, pause at a wave's end, finish when done (None, None: the
    rotation is another request's now; None and a step: nothing changed, no write)."""
    now = ctx.now
    rotation = current.rotation
    if rotation.request_id != request_id:
        return None, None
    step = plan.advance(rotation, _views(ctx, rotation), now)
    rotation, started = _start_nodes(ctx, step.rotation, me)
    paused = plan.checkpoint(rotation, now)  # the end of a wave: pause there
    finished = plan.finish_if_done(paused.rotation, now)
    rotation = finished.rotation
    if not _to_hand_over(rotation, me, now):  # nothing for the pipeline: schedule now
        rotation = _schedule_next(ctx, rotation, current.rotation.next_tick, acted=False)
    changes = (*step.changes, *started, *paused.changes, *finished.changes)
    step = plan.Advance(rotation, changes, step.release)
    if rotation == current.rotation:
        return None, step  # nothing changed: no write
    return store.stamped(rotation, now), step


def _views(ctx: Context, rotation: Rotation) -> dict[str, plan.NodeView]:
    """The nodes in flight as the cluster shows them; with their hosts' AMIs once drained,
    when the health gate checks allowed AMIs."""
    views = {n.name: observe.view(ctx.kube, n) for n in rotation.in_flight}
    if not rotation.spec.allowed_amis or ctx.describe is None:
        return views
    describe = ctx.describe
    return {
        name: replace(v, host_amis=observe.host_amis(ctx.kube, rotation.node(name), describe))
        if v.present and v.out_of_service and not v.pods_left
        else v
        for name, v in views.items()
    }


def _start_nodes(ctx: Context, rotation: Rotation, me: str) -> tuple[Rotation, list[plan.Change]]:
    """Start the nodes whose turn it is, marking those left waiting as started by ``me``
    (this look hands them to the pipeline)."""
    changes: list[plan.Change] = []
    for _ in rotation.nodes:  # bounded: each round starts or skips at least one node
        names = plan.candidates(rotation)
        if not names:
            break
        for node_name in names:
            snap = observe.snapshot(ctx.kube, rotation.node(node_name))
            started = plan.start(rotation, node_name, snap, ctx.now)
            rotation = started.rotation
            if rotation.node(node_name).phase is NodePhase.WAITING:
                mine = replace(rotation.node(node_name), note=STARTED + me)
                rotation = rotation.with_nodes([mine])
            changes += started.changes
    return rotation, changes


def _settle(
    ctx: Context, reports: Sequence[Report], current: store.Stored
) -> tuple[Rotation | None, list[plan.Change]]:
    """Step 4 of a look: write what the pipeline decided about the nodes this look started,
    and schedule the next look (soon, when a node was acted on)."""
    acted = any(r.outcome is Outcome.ACTED for r in reports)
    rotation, more = current.rotation, list[plan.Change]()
    for report in reports:
        node = _node_of(rotation, report.instance_id)
        if node is not None and node.note.startswith(STARTED):
            step = plan.decided(
                rotation, node.name, report.outcome, report.reason, ctx.now, report.deferred_until
            )
            rotation, more = step.rotation, more + list(step.changes)
    rotation = _schedule_next(ctx, rotation, current.rotation.next_tick, acted=acted)
    return store.stamped(rotation, ctx.now), more


def _schedule_next(
    ctx: Context, rotation: Rotation, planned: datetime | None, *, acted: bool
) -> Rotation:
    """Schedule the next look unless one already planned will do (``plan.needs_scheduling``).
    A node just acted on is looked at soon, whatever it waited for before."""
    now = ctx.now
    due = plan.next_look(rotation, now)
    if acted and rotation.phase.active:
        due = min(due or now + plan.GATE_INTERVAL, now + plan.GATE_INTERVAL)
    if due is None or not plan.needs_scheduling(planned, due, now):
        return rotation
    schedule_look(ctx, rotation, due)  # the same due on a retried write: the same schedule
    return replace(rotation, next_tick=due)


def schedule_look(ctx: Context, rotation: Rotation, due: datetime) -> None:
    """The next look, through the queue like every wake-up."""
    if ctx.wakeups is not None:
        ctx.wakeups.schedule(Wakeup(Task.ROTATE, look_notice(rotation), due, cluster=ctx.cluster))


def look_notice(rotation: Rotation) -> Notice:
    """What a look's wake-up carries: the request (its id) and the rotation's name."""
    return Notice(
        Kind.ROTATION, rotation.request_id, rotation.requested_at, detail=rotation.spec.name
    )


def node_notice(rotation: Rotation, node: RotationNode, now: datetime) -> Notice:
    """A started node as a notice: voluntary, no deadline, sent when the node's turn came
    (a node the pool never allows within a day is then let go, as any such notice)."""
    return Notice(
        Kind.ROTATION,
        rotation.request_id,
        now,
        instance_id=node.instance_id,
        detail=rotation.spec.name,
    )


def release(ctx: Context, rotation: Rotation, names: Sequence[str], *, why: str) -> None:
    """Clear the waiting mark of nodes the rotation lets go (nothing else was done to them)."""
    for name in names:
        node = rotation.node(name)
        current = ctx.kube.get_node(name)
        if current is None:
            continue
        notice = node_notice(rotation, node, ctx.now)
        target = Target(node.instance_id, node=current)
        let_go = Decision(Outcome.IGNORED, why, (Step.CLEAR_PENDING,))
        ctx.let_go(ctx.kube, notice, target, let_go, ctx.now)


def record_changes(ctx: Context, rotation: Rotation, changes: Sequence[plan.Change]) -> None:
    """An Event per change: on the node it concerns (``kubectl describe node``), and on the
    rotation's ConfigMap (``kubectl describe configmap -n lifeboat lifeboat-rotation-<name>``)."""
    if ctx.settings.dry_run:
        return
    holder = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "namespace": ctx.namespace,
        "name": store.configmap_name(rotation.spec.name),
    }
    for change in changes:
        key = f"{rotation.request_id}|{change.reason}|{change.node.name if change.node else '-'}"
        message = f"rotation {rotation.spec.name}: {change.message}"
        about: list[tuple[dict[str, str], str]] = [(holder, ctx.namespace)]
        if change.node is not None:  # node Events live in "default", where describe looks
            node = {"apiVersion": "v1", "kind": "Node", "name": change.node.name}
            about.append((node, EVENT_NAMESPACE))
        for involved, namespace in about:
            event = object_event(
                involved,
                namespace=namespace,
                reason=change.reason,
                message=message,
                warning=change.warning,
                key=key,
                now=ctx.now,
            )
            record_event(ctx.kube, event)


def change_report(rotation: Rotation, change: plan.Change) -> Report:
    """A change as a report: progress is ``acted``; a node waiting for a known end
    ``deferred`` (until then); a skip or a stop ``ignored`` (given up).
    A warning (a failed gate, a node held back for good, a rotation ending with nodes not
    done) is a give-up, so it is notified as one, naming the blocker."""
    node = change.node
    outcome = Outcome.ACTED if change.ok else Outcome.IGNORED
    waiting = change.reason == plan.NODE_WAITING and node is not None
    return Report(
        rotation.request_id,
        str(Kind.ROTATION),
        Outcome.DEFERRED if waiting else outcome,
        f"rotation {rotation.spec.name}: {change.message}",
        instance_id=node.instance_id if node else None,
        node=node.name if node else None,
        deferred_until=node.waits_until if waiting and node else None,
        event_time=rotation.requested_at,
        rotation_change=change.reason if change.reason in NOTIFIED_CHANGES else None,
        gave_up=change.warning and not change.ok,
    )


# What operators are notified of (notify.ROTATION_CHANGE): where a rotation stops or ends.
NOTIFIED_CHANGES = frozenset(
    {
        plan.ROTATION_CHECKPOINT,
        plan.ROTATION_FAILED,
        plan.ROTATION_COMPLETED,
        plan.ROTATION_ROLLED_BACK,
        plan.NODE_NOT_RESTORED,
        plan.NODE_WAITING,
    }
)


def _to_hand_over(rotation: Rotation, me: str, now: datetime) -> list[RotationNode]:
    """The nodes this look started, and those an earlier look started but did not hand
    over (it died in between). A node a concurrent look is starting now is left to it."""
    if rotation.phase is not Phase.RUNNING:
        return []
    stale = now - plan.GATE_INTERVAL
    return [
        node
        for node in rotation.nodes
        if node.note == STARTED + me
        or (node.note.startswith(STARTED) and node.since is not None and node.since <= stale)
    ]


def _hand_over(ctx: Context, rotation: Rotation, me: str) -> list[Report]:
    """Their notices, through the pipeline."""
    nodes = _to_hand_over(rotation, me, ctx.now)
    if not nodes:
        return []
    return ctx.handle([node_notice(rotation, node, ctx.now) for node in nodes])


def _node_of(rotation: Rotation, instance_id: str | None) -> RotationNode | None:
    return next((n for n in rotation.nodes if n.instance_id == instance_id), None)


def _waiting_report(rotation: Rotation) -> Report:
    """The report of a look that changed nothing: still waiting (on what), or idle."""
    if rotation.phase.active and rotation.in_flight:
        outcome, until = Outcome.DEFERRED, rotation.next_tick
        why = f"rotation {rotation.spec.name}: {plan.progress_text(rotation)}"
    else:
        outcome, until = Outcome.IGNORED, None
        why = f"rotation {rotation.spec.name} {rotation.summary()}"
        why += (f" ({rotation.reason})" if rotation.reason else "") + ": nothing to do"
    return Report(
        rotation.request_id,
        str(Kind.ROTATION),
        outcome,
        why,
        deferred_until=until,
        event_time=rotation.requested_at,
    )

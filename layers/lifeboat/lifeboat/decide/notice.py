"""The policy: what to do about one notice for one instance. Pure: no I/O, clock passed in.

Involuntary kinds (the instance goes away regardless) act at once, whatever the budgets say.
Voluntary kinds (rebalance recommendations, scheduled maintenance) act only when the
NodePool's disruption budgets and windows allow it and nothing is marked do-not-disrupt;
otherwise they wait, and scheduled maintenance is forced ``scheduled_change_lead`` before
AWS's own start time, because waiting longer would let AWS take the node unprepared.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from lifeboat.decide.model import (
    FOLLOW_UP_INTERVAL,
    RECHECK_INTERVAL,
    Decision,
    Step,
    give_up,
    ignore,
    patience,
)
from lifeboat.decide.staleness import Stale
from lifeboat.errors import BrokenInvariant
from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.forceful import in_effect
from lifeboat.karpenter.pdbs import pdb_blocker
from lifeboat.karpenter.replacement import replacement_blocker
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import active_holds, ended_for
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.objects import Obj
from lifeboat.model.outcome import Outcome
from lifeboat.model.settings import Settings
from lifeboat.model.target import PoolCounts, Target

# Karpenter-owned node: taint and cordon, create the replacement, delete the old claim.
KARPENTER_REPLACE = (Step.TAINT_AND_CORDON, Step.CREATE_REPLACEMENT, Step.DELETE_NODECLAIM)


def decide(
    notice: Notice,
    target: Target,
    settings: Settings,
    now: datetime,
    *,
    stale: Stale | None = None,
) -> Decision:
    """Decide what to do now about ``notice`` for ``target``; ``stale``: the notice is past
    its age limit (lifeboat.decide.staleness) and is judged from the present state, never forced."""
    decision = _decide(notice, target, settings, now, stale)
    # A notice let go (given up, opted out, configured to ignore) takes its waiting mark
    # with it, or the node would stay marked PreferNoSchedule for the rest of its life.
    # Not the end of a maintenance waiting for the node to be Ready: its restore takes the
    # mark off later and records the end, so the deferral's wake-up lets it go.
    if (
        decision.outcome is Outcome.IGNORED
        and not notice.ends_maintenance
        and target.node is not None
        and node_marks.pending_mark(target.node, node_marks.taint_key(notice.kind))
    ):
        return replace(decision, steps=(Step.CLEAR_PENDING,))
    return decision


def _decide(
    notice: Notice, target: Target, settings: Settings, now: datetime, stale: Stale | None
) -> Decision:
    if notice.ignore_reason:
        return ignore(notice.ignore_reason)
    if notice.kind is Kind.ASG_LAUNCH:
        return _launch(notice, target, settings, now)
    if stale is not None and stale.nothing_going:
        return ignore(f"{_describe(notice)}: stale: {stale.reason}; nothing to do")
    if target.node is None:
        if notice.lifecycle is not None:
            return Decision(
                Outcome.ACTED,
                f"no Kubernetes node for {target.instance_id}: completing the lifecycle action",
                (Step.COMPLETE_LIFECYCLE,),
            )
        return ignore(f"no Kubernetes node for instance {target.instance_id} in this cluster")
    # The NodePool object is known for every kind (its counts only for voluntary ones): an
    # opted-out pool is left alone whatever AWS announced.
    if target.nodepool is not None and node_marks.opted_out(target.nodepool):
        return ignore(
            f"NodePool {nodes.name_of(target.nodepool)} opted out ({node_marks.OPT_OUT_ANNOTATION})"
        )
    # Karpenter is already terminating the node (its interruption queue, or an earlier notice
    # of ours): say so, and send no second delete and no replacement. An Auto Scaling hook
    # still needs its answer, which only Lifeboat gives.
    handled = _already_terminating(target)
    if handled is not None and notice.lifecycle is None:
        return _force_deleting(notice, target, handled, now)
    if notice.ends_maintenance:
        return _maintenance_over(notice, target)
    if stale is not None:
        return _stale(notice, target, settings, now, stale)
    if notice.involuntary:
        return _involuntary(notice, target)
    return _voluntary(notice, target, settings, now)


def _launch(notice: Notice, target: Target, settings: Settings, now: datetime) -> Decision:
    """A launch lifecycle action: CONTINUE once the new instance's node is Ready in the
    cluster (the Node Termination Handler's launch-hook completion); nothing is done to the
    node. Until then the action is looked at again every 30 s, up to the hook's timeout."""
    what = _describe(notice)
    if not settings.complete_launch_hooks:
        return ignore(f"{what}: completing launch lifecycle actions is off (complete_launch_hooks)")
    if target.node is not None and nodes.is_ready(target.node):
        return Decision(
            Outcome.ACTED,
            f"{what}: node {target.node_name} is Ready: completing the lifecycle action",
            (Step.COMPLETE_LIFECYCLE,),
        )
    waiting = (
        f"node {target.node_name} is not Ready yet"
        if target.node is not None
        else f"no node has registered for instance {target.instance_id} yet"
    )
    if notice.deadline is not None and now >= notice.deadline:
        return ignore(f"{what}: {waiting} by the hook's timeout: Auto Scaling decides")
    recheck = now + FOLLOW_UP_INTERVAL
    if notice.deadline is not None:
        recheck = min(recheck, notice.deadline)
    return Decision(
        Outcome.DEFERRED, f"{what}: {waiting}; looking again at {_fmt(recheck)}", recheck_at=recheck
    )


def _stale(
    notice: Notice, target: Target, settings: Settings, now: datetime, stale: Stale
) -> Decision:
    """A notice past its age limit: acted on now only if a voluntary notice would be
    (do-not-disrupt, PodDisruptionBudgets, the NodePool's budget), else let go. Never
    forced, never deferred (a wake-up would only bring the same stale notice back)."""
    if target.node is None:
        raise BrokenInvariant("lifeboat.decide.notice._stale: target.node is None")
    what = f"{_describe(notice)}: stale ({stale.reason})"
    action = "replace" if notice.involuntary else settings.action_for(notice.kind)
    if action == "ignore":
        return ignore(f"{what}: configured to ignore {notice.kind}")
    act = _voluntary_action(notice, action, target)
    if node_marks.acted_on(target.node):
        return replace(act, reason=f"{what}: node already being replaced; continuing")
    letting_go = "; a stale notice is never forced: letting it go"
    blocker = disruption_rules.do_not_disrupt_blocker(target.node, target.pods or (), now)
    if blocker is not None:
        return give_up(f"{what}: blocked by {blocker[0]}{letting_go}")
    held = _pdb_blocker(act, target, now)
    if held is not None:
        return give_up(f"{what}: {held}{letting_go}")
    nodepool, counts = target.nodepool, target.counts
    if target.claim is None or nodepool is None or counts is None:
        why = f"{what}: node has no NodePool budget to honour; judged now"
        return replace(act, reason=why + _without_replacement(act, target))
    from lifeboat.karpenter.budgets import allowed_disruptions

    allowance = allowed_disruptions(nodepool, counts.node_count, counts.disrupting, now)
    name = nodes.name_of(nodepool)
    if not allowance.permits_one:
        return give_up(f"{what}: NodePool {name} budget: {allowance.reason}{letting_go}")
    why = f"{what}: NodePool {name} allows it ({allowance.reason}); judged now"
    return replace(act, reason=why + _without_replacement(act, target))


def _involuntary(notice: Notice, target: Target) -> Decision:
    what = _describe(notice)
    # An Auto Scaling group waits for our answer before it terminates, so a hook's node is
    # drained here and then let go, even if a NodeClaim (unusually) also owns it.
    if target.claim and notice.lifecycle is None:
        # As Karpenter's interruption controller: delete the claim at once, whatever the
        # budgets say; the replacement is created first, unless Karpenter would not want one.
        no_replacement = _no_replacement(target)
        drains = _karpenter_drain(notice)
        if no_replacement is None:
            return Decision(
                Outcome.ACTED,
                f"{what}: replacing NodeClaim {target.claim.name} and deleting it so Karpenter "
                f"{drains}",
                KARPENTER_REPLACE,
            )
        return Decision(
            Outcome.ACTED,
            f"{what}: deleting NodeClaim {target.claim.name} so Karpenter {drains}; no "
            f"replacement: {no_replacement}",
            (Step.TAINT_AND_CORDON, Step.DELETE_NODECLAIM),
        )
    steps = [Step.TAINT_AND_CORDON, Step.EVICT]
    if notice.lifecycle is not None:
        steps.append(Step.COMPLETE_LIFECYCLE)
    return Decision(
        Outcome.ACTED,
        f"{what}: node has no NodeClaim; draining it through the Eviction API",
        tuple(steps),
    )


def _force_deleting(notice: Notice, target: Target, handled: str, now: datetime) -> Decision:
    """A claim Karpenter already deletes gets nothing more, unless its instance is impaired
    and the claim carries no termination timestamp in effect now: Karpenter >= 1.13 annotates
    it then (``annotateTerminationTimestamp`` runs before ``deleteNodeClaim``'s early return for
    a claim being deleted), so a gentle drain stuck on a PDB is forced; no second delete. A
    stamp in the future or unparsable is no stamp (core's ``annotateTerminationGracePeriod``;
    :mod:`lifeboat.karpenter.forceful`)."""
    what = _describe(notice)
    claim = target.claim
    forced = claim is not None and in_effect(claim.terminates_by, now)
    if notice.kind is not Kind.INSTANCE_IMPAIRED or claim is None or forced:
        return ignore(f"{what}: {handled}; nothing to add")
    return Decision(
        Outcome.ACTED,
        f"{what}: {handled}; forcing it as Karpenter >= 1.13 forces an impaired instance "
        f"(NodeClaim {claim.name} gets karpenter.sh/nodeclaim-termination-timestamp)",
        (Step.DELETE_NODECLAIM,),
    )


def _karpenter_drain(notice: Notice) -> str:
    """What Karpenter does once the claim is deleted. An impaired instance's claim is first
    given ``karpenter.sh/nodeclaim-termination-timestamp`` = now (act, as Karpenter >= 1.13's
    ``annotateTerminationTimestamp``): its termination controller then deletes the pods
    instead of evicting them and does not wait for volumes to detach."""
    if notice.kind is Kind.INSTANCE_IMPAIRED:
        return (
            "terminates the node forcefully (its termination timestamp set to now: pods "
            "deleted whatever PDBs and do-not-disrupt say, no wait for volume detachment)"
        )
    return "drains the node"


def _maintenance_over(notice: Notice, target: Target) -> Decision:
    """The maintenance ended (EC2 ``[Completed]``/``[Canceled]``, Health ``closed``) and the
    node is still here: undo Lifeboat's taint, cordon and load balancer exclusion once it is
    Ready again (a node that was replaced is being deleted and never gets here)."""
    if target.node is None:
        raise BrokenInvariant("lifeboat.decide.notice: a maintenance's end without a node")
    start = _fmt(notice.deadline) if notice.deadline else "with no given start"
    what = f"{_describe(notice)} starting {start} is over"
    key = node_marks.taint_key(notice.kind)
    if not any(t.get("key") == key for t in nodes.taints(target.node)):
        return ignore(f"{what}: node {target.node_name} carries no {key} taint; nothing to undo")
    holds = active_holds(target.node)
    named = [hold for hold in holds if hold.names(notice)]
    others = ", ".join(hold.describe() for hold in holds if not hold.names(notice))
    if holds and not named:
        # An old maintenance's end (a [Completed] reboot still listed, a closed Health
        # event) while a newer one holds the node: it stays out, its wake-up kept.
        return ignore(f"{what}: node {target.node_name} is held for {others}; it stays out")
    state = target.info.state if target.info is not None else None
    if state not in (None, "running"):
        return ignore(f"{what}: instance {target.instance_id} is {state}, not running; left as is")
    if others:
        return Decision(
            Outcome.ACTED,
            f"{what}: its hold on node {target.node_name} ends; still held for {others}: "
            "the node stays out",
            (Step.RESTORE,),
        )
    if not nodes.is_ready(target.node):
        return ignore(
            f"{what}: node {target.node_name} is not Ready yet; undone when it is reported Ready"
        )
    return Decision(
        Outcome.ACTED,
        f"{what}: node {target.node_name} is Ready; removing {key}, uncordoning and "
        "returning it to load balancers",
        (Step.RESTORE,),
    )


def _voluntary(notice: Notice, target: Target, settings: Settings, now: datetime) -> Decision:
    """Act when the NodePool's budgets and windows, do-not-disrupt and the PDBs allow it,
    and a replacement can launch; wait otherwise, forced only at a scheduled change's latest
    start, and let go after its patience (``decide.model.patience``) when nothing ever allows it."""
    if target.node is None:
        raise BrokenInvariant("lifeboat.decide.notice._voluntary: target.node is None")
    what = _describe(notice)
    action = settings.action_for(notice.kind)
    if action == "ignore":
        return ignore(f"{what}: configured to ignore {notice.kind}")
    if notice.kind is Kind.SCHEDULED_CHANGE and ended_for(target.node, notice):
        # Completed or cancelled while this notice waited (its wake-up came due later).
        return ignore(f"{what}: the maintenance ended (completed or cancelled); nothing to do")
    act = _voluntary_action(notice, action, target)
    latest = _latest_start(notice, settings)
    early = _underway(what, act, target, now)
    if early is None:
        early = _out_of_time(what, notice, act, target, latest, settings, now)
    if early is None:
        early = _held(what, act, target, latest, now)
    if early is not None:
        return early
    nodepool, counts = target.nodepool, target.counts
    if target.claim is None or nodepool is None or counts is None:
        # No NodePool, no budget: a node group node is handled like the Node Termination
        # Handler does (cordon on rebalance, cordon and drain on scheduled maintenance).
        why = f"{what}: node has no NodePool budget to honour"
        return replace(act, reason=why + _without_replacement(act, target))
    return _by_budget(what, notice, act, target, latest, now, nodepool, counts)


def _underway(what: str, act: Decision, target: Target, now: datetime) -> Decision | None:
    """The node is already being replaced, by Lifeboat or by Karpenter (None: it is not)."""
    if target.node is None:
        raise BrokenInvariant("lifeboat.decide.notice._underway: target.node is None")
    if node_marks.acted_on(target.node):
        # Already acted on (an earlier delivery or notice): carry on, it holds its budget slot.
        return replace(act, reason=f"{what}: node already being replaced; continuing")
    if target.claim is not None and disruption_rules.karpenter_disrupting(target.node):
        # Karpenter's own command (drift, consolidation) is replacing it: no second
        # replacement, no slot taken twice; look again in case its command is abandoned.
        return Decision(
            Outcome.DEFERRED,
            f"{what}: Karpenter is already disrupting node {target.node_name} "
            f"({nodes.KARPENTER_DISRUPTED_TAINT}); looking again later",
            recheck_at=now + RECHECK_INTERVAL,
        )
    return None


def _out_of_time(
    what: str,
    notice: Notice,
    act: Decision,
    target: Target,
    latest: datetime | None,
    settings: Settings,
    now: datetime,
) -> Decision | None:
    """Waiting is over: let go a notice past its patience, force a scheduled change at its
    latest start (None: there is time to wait)."""
    waited = patience(notice.kind)
    if latest is None and now >= notice.event_time + waited:
        held_by = _holder(act, target, now)
        return give_up(
            f"{what}: not permitted within {_minutes(waited)} of the notice"
            + (f" (held by {held_by})" if held_by else "")
            + "; giving up"
        )
    if latest is not None and now >= latest:
        return replace(
            act,
            reason=f"{what}: maintenance starts {_fmt(notice.deadline)}, within the "
            f"{_minutes(settings.scheduled_change_lead)} lead: acting regardless of budgets, "
            "do-not-disrupt and PodDisruptionBudgets" + _without_replacement(act, target),
            forced=True,
        )
    return None


def _held(
    what: str, act: Decision, target: Target, latest: datetime | None, now: datetime
) -> Decision | None:
    """What holds the node before any budget is asked: a do-not-disrupt pod or node, a PDB,
    or no replacement able to launch (None: nothing holds it)."""
    if target.node is None:
        raise BrokenInvariant("lifeboat.decide.notice._held: target.node is None")
    blocker = disruption_rules.do_not_disrupt_blocker(target.node, target.pods or (), now)
    if blocker is not None:
        who, until = blocker
        return _defer(f"{what}: blocked by {who}", until, latest, now)
    # Karpenter's candidate filter (ValidatePodsDisruptable): a node whose pods a PDB keeps
    # now is no candidate; taking a slot and a spare node would only wait on the drain.
    held = _pdb_blocker(act, target, now)
    if held is not None:
        return _defer(f"{what}: {held}", None, latest, now, waiting=WAITING_FOR_PDB)
    # Voluntary work goes only where the pods can land: Karpenter's own voluntary
    # disruption keeps a node whose replacement it cannot launch (``NewScheduler`` leaves
    # out pools not Ready, static or being deleted; ``Provisioner.Create`` refuses a pool
    # past its limits), so the old claim is kept rather than deleted without one.
    stranded = _stranded(act, target)
    if stranded is not None:
        return _keep_claim(what, stranded, target, latest, now)
    return None


def _by_budget(
    what: str,
    notice: Notice,
    act: Decision,
    target: Target,
    latest: datetime | None,
    now: datetime,
    nodepool: Obj,
    counts: PoolCounts,
) -> Decision:
    """Act if the NodePool's disruption budgets allow one more node now; otherwise wait for
    the earliest permitted time, or give up when no window opens before the patience ends."""
    # Imported here: budgets (and the cron parser behind them) are for voluntary notices
    # only, and a Lambda whose batches are Spot warnings never loads them.
    from lifeboat.karpenter.budgets import allowed_disruptions, earliest_permitted

    name = nodes.name_of(nodepool)
    allowance = allowed_disruptions(nodepool, counts.node_count, counts.disrupting, now)
    if allowance.permits_one:
        why = f"{what}: NodePool {name} allows it ({allowance.reason})"
        return replace(act, reason=why + _without_replacement(act, target))
    if allowance.blocked_by_error:
        return _defer(f"{what}: NodePool {name} blocked: {allowance.reason}", None, latest, now)
    until = latest if latest is not None else notice.event_time + patience(notice.kind)
    opening = earliest_permitted(nodepool, counts.node_count, counts.disrupting, now, until)
    why = f"{what}: NodePool {name} budget: {allowance.reason}"
    if opening.at is not None and opening.at > now:
        return _defer(why, opening.at, latest, now)
    if not opening.complete:
        # The search is bounded: nothing permitted up to where it stopped. Look again there
        # rather than walk every window up to a distant deadline now.
        return _defer_beyond_search(why, opening.searched_until, latest, now)
    # Give up only if a window would stay shut even with every disrupting node gone:
    # nodes still disrupting now may well be gone before the window opens.
    if latest is None:
        empty_pool = earliest_permitted(nodepool, counts.node_count, 0, now, until)
        if empty_pool.at is None and empty_pool.complete:
            return give_up(f"{why}; no window opens before {_fmt(until)}: giving up")
    return _defer(why, None, latest, now)


def _voluntary_action(notice: Notice, action: str, target: Target) -> Decision:
    """What acting on a voluntary notice means (the reason is filled in by the caller)."""
    if action == "cordon":
        return Decision(Outcome.ACTED, "", (Step.TAINT_AND_CORDON,))
    if target.claim is not None:
        # Hand the node to Karpenter at once: the replacement is created and the old claim
        # deleted in the same breath (docs/concepts/hand-over.md).
        if _no_replacement(target) is None:
            return Decision(Outcome.ACTED, "", KARPENTER_REPLACE)
        return Decision(Outcome.ACTED, "", (Step.TAINT_AND_CORDON, Step.DELETE_NODECLAIM))
    if notice.kind is Kind.REBALANCE_RECOMMENDATION:
        return Decision(Outcome.ACTED, "", (Step.TAINT_AND_CORDON,))
    return Decision(Outcome.ACTED, "", (Step.TAINT_AND_CORDON, Step.EVICT))


def _without_replacement(act: Decision, target: Target) -> str:
    """The reason's tail when a Karpenter node is handed over without a replacement."""
    if target.claim is None or Step.DELETE_NODECLAIM not in act.steps:
        return ""
    if Step.CREATE_REPLACEMENT in act.steps:
        return ""
    return f"; deleting NodeClaim {target.claim.name}, no replacement: {_no_replacement(target)}"


def _holder(act: Decision, target: Target, now: datetime) -> str | None:
    """What holds the node now, for a give-up's reason: the pod with do-not-disrupt, the
    PDB (None when it is the budget, or nothing known)."""
    if target.node is None:
        return None
    blocker = disruption_rules.do_not_disrupt_blocker(target.node, target.pods or (), now)
    if blocker is not None:
        return blocker[0]
    return _pdb_blocker(act, target, now)


def _stranded(act: Decision, target: Target) -> str | None:
    """Why acting would delete a Karpenter node's claim with no replacement (None: it would
    not: a replacement comes, or the claim is not deleted)."""
    if target.claim is None or Step.DELETE_NODECLAIM not in act.steps:
        return None
    if Step.CREATE_REPLACEMENT in act.steps:
        return None
    return _no_replacement(target)


def _keep_claim(
    what: str, why: str, target: Target, latest: datetime | None, now: datetime
) -> Decision:
    """Keep the node and its claim: let the notice go when no replacement can ever come
    (no NodePool, a static one or one being deleted), otherwise look again later (a pool
    not Ready or at its limits may recover). A scheduled change still acts at ``latest``,
    as its instance goes anyway."""
    if target.claim is None:
        raise BrokenInvariant("lifeboat.decide.notice._keep_claim: target.claim is None")
    reason = f"{what}: no replacement can launch: {why}; NodeClaim {target.claim.name} kept"
    pool = target.nodepool
    if pool is None or nodes.is_deleting(pool) or (pool.get("spec") or {}).get("replicas"):
        if latest is None:
            return give_up(f"{reason}; giving up")
        return Decision(
            Outcome.DEFERRED,
            f"{reason}; acting at {_fmt(latest)} regardless, as the instance goes then",
            (Step.MARK_PENDING,),
            deferred_until=latest,
        )
    recheck = now + RECHECK_INTERVAL
    if latest is not None:
        return Decision(
            Outcome.DEFERRED,
            f"{reason}; looking again at {_fmt(min(latest, recheck))}, acting at "
            f"{_fmt(latest)} regardless",
            (Step.MARK_PENDING,),
            deferred_until=latest,
            recheck_at=min(latest, recheck),
        )
    return Decision(
        Outcome.DEFERRED,
        f"{reason}; looking again at {_fmt(recheck)}",
        (Step.MARK_PENDING,),
        recheck_at=recheck,
    )


def replacement_refused(notice: Notice, decision: Decision, error: str, now: datetime) -> Decision:
    """What a voluntary decision becomes when its replacement could not be made (the API
    server refused it, or the pool yields no valid claim): act kept the old claim (it
    deletes no claim of a voluntary notice without its replacement), so the notice waits
    and is decided again. Involuntary and forced decisions are unchanged: the instance goes
    anyway."""
    if notice.involuntary or decision.forced or decision.outcome is not Outcome.ACTED:
        return decision
    recheck = now + RECHECK_INTERVAL
    return Decision(
        Outcome.DEFERRED,
        f"{decision.reason}; replacement not created ({error}): NodeClaim kept, node stays "
        f"cordoned, trying again at {_fmt(recheck)}",
        decision.steps,
        recheck_at=recheck,
    )


def _pdb_blocker(act: Decision, target: Target, now: datetime) -> str | None:
    """The PDB that keeps the node's pods, when acting means draining them."""
    drains = Step.DELETE_NODECLAIM in act.steps or Step.EVICT in act.steps
    if not drains or target.pdbs is None:
        return None
    return pdb_blocker(target.pods or (), target.pdbs, now)


def _already_terminating(target: Target) -> str | None:
    """Why the node needs nothing more from Lifeboat: its NodeClaim (or its Node, which
    Karpenter deletes right after the claim) is already being deleted."""
    if target.claim is None or target.node is None:
        return None
    node = target.node_name
    if target.claim.deleting:
        return (
            f"NodeClaim {target.claim.name} is already being deleted: Karpenter drains and "
            f"terminates node {node}"
        )
    if nodes.is_deleting(target.node):
        return (
            f"node {node} is already being deleted: Karpenter's termination finalizer drains "
            f"it and deletes NodeClaim {target.claim.name}"
        )
    return None


def _no_replacement(target: Target) -> str | None:
    """Why the node gets no replacement from Lifeboat (None: it gets one)."""
    if target.node is None:
        raise BrokenInvariant("lifeboat.decide.notice._no_replacement: target.node is None")
    if disruption_rules.karpenter_disrupting(target.node):
        return (
            f"Karpenter is already replacing node {target.node_name} "
            f"({nodes.KARPENTER_DISRUPTED_TAINT})"
        )
    if target.nodepool is None:
        return f"NodePool {target.nodepool_name or '(unknown)'} not found"
    return replacement_blocker(target.nodepool, target.node, target.usage)


# What an open-ended deferral waits for: capacity in the pool's budget, or (a PDB holds the
# node's pods) the PDB, which the reason names.
WAITING_FOR_CAPACITY = "waiting for disrupting nodes to finish"
WAITING_FOR_PDB = "waiting until the PDB allows an eviction"


def _defer(
    reason: str,
    until: datetime | None,
    latest: datetime | None,
    now: datetime,
    *,
    waiting: str = WAITING_FOR_CAPACITY,
) -> Decision:
    """Wait until ``until`` (None: until capacity frees, or what ``waiting`` says), but
    never past ``latest``."""
    pending = (Step.MARK_PENDING,)
    if until is None and latest is not None:
        # Capacity may free before the deadline: look again regularly; act at ``latest``.
        return Decision(
            Outcome.DEFERRED,
            f"{reason}; {waiting}, acting at {_fmt(latest)} regardless",
            pending,
            deferred_until=latest,
            recheck_at=min(latest, now + RECHECK_INTERVAL),
        )
    if until is None:
        return Decision(
            Outcome.DEFERRED,
            f"{reason}; {waiting}",
            pending,
            recheck_at=now + RECHECK_INTERVAL,
        )
    if latest is not None and until >= latest:
        return Decision(
            Outcome.DEFERRED,
            f"{reason}; no permitted time before {_fmt(latest)}: will act then regardless",
            pending,
            deferred_until=latest,
        )
    return Decision(Outcome.DEFERRED, f"{reason}; next permitted at {_fmt(until)}", pending, until)


def _defer_beyond_search(
    reason: str, searched_until: datetime, latest: datetime | None, now: datetime
) -> Decision:
    """No permitted time found before ``searched_until``, where the bounded search stopped."""
    if latest is not None and searched_until >= latest:
        return _defer(reason, latest, latest, now)
    return Decision(
        Outcome.DEFERRED,
        f"{reason}; no permitted time found before {_fmt(searched_until)}: deciding again then",
        (Step.MARK_PENDING,),
        deferred_until=searched_until,
    )


def _latest_start(notice: Notice, settings: Settings) -> datetime | None:
    """The last moment a voluntary notice with a deadline may still wait for a window."""
    if notice.deadline is None:
        return None
    return notice.deadline - settings.scheduled_change_lead


def _describe(notice: Notice) -> str:
    text = notice.kind.label
    if notice.detail:
        text += f" ({notice.detail})"
    if notice.kind is Kind.SCHEDULED_CHANGE and notice.ec2_event and notice.deadline is None:
        text += ", start not given (no NotBefore): due now"
    if notice.kind is Kind.INSTANCE_IMPAIRED:
        # Its deadline is when EC2 reported it; what matters is how long it has been so.
        text += f", impaired since {_fmt(notice.event_time)}"
    elif notice.deadline is not None and notice.involuntary:
        text += f", instance goes at {_fmt(notice.deadline)}"
    return text


def _fmt(moment: datetime | None) -> str:
    return format_instant(moment) if moment else "-"


def _minutes(delta: timedelta) -> str:
    return f"{int(delta.total_seconds() // 60)}m"

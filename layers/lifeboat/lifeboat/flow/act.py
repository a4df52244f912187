"""Carry out a decision on the cluster. Every step is idempotent, so a redelivered message or
a retry after a crash between two steps never does anything twice.

Order matters: the taint and cordon go first (one patch), because that is what keeps new
pods off a node that is about to go; then the replacement claim, then the old claim's
deletion (Karpenter drains and terminates) or, with no Karpenter, the drain.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from lifeboat.decide import Decision, Step
from lifeboat.errors import BrokenInvariant
from lifeboat.events.asg_lifecycle import lifecycle_expired
from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.forceful import (
    TERMINATION_TIMESTAMP,
    annotate_operations,
    forced_at,
    in_effect,
    shown,
    termination_timestamp,
)
from lifeboat.karpenter.replacement import replacement_nodeclaim
from lifeboat.kube import nodes
from lifeboat.kube.client import Conflict, Eviction, KubeApi, KubeError
from lifeboat.marks import node_marks
from lifeboat.marks.handover import (
    PATIENCE,
    SWEEP_GRACE,
    Record,
    give_back_operations,
    hold_operations,
    protect,
    unprotect_operations,
)
from lifeboat.marks.maintenance_holds import hold_for
from lifeboat.marks.node_patches import (
    ec2_maintenance_operations,
    releases_exclusion,
    restore_operations,
    taint_operations,
    unread_taint_variants,
    untaint_operations,
)
from lifeboat.model.notice import Kind, LifecycleHook, Notice
from lifeboat.model.objects import Obj
from lifeboat.model.settings import WHEN_READY, Settings
from lifeboat.model.target import ClaimRef, Target
from lifeboat.wakeup.codec import Task, Wakeup, encode

Action = dict[str, Any]
# What a node about to go gets besides the taint and cordon (``exclude_from_load_balancers``).
EXCLUSION_ACTION: Action = {
    "type": "label",
    "key": nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL,
    "value": "true",
}

# Kinds whose reservation is being taken back: the replacement is kept out of it.
_RESERVATION_RECLAIMED = (Kind.CAPACITY_RESERVATION_INTERRUPTION, Kind.CAPACITY_BLOCK_EXPIRY)

# A JSON patch whose ``test`` fails is answered 422 by the API server; a stale
# resourceVersion 409. Both mean "re-read the node and try again".
PATCH_ATTEMPTS = 3


class LifecycleActions(Protocol):
    """The Auto Scaling calls of a lifecycle hook (a seam: moto does not implement them)."""

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None: ...

    def heartbeat(self, hook: LifecycleHook) -> None: ...


@dataclass
class ActResult:
    """What act did: the contract's ``actions`` list, plus what is left for later."""

    actions: list[Action] = field(default_factory=list)
    replacement: str | None = None
    pods_remaining: int = 0
    # The replacement already existed: an earlier notice or delivery acted on this claim.
    replaced_before: bool = False
    # Why the replacement was not created (refused by the API server, or no valid claim):
    # a voluntary notice then keeps the old claim (see ``carry_out``).
    replacement_refused: str | None = None
    # Evicted pods still terminating (within their grace period) on a node whose lifecycle
    # action waits for them: CONTINUE only once they are gone.
    pods_terminating: int = 0
    # Evicted pods stuck terminating on a node no kubelet answers for (NotReady, impaired):
    # not waited for (Karpenter's IsStuckTerminating).
    pods_stuck: int = 0
    # The node was deleted between its read and the patch (404): nothing to drain.
    node_gone: bool = False
    # The replacement a when-ready hand-over waits for before the old claim is deleted.
    awaiting: str | None = None


def _planned(outcome: ActResult) -> str | None:
    """The replacement a dry run would have created (its action), if any."""
    names = [a.get("name") for a in outcome.actions if a["type"] == "create-nodeclaim"]
    return names[-1] if names and names[-1] and not outcome.replacement_refused else None


class Actor:
    def __init__(
        self,
        kube: KubeApi,
        settings: Settings,
        lifecycle: LifecycleActions | None,
        *,
        clock: Callable[[], datetime],
        sleep: Callable[[float], None] = time.sleep,
        drain_patience: float = 0.0,
    ) -> None:
        self._kube = kube
        self._settings = settings
        self._lifecycle = lifecycle
        self._clock = clock
        self._sleep = sleep
        # How long one invocation keeps retrying PDB-blocked evictions before it hands the
        # rest of the drain to a later wake-up (never sleep out a deadline in a Lambda).
        self._drain_patience = drain_patience

    def carry_out(
        self,
        notice: Notice,
        target: Target,
        decision: Decision,
        *,
        replacement: str | None = None,
        into: ActResult | None = None,
    ) -> ActResult:
        """``replacement``: the claim a hand-over follow-up is about (``RELEASE_REPLACEMENT``).
        ``into``: where the actions are gathered as they are taken, so that a step that
        raises leaves the caller what the steps before it did (issue 33.4)."""
        outcome = into if into is not None else ActResult()
        dry = self._settings.dry_run
        waits = self._waits_for_replacement(notice, target, decision)
        for step in decision.steps:
            if outcome.node_gone and step is not Step.COMPLETE_LIFECYCLE:
                continue  # deleted under us: no replacement, no drain, nothing to delete
            if step is Step.TAINT_AND_CORDON:
                outcome.actions += self._taint(notice, target, "cordon", dry, outcome)
            elif step is Step.CLEAR_PENDING:
                outcome.actions += self._clear_pending(notice, target, dry)
            elif step is Step.MARK_PENDING:
                outcome.actions += self._taint(notice, target, "prefer", dry, outcome)
            elif step is Step.CREATE_REPLACEMENT:
                outcome.replacement = self._replace(notice, target, outcome, dry, waits)
            elif step is Step.DELETE_NODECLAIM:
                if outcome.replacement_refused and not (notice.involuntary or decision.forced):
                    # Voluntary work never deletes a claim whose replacement did not come:
                    # its pods would wait with nowhere to go (the caller defers the notice).
                    continue
                planned = outcome.replacement or (_planned(outcome) if dry else None)
                if waits and planned is not None:
                    outcome.awaiting = planned  # deleted once it is initialized
                    outcome.actions += self._hold(notice, target, planned, dry)
                    continue
                # An impaired instance is forced out, as Karpenter >= 1.13 does.
                forceful = notice.kind is Kind.INSTANCE_IMPAIRED
                outcome.actions += self._delete_claim(
                    target, dry, outcome.replaced_before, forceful=forceful
                )
            elif step is Step.RELEASE_REPLACEMENT:
                outcome.actions += self._release(target, replacement, dry)
            elif step is Step.GIVE_BACK:
                outcome.actions += self._give_back(notice, target, dry)
            elif step is Step.EVICT:
                self._drain(notice, target, outcome, dry)
            elif step is Step.RESTORE:
                outcome.actions += self._restore(notice, target, dry)
            elif step is Step.COMPLETE_LIFECYCLE and outcome.pods_remaining == 0:
                if outcome.pods_terminating and not lifecycle_expired(notice, self._clock()):
                    continue  # the instance must outlive its pods' grace periods
                outcome.pods_terminating = 0
                outcome.actions += self._complete_lifecycle(notice, dry)
        return outcome

    # -- taint and cordon ------------------------------------------------------------------

    def _taint(
        self, notice: Notice, target: Target, mode: str, dry: bool, outcome: ActResult
    ) -> list[Action]:
        """Taint and cordon (``mode`` "cordon", a node about to go: also excluded from load
        balancers) or only mark (``mode`` "prefer", a deferred notice), in one patch."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act._taint: target.node is None")
        key = node_marks.taint_key(notice.kind)
        effect = self._settings.taint_effect if mode == "cordon" else "PreferNoSchedule"
        cordon = mode == "cordon"
        exclude = cordon and self._settings.exclude_from_load_balancers
        actions: list[Action] = [{"type": "taint", "key": key, "effect": effect}]
        if cordon:
            actions.append({"type": "cordon"})
        marker = None
        if notice.ec2_event and notice.kind is Kind.SCHEDULED_CHANGE and notice.deadline:
            marker = node_marks.ec2_maintenance_value(notice.deadline)
        # The maintenance the node is held for, so that only its own end releases it.
        hold = hold_for(notice) if notice.kind is Kind.SCHEDULED_CHANGE else None
        node = self._patch_node(
            target.node,
            lambda n: taint_operations(n, key, effect, cordon, exclude, marker, hold),
            dry,
        )
        if node is None:
            # The node went away while we were patching: nothing to cordon, nothing to drain.
            outcome.node_gone = True
            return [{**actions[0], "error": f"node {nodes.name_of(target.node)} is gone"}]
        # Reported when Lifeboat labels the node (now, or at an earlier delivery), not for
        # a label the operator set: Lifeboat neither added that one nor will remove it.
        if exclude and (
            node_marks.excluded_by_lifeboat(node) or not nodes.excluded_from_load_balancers(node)
        ):
            actions.append(dict(EXCLUSION_ACTION))
        return actions

    def mark_ec2_maintenance(self, notice: Notice, target: Target) -> bool:
        """Label the node of a maintenance AWS Health told first with the start of the EC2
        event the sweep now sees (``node_patches.ec2_maintenance_operations``); whether a
        patch was sent."""
        if target.node is None or notice.deadline is None or self._settings.dry_run:
            return False
        start, code = notice.deadline, notice.detail or None
        if not ec2_maintenance_operations(target.node, start, code):
            return False
        self._patch_node(target.node, lambda n: ec2_maintenance_operations(n, start, code), False)
        return True

    def taint_unread(self, node_name: str, provider_id: str, notice: Notice) -> Obj | None:
        """Taint and cordon the node of an involuntary notice without reading it first (a
        guarded JSON patch, see ``unread_taint_variants``); the node as patched, or None
        when neither patch fits it (not this instance's node, our taint already there, no
        such node): the caller then reads it and decides as usual."""
        key = node_marks.taint_key(notice.kind)
        variants = unread_taint_variants(
            provider_id,
            key,
            self._settings.taint_effect,
            self._settings.exclude_from_load_balancers,
        )
        for operations in variants:
            try:
                return self._kube.patch_node(node_name, operations)
            except KubeError as error:
                if error.status not in (404, 422):
                    raise
                if error.status == 404:
                    return None
        return None

    def _clear_pending(self, notice: Notice, target: Target, dry: bool) -> list[Action]:
        """Remove the waiting mark of a notice let go, and the load balancer exclusion if
        Lifeboat added it and no other of its taints keeps the node out of service."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act._clear_pending: target.node is None")
        key = node_marks.taint_key(notice.kind)
        node = self._patch_node(target.node, lambda n: untaint_operations(n, key), dry)
        if node is None:
            return []
        actions: list[Action] = [{"type": "untaint", "key": key}]
        if releases_exclusion(node, key):
            actions.append({"type": "unlabel", "key": nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL})
        return actions

    def _restore(self, notice: Notice, target: Target, dry: bool) -> list[Action]:
        """Undo Lifeboat's taint, cordon and load balancer exclusion on a node that stays
        (``node_patches.restore_operations``); the actions as the node was before."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act._restore: target.node is None")
        key = node_marks.taint_key(notice.kind)
        ended = None
        if notice.ends_maintenance and notice.deadline is not None:
            ended = node_marks.maintenance_stamp(notice.deadline)
        end = (notice, self._clock()) if notice.ends_maintenance else None
        before = target.node
        node = self._patch_node(before, lambda n: restore_operations(n, key, ended, end), dry)
        if node is None:
            return []
        operations = restore_operations(node, key, ended, end)
        paths = {op["path"] for op in operations if op["op"] == "remove"}
        untainted = any(op["path"] == "/spec/taints" for op in operations)
        actions: list[Action] = [{"type": "untaint", "key": key}] if untainted else []
        if "/spec/unschedulable" in paths:
            actions.append({"type": "uncordon"})
        if any(p.startswith("/metadata/labels/") for p in paths):
            actions.append({"type": "unlabel", "key": nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL})
        return actions

    def _patch_node(
        self, node: Obj, operations_for: Callable[[Obj], list[dict[str, Any]]], dry: bool
    ) -> Obj | None:
        """Apply the JSON patch built from the node as read; on 409/422 (it changed since),
        read it again and rebuild. The node the applied patch was built from (None if the
        node is gone); in a dry run, ``node`` itself, unpatched."""
        if dry:
            return node
        for attempt in range(PATCH_ATTEMPTS):
            operations = operations_for(node)
            if not operations:
                return node
            try:
                self._kube.patch_node(nodes.name_of(node), operations)
                return node
            except KubeError as error:
                if error.status == 404:
                    return None  # deleted since it was read: gone, nothing to patch
                if error.status not in (409, 422) or attempt == PATCH_ATTEMPTS - 1:
                    raise
            fresh = self._kube.get_node(nodes.name_of(node))
            if fresh is None:
                return None
            node = fresh
        return node

    # -- Karpenter -------------------------------------------------------------------------

    def _waits_for_replacement(self, notice: Notice, target: Target, decision: Decision) -> bool:
        """Whether this hand-over deletes the old claim only once its replacement is
        initialized (``hand_over`` when-ready): voluntary notices only (an involuntary one's
        instance goes anyway), not when forced (a scheduled change at its lead), and only
        for a claim whose uid the follow-up can check."""
        return (
            self._settings.hand_over == WHEN_READY
            and not notice.involuntary
            and not decision.forced
            and target.claim is not None
            and target.claim.uid is not None
        )

    def _hold(self, notice: Notice, target: Target, replacement: str, dry: bool) -> list[Action]:
        """Keep the old node out of Karpenter's drift and consolidation while its hand-over
        waits, and mark it with the hand-over (``handover.hold_operations``)."""
        if target.node is None:
            return []
        record = self._hand_over(notice, target, replacement)
        node = self._patch_node(target.node, lambda n: hold_operations(n, record), dry)
        return [] if node is None else [{"type": "hold-node", "key": nodes.DO_NOT_DISRUPT}]

    def _hand_over(self, notice: Notice, target: Target, replacement: str) -> Record:
        """The hand-over about to wait for ``replacement``, as its objects carry it (issue
        33.3): the wake-up the sweep does the work of if its own chain breaks, due when the
        sweep takes over."""
        started = self._clock()
        until = started + PATIENCE + SWEEP_GRACE
        claim = target.claim
        wakeup = Wakeup(
            Task.HAND_OVER,
            notice,
            until,
            replacement=replacement,
            old_nodeclaim=claim.name if claim else None,
            old_nodeclaim_uid=claim.uid if claim else None,
            started=started,
            cluster=target.info.cluster if target.info else None,
        )
        return Record(until, encode(wakeup))

    def _release(self, target: Target, name: str | None, dry: bool) -> list[Action]:
        """Remove the protection Lifeboat put on the old node and on replacement ``name``,
        from the claim and from its Node (registration copied it there, and Karpenter reads
        the Node's annotations once registered). [] when there is none of ours."""
        if target.node is not None:
            self._patch_node(target.node, unprotect_operations, dry)
        claim = self._kube.get_nodeclaim(name) if name else None
        if claim is None or name is None:
            return []
        node_name = (claim.get("status") or {}).get("nodeName")
        node = self._kube.get_node(node_name) if node_name else None
        released = False
        for obj, patch in ((claim, self._patch_claim), (node, self._kube.patch_node)):
            operations = unprotect_operations(obj) if obj is not None else []
            if operations and obj is not None:
                released = True
                if not dry:
                    patch(nodes.name_of(obj), operations)
        return [{"type": "unprotect-nodeclaim", "name": name}] if released else []

    def _patch_claim(self, name: str, operations: list[dict[str, Any]]) -> Any:
        return self._kube.patch_nodeclaim(name, operations)

    def _give_back(self, notice: Notice, target: Target, dry: bool) -> list[Action]:
        """Put the old node back in service: a hand-over given up on keeps its claim."""
        if target.node is None:
            return []
        key = node_marks.taint_key(notice.kind)
        node = self._patch_node(target.node, lambda n: give_back_operations(n, key), dry)
        return [] if node is None else [{"type": "uncordon"}, {"type": "untaint", "key": key}]

    def _replace(
        self, notice: Notice, target: Target, outcome: ActResult, dry: bool, protected: bool
    ) -> str | None:
        """Create the replacement. A claim that cannot be built, or that the API server
        refuses (422, 403, 5xx after retries), is reported on the action and in
        ``replacement_refused``: an involuntary notice still deletes the old claim (the
        instance goes anyway; Karpenter's provisioner makes capacity for the drained pods),
        a voluntary one keeps it."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act._replace: target.node is None")
        if target.claim is None or target.nodepool is None:
            return None
        built = replacement_nodeclaim(
            target.nodepool,
            target.node,
            target.claim.name,
            notice.dedup_key,
            target.claim.uid,
            reservation_reclaimed=notice.kind in _RESERVATION_RECLAIMED,
            reservation_id=notice.reservation_id,
            usage=target.usage,
        )
        if built.claim is None:
            outcome.actions.append({"type": "create-nodeclaim", "name": None, "error": built.note})
            outcome.replacement_refused = built.note
            return None
        name = nodes.name_of(built.claim)
        action: Action = {"type": "create-nodeclaim", "name": name}
        body = dict(built.claim)
        if protected:
            # Kept out of consolidation until the hand-over (lifeboat.marks.handover).
            body = protect(built.claim, self._hand_over(notice, target, name))
            action["protection"] = f"{nodes.DO_NOT_DISRUPT} until initialized"
        if built.note:
            action["note"] = built.note
        if dry:
            outcome.actions.append(action)
            return None
        try:
            self._kube.create_nodeclaim(body)
        except Conflict:
            # AlreadyExists: the replacement's name derives from the old claim, so another
            # notice, delivery or invocation already made this one. Never a second one.
            namesake = self._namesake(name, target.claim.name)
            if namesake is not None:
                action["error"] = namesake
                outcome.actions.append(action)
                return None
            action["existing"] = True
            outcome.replaced_before = True
        except KubeError as error:
            action["error"] = f"{error.status}: {error}"[:500]
            outcome.actions.append(action)
            outcome.replacement_refused = f"refused by the API server: {action['error']}"
            return None
        outcome.actions.append(action)
        return name

    def _namesake(self, name: str, old_claim: str) -> str | None:
        """Why the claim named ``name`` that exists already is not ``old_claim``'s
        replacement (None: it is, or it is gone). A claim of that name replacing another
        claim (or none) is not this one's replacement, and this one gets none from Lifeboat
        (Karpenter's provisioner makes capacity for the drained pods)."""
        existing = self._kube.get_nodeclaim(name)
        replaces = nodes.labels_of(existing or {}).get(node_marks.REPLACES_LABEL)
        if existing is None or replaces == old_claim:
            return None
        return (
            f"409: NodeClaim {name} exists and is not the replacement of "
            f"{old_claim} ({node_marks.REPLACES_LABEL}={replaces or '(none)'})"
        )

    def _delete_claim(
        self, target: Target, dry: bool, replaced_before: bool, *, forceful: bool = False
    ) -> list[Action]:
        """Delete the old claim, unless it is already being deleted: known from the target,
        or, when an earlier notice already made its replacement, read back (one GET, only
        then: a first notice costs nothing more). No second delete for one claim.
        ``forceful``: the claim is first given Karpenter's termination timestamp
        (:mod:`lifeboat.karpenter.forceful`), as Karpenter annotates before it deletes."""
        claim = target.claim
        if claim is None:
            return []
        if not forceful:
            return self._delete_unless_deleting(claim, dry, replaced_before)
        forced, current = self._force_termination(claim, dry)
        if current is None or nodes.is_deleting(current):
            # Gone, a namesake, or being deleted (Karpenter's, or an earlier delivery's):
            # annotated only; never a second delete.
            existing = {"type": "delete-nodeclaim", "name": claim.name, "existing": True}
            return [*forced, existing] if current is not None else forced
        return forced + self._delete_unless_deleting(claim, dry, replaced_before)

    def _force_termination(self, claim: ClaimRef, dry: bool) -> tuple[list[Action], Obj | None]:
        """``annotateTerminationTimestamp``: the claim's termination timestamp set to now,
        unless it has one (reported as ``existing``); with the claim as last read (None when
        gone or replaced by a namesake). Re-read and retried when the claim changed under
        the patch."""
        current = self._kube.get_nodeclaim(claim.name)
        for attempt in range(PATCH_ATTEMPTS):
            if current is None or claim.uid not in (None, current["metadata"].get("uid")):
                return [], None
            action: Action = {"type": "annotate-nodeclaim", "name": claim.name}
            action["key"] = TERMINATION_TIMESTAMP
            stamp, now = forced_at(current), self._clock()
            if stamp is not None and in_effect(stamp, now):
                return [{**action, "value": stamp, "existing": True}], current
            if stamp is not None:
                # In the future or unparsable (forged, or a grace period's deadline): now.
                action["replaced"] = shown(stamp)
            action["value"] = termination_timestamp(now)
            operations = annotate_operations(current, action["value"], now)
            if dry:
                return [action], current
            try:
                self._kube.patch_nodeclaim(claim.name, operations)
                return [action], current
            except KubeError as error:
                if error.status == 404:
                    return [], None
                if error.status not in (409, 422) or attempt == PATCH_ATTEMPTS - 1:
                    raise
            current = self._kube.get_nodeclaim(claim.name)
        return [], None

    def _delete_unless_deleting(
        self, claim: ClaimRef, dry: bool, replaced_before: bool
    ) -> list[Action]:
        deleting = claim.deleting
        if replaced_before and not deleting and not dry:
            current = self._kube.get_nodeclaim(claim.name)
            namesake = current is not None and claim.uid not in (
                None,
                current["metadata"].get("uid"),
            )
            deleting = current is None or namesake or nodes.is_deleting(current)
        if deleting:
            return [{"type": "delete-nodeclaim", "name": claim.name, "existing": True}]
        if not dry:
            try:
                self._kube.delete_nodeclaim(claim.name, claim.uid)
            except Conflict:
                # The uid precondition failed: the name now belongs to another claim.
                return []
        return [{"type": "delete-nodeclaim", "name": claim.name}]

    # -- drain without Karpenter -----------------------------------------------------------

    def _drain(self, notice: Notice, target: Target, outcome: ActResult, dry: bool) -> None:
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act._drain: target.node is None")
        node_name = nodes.name_of(target.node)
        outcome.pods_remaining = self._evict_pods(notice, node_name, outcome, dry)
        if notice.lifecycle is not None and not dry:
            # NTH issue #355: completing the action while the evicted pods still run their
            # preStop hooks and grace periods lets the instance go under them.
            terminating = disruption_rules.terminating_pods(self._kube.list_pods_on_node(node_name))
            if node_marks.unresponsive(target.node):
                # No kubelet will ever confirm them: a pod a minute past its deletionTimestamp
                # holds nothing up, as Karpenter's drain stops waiting (IsStuckTerminating).
                now = self._clock()
                stuck = [p for p in terminating if disruption_rules.stuck_terminating(p, now)]
                outcome.pods_stuck = len(stuck)
                terminating = [
                    p for p in terminating if not disruption_rules.stuck_terminating(p, now)
                ]
            outcome.pods_terminating = len(terminating)
        waiting = outcome.pods_remaining or outcome.pods_terminating
        if waiting and not dry and notice.lifecycle and self._lifecycle:
            # Keep the instance alive while PodDisruptionBudgets hold the drain back, or
            # while the evicted pods terminate.
            self._lifecycle.heartbeat(notice.lifecycle)

    def _evict_pods(self, notice: Notice, node_name: str, outcome: ActResult, dry: bool) -> int:
        """Evict the node's pods, retrying PDB refusals for ``drain_patience`` seconds (never
        past the notice's deadline); returns how many pods PDBs still hold.

        One clock, the injected one, says when to stop: patience and the deadline are both
        instants on it. The seconds slept (through the injected ``sleep``) bound the wait as
        well, so a clock that stands still (replay's ``--at``) cannot keep it going."""
        give_up = self._clock() + timedelta(seconds=self._drain_patience)
        if notice.deadline is not None:
            give_up = min(give_up, notice.deadline)
        slept = 0.0
        delay = 0.5
        while True:
            blocked = self._evict_round(node_name, outcome, dry)
            if blocked == 0 or dry:
                return blocked
            left = (give_up - self._clock()).total_seconds()
            if left <= 0 or slept >= self._drain_patience:
                return blocked
            pause = min(delay, left, self._drain_patience - slept)
            self._sleep(pause)
            slept += pause
            delay = min(delay * 2, 5.0)

    def _evict_round(self, node_name: str, outcome: ActResult, dry: bool) -> int:
        """One eviction request per pod on the node; how many a PDB refused (429)."""
        blocked = 0
        for pod in disruption_rules.evictable_pods(self._kube.list_pods_on_node(node_name)):
            meta = pod["metadata"]
            namespace, name = meta.get("namespace", "default"), meta["name"]
            result = Eviction.EVICTED if dry else self._kube.evict_pod(namespace, name)
            if result is Eviction.EVICTED:
                outcome.actions.append({"type": "evict", "pod": f"{namespace}/{name}"})
            elif result is Eviction.BLOCKED:
                blocked += 1
        return blocked

    def _complete_lifecycle(self, notice: Notice, dry: bool) -> list[Action]:
        if notice.lifecycle is None or self._lifecycle is None:
            return []
        if not dry:
            self._lifecycle.complete(notice.lifecycle, "CONTINUE")
        return [{"type": "complete-lifecycle-action", "result": "CONTINUE"}]

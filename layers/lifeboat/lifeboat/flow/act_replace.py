"""Act's replacement: the replacement NodeClaim created (never a second one for one old
claim), and a when-ready hand-over's marks: the old node held while it waits, the
protection released once it is done, the old node given back when it is given up on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from lifeboat.decide import Decision
from lifeboat.errors import BrokenInvariant
from lifeboat.flow.act_node import NodeMarker
from lifeboat.flow.act_result import Action, ActResult
from lifeboat.karpenter.replacement import replacement_nodeclaim
from lifeboat.kube import nodes
from lifeboat.kube.client import Conflict, KubeApi, KubeError
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
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.settings import WHEN_READY, Settings
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import Task, Wakeup, encode

# Kinds whose reservation is being taken back: the replacement is kept out of it.
_RESERVATION_RECLAIMED = (Kind.CAPACITY_RESERVATION_INTERRUPTION, Kind.CAPACITY_BLOCK_EXPIRY)


class Replacer:
    def __init__(
        self,
        kube: KubeApi,
        settings: Settings,
        clock: Callable[[], datetime],
        marker: NodeMarker,
    ) -> None:
        self._kube = kube
        self._settings = settings
        self._clock = clock
        self._marker = marker

    def waits_for_replacement(self, notice: Notice, target: Target, decision: Decision) -> bool:
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

    def hold(self, notice: Notice, target: Target, replacement: str, dry: bool) -> list[Action]:
        """Keep the old node out of Karpenter's drift and consolidation while its hand-over
        waits, and mark it with the hand-over (``handover.hold_operations``)."""
        if target.node is None:
            return []
        record = self._hand_over(notice, target, replacement)
        node = self._marker.patch(target.node, lambda n: hold_operations(n, record), dry)
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

    def release(self, target: Target, name: str | None, dry: bool) -> list[Action]:
        """Remove the protection Lifeboat put on the old node and on replacement ``name``,
        from the claim and from its Node (registration copied it there, and Karpenter reads
        the Node's annotations once registered). [] when there is none of ours."""
        if target.node is not None:
            self._marker.patch(target.node, unprotect_operations, dry)
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

    def give_back(self, notice: Notice, target: Target, dry: bool) -> list[Action]:
        """Put the old node back in service: a hand-over given up on keeps its claim."""
        if target.node is None:
            return []
        key = node_marks.taint_key(notice.kind)
        node = self._marker.patch(target.node, lambda n: give_back_operations(n, key), dry)
        return [] if node is None else [{"type": "uncordon"}, {"type": "untaint", "key": key}]

    def replace(
        self, notice: Notice, target: Target, outcome: ActResult, dry: bool, protected: bool
    ) -> str | None:
        """Create the replacement. A claim that cannot be built, or that the API server
        refuses (422, 403, 5xx after retries), is reported on the action and in
        ``replacement_refused``: an involuntary notice still deletes the old claim (the
        instance goes anyway; Karpenter's provisioner makes capacity for the drained pods),
        a voluntary one keeps it."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act_replace.replace: target.node is None")
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

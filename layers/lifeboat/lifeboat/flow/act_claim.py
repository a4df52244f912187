"""Act's deletion of the old NodeClaim: once, never a second delete for one claim (nor a
delete of a namesake), forced first with Karpenter's termination timestamp when asked."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from lifeboat.flow.act_result import PATCH_ATTEMPTS, Action
from lifeboat.karpenter.forceful import (
    TERMINATION_TIMESTAMP,
    annotate_operations,
    forced_at,
    in_effect,
    shown,
    termination_timestamp,
)
from lifeboat.kube import nodes
from lifeboat.kube.client import Conflict, KubeApi, KubeError
from lifeboat.model.objects import Obj
from lifeboat.model.target import ClaimRef, Target


class ClaimDeleter:
    def __init__(self, kube: KubeApi, clock: Callable[[], datetime]) -> None:
        self._kube = kube
        self._clock = clock

    def delete(
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
            if current is None or _namesake(claim, current):
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
            deleting = current is None or _namesake(claim, current) or nodes.is_deleting(current)
        if deleting:
            return [{"type": "delete-nodeclaim", "name": claim.name, "existing": True}]
        if not dry:
            try:
                self._kube.delete_nodeclaim(claim.name, claim.uid)
            except Conflict:
                # The uid precondition failed: the name now belongs to another claim.
                return []
        return [{"type": "delete-nodeclaim", "name": claim.name}]


def _namesake(claim: ClaimRef, current: Obj) -> bool:
    """Whether ``current`` is another claim by ``claim``'s name (its uid differs)."""
    return claim.uid not in (None, current["metadata"].get("uid"))

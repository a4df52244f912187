"""Carry out a decision on the cluster. Every step is idempotent, so a redelivered message or
a retry after a crash between two steps never does anything twice.

Order matters: the taint and cordon go first (one patch), because that is what keeps new
pods off a node that is about to go; then the replacement claim, then the old claim's
deletion (Karpenter drains and terminates) or, with no Karpenter, the drain.

``Actor`` runs the steps in order and completes a lifecycle action; each step is done by
the part that owns it: the node's marks (``act_node``), the replacement and its hand-over
(``act_replace``), the old claim's deletion (``act_claim``), the drain (``act_drain``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from functools import cached_property

from lifeboat.decide import Decision, Step
from lifeboat.flow.act_claim import ClaimDeleter
from lifeboat.flow.act_drain import Drainer
from lifeboat.flow.act_node import NodeMarker
from lifeboat.flow.act_replace import Replacer
from lifeboat.flow.act_result import (
    EXCLUSION_ACTION,
    PATCH_ATTEMPTS,
    Action,
    ActResult,
    LifecycleActions,
)
from lifeboat.kube.client import KubeApi
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.objects import Obj
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target

__all__ = [
    "EXCLUSION_ACTION",
    "PATCH_ATTEMPTS",
    "ActResult",
    "Action",
    "Actor",
    "LifecycleActions",
]


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
        self._marker = NodeMarker(kube, settings, clock)

    # The other parts are built when a step first needs them: a notice that only taints
    # (a Spot warning's first PATCH, ``taint_unread``) builds no replacement nor drain.

    @cached_property
    def _replacer(self) -> Replacer:
        return Replacer(self._kube, self._settings, self._clock, self._marker)

    @cached_property
    def _claims(self) -> ClaimDeleter:
        return ClaimDeleter(self._kube, self._clock)

    @cached_property
    def _drainer(self) -> Drainer:
        return Drainer(self._kube, self._lifecycle, self._clock, self._sleep, self._drain_patience)

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
        marker, replacer = self._marker, self._replacer
        waits = replacer.waits_for_replacement(notice, target, decision)
        for step in decision.steps:
            if outcome.node_gone and step is not Step.COMPLETE_LIFECYCLE:
                continue  # deleted under us: no replacement, no drain, nothing to delete
            if step is Step.TAINT_AND_CORDON:
                outcome.actions += marker.taint(notice, target, "cordon", dry, outcome)
            elif step is Step.CLEAR_PENDING:
                outcome.actions += marker.clear_pending(notice, target, dry)
            elif step is Step.MARK_PENDING:
                outcome.actions += marker.taint(notice, target, "prefer", dry, outcome)
            elif step is Step.CREATE_REPLACEMENT:
                outcome.replacement = replacer.replace(notice, target, outcome, dry, waits)
            elif step is Step.DELETE_NODECLAIM:
                outcome.actions += self._delete(notice, target, decision, outcome, waits)
            elif step is Step.RELEASE_REPLACEMENT:
                outcome.actions += replacer.release(target, replacement, dry)
            elif step is Step.GIVE_BACK:
                outcome.actions += replacer.give_back(notice, target, dry)
            elif step is Step.EVICT:
                self._drainer.drain(notice, target, outcome, dry)
            elif step is Step.RESTORE:
                outcome.actions += marker.restore(notice, target, dry)
            elif step is Step.COMPLETE_LIFECYCLE and outcome.pods_remaining == 0:
                if outcome.pods_terminating and not _lifecycle_expired(notice, self._clock()):
                    continue  # the instance must outlive its pods' grace periods
                outcome.pods_terminating = 0
                outcome.actions += self._complete_lifecycle(notice, dry)
        return outcome

    def _delete(
        self, notice: Notice, target: Target, decision: Decision, outcome: ActResult, waits: bool
    ) -> list[Action]:
        """The old claim deleted, or held while a when-ready hand-over waits for its
        replacement, or kept when a voluntary notice's replacement did not come."""
        dry = self._settings.dry_run
        if outcome.replacement_refused and not (notice.involuntary or decision.forced):
            # Voluntary work never deletes a claim whose replacement did not come:
            # its pods would wait with nowhere to go (the caller defers the notice).
            return []
        planned = outcome.replacement or (_planned(outcome) if dry else None)
        if waits and planned is not None:
            outcome.awaiting = planned  # deleted once it is initialized
            return self._replacer.hold(notice, target, planned, dry)
        # An impaired instance is forced out, as Karpenter >= 1.13 does.
        forceful = notice.kind is Kind.INSTANCE_IMPAIRED
        return self._claims.delete(target, dry, outcome.replaced_before, forceful=forceful)

    def mark_ec2_maintenance(self, notice: Notice, target: Target) -> bool:
        """Label the node with the start of the EC2 event the sweep now sees
        (``NodeMarker.mark_ec2_maintenance``); whether a patch was sent."""
        return self._marker.mark_ec2_maintenance(notice, target)

    def taint_unread(self, node_name: str, provider_id: str, notice: Notice) -> Obj | None:
        """Taint and cordon an involuntary notice's node without reading it first
        (``NodeMarker.taint_unread``); the node as patched, or None."""
        return self._marker.taint_unread(node_name, provider_id, notice)

    def _complete_lifecycle(self, notice: Notice, dry: bool) -> list[Action]:
        if notice.lifecycle is None or self._lifecycle is None:
            return []
        if not dry:
            self._lifecycle.complete(notice.lifecycle, "CONTINUE")
        return [{"type": "complete-lifecycle-action", "result": "CONTINUE"}]


def _lifecycle_expired(notice: Notice, now: datetime) -> bool:
    """``lifeboat.events.asg_lifecycle.lifecycle_expired``, imported by the first lifecycle
    hook that waits on terminating pods: Auto Scaling's parser stays off the cold start."""
    from lifeboat.events.asg_lifecycle import lifecycle_expired

    return lifecycle_expired(notice, now)

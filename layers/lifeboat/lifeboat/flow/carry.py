"""A decision carried out: act's steps (``lifeboat.flow.act``), the follow-ups it calls for
scheduled as wake-ups, the decision recorded on the node (an Event), and its report.

When a step fails after others were taken, what they did is reported all the same (issue
33.4): the report joins those of the message being handled (``lifeboat.flow.batch.DONE``),
and the message is retried, continuing from there.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import replace
from datetime import datetime

from lifeboat.decide import Decision, Step, decide, follow_ups
from lifeboat.decide.followups import decide_again_at
from lifeboat.decide.notice import replacement_refused
from lifeboat.decide.staleness import Stale
from lifeboat.flow.act import ActResult
from lifeboat.flow.batch import DONE
from lifeboat.flow.config import FlowConfig
from lifeboat.flow.decision_report import decision_report
from lifeboat.kube.client import KubeApi
from lifeboat.model.notice import Notice
from lifeboat.model.report import Report
from lifeboat.model.target import Target
from lifeboat.telemetry.recorder import record, warn_pods
from lifeboat.wakeup.codec import Wakeup


class Carrier:
    """Decides and carries out, for the notices and the wake-ups alike."""

    def __init__(self, config: FlowConfig) -> None:
        self._config = config

    def decide_and_act(
        self,
        kube: KubeApi,
        notice: Notice,
        target: Target,
        stale: Stale | None = None,
        *,
        wakeup: Wakeup | None = None,
    ) -> Report:
        decision = self.decide(notice, target, stale)
        return self.carry_out(kube, notice, target, decision, wakeup=wakeup)

    def decide(self, notice: Notice, target: Target, stale: Stale | None = None) -> Decision:
        config = self._config
        decision = decide(notice, target, config.settings, config.clock(), stale=stale)
        if config.on_decision is not None:
            config.on_decision(notice, target, decision)
        return decision

    def carry_out(
        self,
        kube: KubeApi,
        notice: Notice,
        target: Target,
        decision: Decision,
        *,
        done: ActResult | None = None,
        wakeup: Wakeup | None = None,
        cluster: str | None = None,
    ) -> Report:
        """Carry out ``decision`` (all but the steps ``done`` already took), schedule the
        follow-ups it calls for, record it on the node, and report it."""
        settings = self._config.settings
        now = self._config.clock()
        rest = replace(decision, steps=decision.steps[1:]) if done is not None else decision
        if wakeup is None and target.node is not None and not settings.dry_run:
            warn_pods(kube, target.node, notice, decision, now)  # before the drain starts
        if done is not None and done.node_gone:
            # Deleted under the first step: only a lifecycle action is left to answer.
            kept = tuple(step for step in rest.steps if step is Step.COMPLETE_LIFECYCLE)
            rest = replace(rest, steps=kept)
        result = ActResult(actions=list(done.actions) if done is not None else [])
        # A give-up's wake-ups come first: the one that takes a maintenance's node out
        # (decide.followups._after_give_up) must exist before the node is put back in
        # service; if it cannot be scheduled, the node stays held and the message (or the
        # sweep, lifeboat.flow.handover_sweep) tries again.
        first = decision.gave_up
        try:
            if first:
                self._follow_up(notice, target, decision, result, now, wakeup)
            self._config.actor(kube).carry_out(
                notice,
                target,
                rest,
                replacement=wakeup.replacement if wakeup else None,
                into=result,
            )
            decision = as_carried_out(notice, target, decision, result, now)
            if not first:
                self._follow_up(notice, target, decision, result, now, wakeup)
        except Exception as error:  # what was done is reported all the same (issue 33.4)
            self._interrupted(kube, notice, target, decision, result, error, cluster)
            raise
        if not settings.dry_run and target.node is not None:
            record(kube, target.node, notice, decision, now)
        return decision_report(
            notice,
            target,
            decision,
            result.actions,
            pods_remaining=result.pods_remaining,
            dry_run=settings.dry_run,
            cluster=cluster,
            recheck_at=decide_again_at(decision, wakeup.due if wakeup is not None else now),
        )

    def _follow_up(
        self,
        notice: Notice,
        target: Target,
        decision: Decision,
        result: ActResult,
        now: datetime,
        wakeup: Wakeup | None,
    ) -> None:
        """Schedule the wake-ups ``decision``, carried out as ``result`` says, calls for."""
        settings, wakeups = self._config.settings, self._config.wakeups
        if settings.dry_run or wakeups is None:
            return
        for later in follow_ups(
            notice,
            target,
            decision,
            pods_remaining=result.pods_remaining + result.pods_terminating,
            now=now,
            wakeup=wakeup,
            release_cordon_after=settings.rebalance_cordon_release,
            awaiting=result.awaiting,
            maintenance_lead=settings.scheduled_change_lead,
        ):
            wakeups.schedule(later)

    def _interrupted(
        self,
        kube: KubeApi,
        notice: Notice,
        target: Target,
        decision: Decision,
        result: ActResult,
        error: Exception,
        cluster: str | None,
    ) -> None:
        """A step failed after others were taken: what they did is reported now (log,
        metrics, Event, notification, through the message's reports), though the message
        fails and is retried (issue 33.4). Nothing taken: nothing to report but the error."""
        if not result.actions:
            return
        dry_run = self._config.settings.dry_run
        why = f"{type(error).__name__}: {error}"[:300]
        reason = (
            f"{decision.reason}; interrupted ({why}) after {len(result.actions)} action(s): "
            "the message is retried and continues from there"
        )
        partial = replace(decision, reason=reason)
        if target.node is not None and not dry_run:
            with suppress(Exception):  # the audit trail must not hide the failure itself
                record(kube, target.node, notice, partial, self._config.clock(), part="interrupted")
        report = decision_report(
            notice, target, partial, result.actions, dry_run=dry_run, cluster=cluster
        )
        gathered = DONE.get()
        if gathered is not None:  # None: handled outside a message (a test's direct call)
            gathered.append(report)


def as_carried_out(
    notice: Notice, target: Target, decision: Decision, result: ActResult, now: datetime
) -> Decision:
    """The decision as act carried it out: waiting when its replacement was refused, its
    reason saying what is still to come (a hand-over when ready, evicted pods terminating)."""
    if result.replacement_refused is not None:
        decision = replacement_refused(notice, decision, result.replacement_refused, now)
    if result.awaiting is not None:
        decision = replace(
            decision,
            reason=f"{decision.reason}; NodeClaim {target.claim.name if target.claim else ''}"
            f" is deleted once replacement {result.awaiting} is initialized (hand-over "
            "when ready)",
        )
    if result.pods_stuck:
        decision = replace(
            decision,
            reason=f"{decision.reason}; {result.pods_stuck} pod(s) stuck terminating on node "
            f"{target.node_name} (NotReady or impaired, deleted over a minute ago): not waited "
            "for, as Karpenter's IsStuckTerminating",
        )
    if result.pods_terminating:
        decision = replace(
            decision,
            reason=f"{decision.reason}; {result.pods_terminating} evicted pod(s) still "
            "terminating: the lifecycle action is completed once they are gone",
        )
    return decision

"""Lifeboat's own deferred work, when it comes due: a wake-up (``lifeboat.wakeup``) triaged
again (``lifeboat.flow.routing.triage_follow_up``), judged by ``lifeboat.decide.wakeups``
against the cluster as it is now, and carried out (``lifeboat.flow.carry``). A ``decide``
wake-up is a deferred notice, decided again like an AWS notice. The sweep takes over the
hand-overs whose wake-ups no longer run (:meth:`Waker.take_over`).
"""

from __future__ import annotations

from dataclasses import replace

from lifeboat.decide import Decision, Step
from lifeboat.decide.wakeups import (
    check_old_claim,
    continue_drain,
    finish_replacement,
    hand_over_when_ready,
    release_cordon,
)
from lifeboat.errors import BrokenInvariant
from lifeboat.flow.batch import Batch, Swept
from lifeboat.flow.config import FlowConfig
from lifeboat.flow.notices import NoticeHandler, not_let_through
from lifeboat.flow.resolve import Resolver
from lifeboat.flow.routing import triage_follow_up
from lifeboat.kube import nodes
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Kind
from lifeboat.model.report import Outcome, Report
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import Task, Wakeup


class Waker:
    """Handles wake-ups: decided again, or Lifeboat's follow-up work finished."""

    def __init__(self, config: FlowConfig, notices: NoticeHandler) -> None:
        self._config = config
        self._notices = notices

    def wake(self, batch: Batch, wakeup: Wakeup) -> Report:
        if wakeup.task is Task.DECIDE:  # decided again like an AWS notice
            return self._notices.handle(batch, wakeup.notice, wakeup)
        config, notice = self._config, wakeup.notice
        info = batch.infos.get(notice.instance_id or "")
        managed = config.managed(info.cluster if info is not None else wakeup.cluster)
        checked = triage_follow_up(wakeup, info, config.settings, config.clock(), managed)
        if checked.outcome is not None or notice.instance_id is None:
            return not_let_through(notice, checked)
        resolver = batch.resolver(checked.cluster)
        target, decision = self._judge(resolver, wakeup, notice.instance_id, info)
        return self._notices.carrier.carry_out(
            resolver.kube, notice, target, decision, wakeup=wakeup, cluster=checked.cluster
        )

    def take_over(self, batch: Batch, swept: Swept, reports: list[Report]) -> list[Report]:
        """Do the work of each hand-over whose wake-ups no longer run, as its wake-up would
        (lifeboat.flow.handover_sweep); one that fails is reported, and the next sweep finds
        it again (its marks stay until the work is done)."""
        for problem in swept.problems:
            reports.append(Report(None, str(Kind.UNSUPPORTED), Outcome.IGNORED, problem))
        for wakeup in swept.hand_overs:
            try:
                report = self.wake(batch, wakeup)
            except Exception as error:
                why = f"{type(error).__name__}: {error}"[:300]
                report = Report.for_notice(
                    wakeup.notice,
                    Outcome.IGNORED,
                    f"could not finish or give up the hand-over ({why}); the next sweep tries "
                    "again",
                )
            taken = f"hand-over taken over by the instance status sweep: {report.reason}"
            reports.append(replace(report, reason=taken, wakeup=str(wakeup.task)))
        return reports

    def _judge(
        self, resolver: Resolver, wakeup: Wakeup, instance: str, info: InstanceInfo | None
    ) -> tuple[Target, Decision]:
        """The target of a follow-up wake-up, and what ``lifeboat.decide.wakeups`` says now."""
        if wakeup.task in (Task.CONTINUE_DRAIN, Task.RELEASE_CORDON):
            if info is None:  # triage_follow_up lets only hand-overs go on without
                what = (
                    "a drain to continue"
                    if wakeup.task is Task.CONTINUE_DRAIN
                    else "a cordon to release"
                )
                raise BrokenInvariant(f"Waker._judge: {what} without its instance")
            target = resolver.resolve(instance, info)
            if wakeup.task is Task.CONTINUE_DRAIN:
                return target, continue_drain(target)
            return target, release_cordon(target)
        if wakeup.task is Task.HAND_OVER:
            return self._hand_over(resolver, wakeup, instance, info)
        target = Target(instance, info, claim=wakeup.old_claim)
        old = resolver.kube.get_nodeclaim(wakeup.old_nodeclaim or "")
        name = wakeup.replacement
        return target, check_old_claim(wakeup, old) or finish_replacement(
            wakeup, resolver.kube.get_nodeclaim(name) if name else None
        )

    def _hand_over(
        self, resolver: Resolver, wakeup: Wakeup, instance: str, info: InstanceInfo | None
    ) -> tuple[Target, Decision]:
        # The old node is read too: a hand-over given up on puts it back in service.
        target = Target(instance, info, claim=wakeup.old_claim)
        if info is not None:
            target = replace(resolver.resolve(instance, info), claim=wakeup.old_claim)
        old = resolver.kube.get_nodeclaim(wakeup.old_nodeclaim or "")
        if old is not None and wakeup.old_claim is not None and nodes.is_deleting(old):
            # A redelivered look, or the old claim deleted meanwhile: no second delete.
            target = replace(target, claim=replace(wakeup.old_claim, deleting=True))
        name = wakeup.replacement
        stale = check_old_claim(wakeup, old)
        if stale is not None:  # nothing to hand over: the replacement is freed all the same
            return target, replace(stale, steps=(Step.RELEASE_REPLACEMENT,))
        claim = resolver.kube.get_nodeclaim(name) if name else None
        return target, hand_over_when_ready(wakeup, claim, self._config.clock())

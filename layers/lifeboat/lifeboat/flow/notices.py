"""Each notice of a message handled once: triage (``lifeboat.flow.routing``), an involuntary
notice's node tainted at once, the target resolved (``lifeboat.flow.resolve``), a voluntary
notice weighed against its pool's budget under the pool's lease, then decided and carried
out (``lifeboat.flow.carry``). The ledger makes a second delivery a duplicate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import cached_property, partial
from typing import Any

from lifeboat.aws.sweep import too_recently_impaired
from lifeboat.decide.staleness import staleness
from lifeboat.flow.batch import Batch
from lifeboat.flow.carry import Carrier
from lifeboat.flow.claim_check import karpenter_acted_first
from lifeboat.flow.config import FlowConfig
from lifeboat.flow.resolve import Resolver
from lifeboat.flow.routing import Triage, triage
from lifeboat.flow.split import remainders
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.kube.pool_lock import PoolLock
from lifeboat.model.deadline import INVOCATION_RESERVE
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.report import Outcome, Report
from lifeboat.model.target import Target
from lifeboat.wakeup.codec import Wakeup


class NoticeHandler:
    """Handles notices: AWS's, a sweep's, a rotation's nodes', and a deferred one decided
    again (a ``decide`` wake-up)."""

    def __init__(self, config: FlowConfig) -> None:
        self._config = config

    @cached_property
    def carrier(self) -> Carrier:
        """Decides and carries out (built when first needed: an involuntary notice's node is
        tainted before)."""
        return Carrier(self._config)

    def handle_all(
        self,
        batch: Batch,
        notices: list[Notice],
        reports: list[Report] | None = None,
        again: bool = False,
    ) -> list[Report]:
        """Each notice handled once (the ledger); ``reports`` gathers them as they are done,
        so they outlast a failure of a later one. ``again``: the message was received before
        (and failed): what the ledger finds done was done by that receipt."""
        config = self._config
        reports = [] if reports is None else reports
        for index, notice in enumerate(notices):
            if index and self.out_of_time(batch):
                config.hand_on(remainders(notices[index:], len(notices)))
                break
            early = too_recently_impaired(notice, config.settings)
            if early is not None:  # not remembered: the next sweep sees it again
                reports.append(Report.for_notice(notice, Outcome.IGNORED, early))
                continue
            # The end of a maintenance is looked at each time it is reported (undoing is
            # idempotent, and the node may become Ready only at a later sweep).
            if config.ledger is None or notice.ends_maintenance:
                reports.append(self.handle(batch, notice))
                continue
            self.taint_first(batch, notice)  # done already by the batch's taint phase?
            report = config.ledger.once(notice.ledger_key, partial(self.handle, batch, notice))
            if report is None and notice.ec2_event and notice.deadline is not None:
                # Told by Health first: the sweep has now seen EC2's event (once per
                # maintenance), so the node is labelled and the event's vanishing ends it.
                seen = partial(self._mark_ec2_maintenance, batch, notice)
                config.ledger.once(f"ec2-seen#{notice.ledger_key}", seen)
            if report is None:
                report = Report.for_notice(notice, Outcome.IGNORED, _handled_before(again))
            reports.append(report)
        return reports

    def handle(self, batch: Batch, notice: Notice, wakeup: Wakeup | None = None) -> Report:
        """Triage, decide and act on one notice; ``wakeup``: the DECIDE wake-up it came back
        in, whose due time (not the clock) times what follows, so a wake-up delivered twice
        schedules the same next one instead of forking its chain."""
        config = self._config
        info = batch.infos.get(notice.instance_id or "")
        managed = config.managed(info.cluster if info is not None else None)
        checked = triage(notice, info, config.settings, config.clock(), managed)
        if checked.outcome is not None or info is None or notice.instance_id is None:
            return not_let_through(notice, checked)
        resolver = batch.resolver(checked.cluster)
        # A notice past its age limit is judged from the present state, as a voluntary one
        # (lifeboat.decide.staleness): never tainted at once, never forced.
        stale = staleness(notice, info, config.settings, config.clock())
        if notice.involuntary and stale is None:
            if notice.ledger_key in batch.tainted:  # tainted before the ledger's record
                node = batch.tainted.pop(notice.ledger_key)
            else:
                _fail_on_outage(batch, notice)
                node = self._taint_at_once(resolver, notice, info)
            target = resolver.resolve(notice.instance_id, info, node=node)
            if target.node is None and info.from_nodeclaim:
                return self._claim_led_nowhere(batch, notice, info, resolver.kube, wakeup)
            return self.carrier.decide_and_act(resolver.kube, notice, target, wakeup=wakeup)
        target = resolver.resolve(notice.instance_id, info)
        if target.node is None and info.from_nodeclaim:
            return self._claim_led_nowhere(batch, notice, info, resolver.kube, wakeup)
        if (
            target.node is None
            or notice.kind is Kind.ASG_LAUNCH
            or (stale is not None and stale.nothing_going)
        ):
            # Nothing to weigh against a budget: no node, a launch (nothing is done to it), or
            # a stale notice about an instance that is not going after all.
            carrier = self.carrier
            return carrier.decide_and_act(resolver.kube, notice, target, stale, wakeup=wakeup)
        # Voluntary: weigh the budget and take the slot under the pool's lease. Only the
        # first step (the taint that makes the node count as disrupting, or the pending
        # mark) needs the lease; the replacement and the rest follow once it is released.
        with self._pool_lease(resolver.kube, target):
            target = resolver.with_budget_state(target)
            decision = self.carrier.decide(notice, target, stale)
            first = replace(decision, steps=decision.steps[:1])
            held = config.actor(resolver.kube).carry_out(notice, target, first)
        carry_out = self.carrier.carry_out
        return carry_out(resolver.kube, notice, target, decision, done=held, wakeup=wakeup)

    def _claim_led_nowhere(
        self,
        batch: Batch,
        notice: Notice,
        info: InstanceInfo,
        kube: KubeApi,
        wakeup: Wakeup | None,
    ) -> Report:
        """A NodeClaim answered for the instance and no node bears it: let go if Karpenter
        acted first (lifeboat.flow.claim_check), else handled again on EC2's answer (one
        DescribeInstances; if it fails, the message comes back as any failed lookup)."""
        why = karpenter_acted_first(kube, info)
        if why is not None:
            return Report.for_notice(notice, Outcome.IGNORED, why)
        instance_id = info.instance_id
        fresh = self._config.directory.describe([instance_id]).get(instance_id)
        if fresh is None:
            batch.infos.pop(instance_id, None)
        else:
            batch.infos[instance_id] = fresh
        batch.tainted.pop(notice.ledger_key, None)
        return self.handle(batch, notice, wakeup)

    def taint_first(self, batch: Batch, notice: Notice, keep: bool = True) -> None:
        """An involuntary notice's taint and cordon, before the ledger records the notice as
        being handled: that record is a DynamoDB write (retried, and slow, when DynamoDB is
        throttled during a storm), and the node must stop taking pods first. The pipeline
        calls it for every notice of a batch before handling any (its taint phase), and
        ``handle_all`` again for a notice whose taint the phase did not record (it failed).
        Safe to repeat: a duplicate delivery's guarded patch is refused by the API server
        because the taint is there (``Actor.taint_unread``) and changes nothing; what must
        happen once (the replacement, the deletion) stays behind the ledger. The same triage
        and staleness checks as ``handle``, and those ``handle_all`` makes before the ledger
        (an impairment too recent, a maintenance's end). ``keep``: record the node as
        patched for ``handle``; False when other work of the batch may change the node
        before ``handle`` reads it (None recorded: ``handle`` reads it fresh)."""
        config = self._config
        _fail_on_outage(batch, notice)
        info = batch.infos.get(notice.instance_id or "")
        if info is None or not notice.involuntary or notice.ends_maintenance:
            return
        if notice.ledger_key in batch.tainted:  # a duplicate in the batch, tainted already
            return
        managed = config.managed(info.cluster)
        if too_recently_impaired(notice, config.settings):
            return
        now = config.clock()
        checked = triage(notice, info, config.settings, now, managed)
        if checked.outcome is not None or staleness(notice, info, config.settings, now):
            return
        resolver = batch.resolver(checked.cluster)
        node = self._taint_at_once(resolver, notice, info)
        batch.tainted[notice.ledger_key] = node if keep else None

    def _mark_ec2_maintenance(self, batch: Batch, notice: Notice) -> Report:
        config = self._config
        info = batch.infos.get(notice.instance_id or "")
        checked = triage(notice, info, config.settings, config.clock())
        if checked.outcome is not None or info is None or notice.instance_id is None:
            return Report.for_notice(notice, Outcome.IGNORED, checked.reason)
        resolver = batch.resolver(checked.cluster)
        target = resolver.resolve(notice.instance_id, info)
        marked = config.actor(resolver.kube).mark_ec2_maintenance(notice, target)
        why = "labelled with the EC2 event's start" if marked else "nothing to label"
        return Report.for_notice(notice, Outcome.IGNORED, why)

    def out_of_time(self, batch: Batch) -> bool:
        """Whether a message should hand on what it has not started (lifeboat.flow.split)."""
        if batch.time_left is None or self._config.wakeups is None:
            return False
        return batch.time_left() < INVOCATION_RESERVE.total_seconds()

    def _taint_at_once(
        self, resolver: Resolver, notice: Notice, info: InstanceInfo
    ) -> Mapping[str, Any] | None:
        """An involuntary notice is never held back, and its first step is always to taint
        and cordon the node: done before reading the node, with a patch guarded by the
        instance's providerID (saving a request when two minutes is all there is). Not when
        nothing may change (dry run), when EC2 did not say where the node is, or when the
        node's NodePool opted out of Lifeboat (as read at most ``OPT_OUT_TTL`` seconds ago).
        The node as patched, or None."""
        if self._config.settings.dry_run or not info.node_name or not info.zone:
            return None
        # The pool's opt-out verdict may be one read up to OPT_OUT_TTL seconds ago, by an
        # earlier batch (lifeboat.flow.resolve.OptOutVerdicts): no GET before the PATCH. A
        # pool opted out within that window still has the node tainted and cordoned here;
        # its decision, which reads the pool fresh, then leaves it alone.
        if info.nodepool and resolver.opted_out(info.nodepool):
            return None
        provider_id = f"aws:///{info.zone}/{info.instance_id}"
        return self._config.actor(resolver.kube).taint_unread(info.node_name, provider_id, notice)

    @contextmanager
    def _pool_lease(self, kube: KubeApi, target: Target) -> Iterator[None]:
        config = self._config
        if target.nodepool is None or config.settings.dry_run:
            yield
            return
        lock = PoolLock(kube, config.settings.lease_namespace, config.holder, clock=config.clock)
        with lock.hold(nodes.name_of(target.nodepool)):
            yield


def not_let_through(notice: Notice, checked: Triage) -> Report:
    """The report of a notice or wake-up that triage did not let through (rejected, ignored,
    another cluster's), or that names no instance to go on with."""
    return Report.for_notice(
        notice,
        checked.outcome or Outcome.IGNORED,
        checked.reason,
        unmanaged=checked.unmanaged,
        cluster=checked.cluster,
    )


def _fail_on_outage(batch: Batch, notice: Notice) -> None:
    """Raise the outage (no answer, 429, 502-504) the batch's taint phase waited out for
    this notice's taint: waiting it out again could outlast the invocation, and a timed-out
    invocation returns every message of its batch after the queue's 380 s visibility
    timeout, not in the seconds of ``lifeboat.model.deadline.redelivery_delay``."""
    outage = batch.outage.pop(notice.ledger_key, None)
    if outage is not None:
        raise outage


def _handled_before(again: bool) -> str:
    """What a notice the ledger finds handled is: the work of this message's earlier
    receipt, which failed after it (``again``), or of another delivery of the event."""
    if again:
        return (
            "continuing: already handled by an earlier receipt of this message (reported "
            "then); the rest of the message goes on"
        )
    return "duplicate delivery: already handled"

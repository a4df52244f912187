"""parse -> resolve -> decide -> act, for a batch of messages. The fate of every message is
decided here, in one visible place; the Lambda handler and ``lifeboat replay`` both call it.

A message ends as one or more reports (acted, deferred, ignored, rejected), or as an
exception that the caller turns into a batch item failure: the message goes back to the
queue, and after ``maxReceiveCount`` tries into the dead-letter queue. Nothing is dropped
on an error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

from lifeboat import nodes
from lifeboat.act import Actor, ActResult, LifecycleActions
from lifeboat.deadline import retry_window
from lifeboat.decide import Decision, Step, Verdict, decide
from lifeboat.events import parse_message
from lifeboat.events.envelope import load_body
from lifeboat.events.notice import MalformedMessage, Notice
from lifeboat.instances import InstanceDirectory, InstanceInfo
from lifeboat.kube import KubeApi, retrying_for
from lifeboat.ledger import Ledger
from lifeboat.pool_lock import PoolLock
from lifeboat.recorder import record
from lifeboat.report import Outcome, Report
from lifeboat.resolve import Resolver
from lifeboat.routing import foreign_origin, route
from lifeboat.settings import Settings
from lifeboat.target import Target
from lifeboat.wakeup import Task, Wakeup, WakeupSink, decode, is_wakeup

# How often a pending replacement or a PDB-blocked drain is looked at again.
FOLLOW_UP_INTERVAL = timedelta(seconds=30)

_VERDICT_OUTCOME = {
    Verdict.ACT: Outcome.ACTED,
    Verdict.DEFER: Outcome.DEFERRED,
    Verdict.IGNORE: Outcome.IGNORED,
}

Body = str | bytes | Mapping[str, Any]


class ClusterClients(Protocol):
    """The API of each managed cluster (``None``: the instance named no cluster)."""

    def kube(self, cluster: str | None) -> KubeApi: ...


@dataclass(frozen=True)
class OneCluster:
    """Every instance is in the same cluster: replay, tests, single-cluster stacks."""

    api: KubeApi

    def kube(self, cluster: str | None) -> KubeApi:
        return self.api


@dataclass
class MessageResult:
    """The fate of one message: its reports, or the error that sends it back to the queue."""

    reports: list[Report] = field(default_factory=list)
    error: BaseException | None = None
    # The earliest deadline of the message's notices: how soon a failed message must return.
    deadline: datetime | None = None


Parsed = MessageResult | Wakeup | list[Notice]


class _Batch:
    """What the messages of one batch share: instance facts and per-cluster resolvers."""

    def __init__(self, infos: dict[str, InstanceInfo], clients: ClusterClients) -> None:
        self.infos = infos
        self._clients = clients
        self._resolvers: dict[str | None, Resolver] = {}
        self._lock = threading.Lock()

    def resolver(self, cluster: str | None) -> Resolver:
        with self._lock:
            if cluster not in self._resolvers:
                self._resolvers[cluster] = Resolver(self._clients.kube(cluster))
            return self._resolvers[cluster]


@dataclass
class Pipeline:
    clusters: ClusterClients
    directory: InstanceDirectory
    settings: Settings
    clock: Callable[[], datetime]
    lifecycle: LifecycleActions | None = None
    wakeups: WakeupSink | None = None
    ledger: Ledger | None = None
    drain_patience: float = 0.0
    holder: str = "lifeboat"
    # Messages of a batch handled at once; 1 keeps replay's output in a stable order.
    workers: int = 1

    def process(self, bodies: Sequence[Body]) -> list[MessageResult]:
        """Handle one batch. One directory lookup serves all its instances."""
        parsed = [self._parse(body) for body in bodies]
        wanted = sorted(
            {
                notice.instance_id
                for item in parsed
                for notice in _notices_of(item)
                if notice.instance_id
            }
        )
        batch = _Batch(self.directory.describe(wanted) if wanted else {}, self.clusters)
        handle = partial(self._one, batch)
        if self.workers <= 1 or len(parsed) <= 1:
            return [handle(item) for item in parsed]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(parsed))) as pool:
            return list(pool.map(handle, parsed))

    # -- parse -----------------------------------------------------------------------------

    def _parse(self, body: Body) -> Parsed:
        try:
            message = load_body(body)  # decoded once, for both kinds of message
            if is_wakeup(message):
                return decode(message)
            return parse_message(message, received_at=self.clock())
        except MalformedMessage as error:
            return MessageResult([Report.rejected(error.reason, error.event_id)])

    def _one(self, batch: _Batch, item: Parsed) -> MessageResult:
        if isinstance(item, MessageResult):
            return item
        deadline = min((n.deadline for n in _notices_of(item) if n.deadline), default=None)
        try:
            with retrying_for(retry_window(deadline, self.clock())):
                if isinstance(item, Wakeup):
                    report = replace(self._wake(batch, item), wakeup=str(item.task))
                    return MessageResult([report], deadline=deadline)
                return MessageResult(self._notices(batch, item), deadline=deadline)
        except Exception as error:  # the caller returns the message to the queue
            return MessageResult(error=error, deadline=deadline)

    # -- notices ---------------------------------------------------------------------------

    def _notices(self, batch: _Batch, notices: list[Notice]) -> list[Report]:
        reports = []
        for notice in notices:
            if self.ledger is None:
                reports.append(self._handle(batch, notice))
                continue
            report = self.ledger.once(notice.dedup_key, partial(self._handle, batch, notice))
            if report is None:
                report = Report.for_notice(
                    notice, Outcome.IGNORED, "duplicate delivery: already handled"
                )
            reports.append(report)
        return reports

    def _handle(self, batch: _Batch, notice: Notice) -> Report:
        foreign = foreign_origin(notice, self.settings)
        if foreign is not None:
            return Report.for_notice(notice, Outcome.REJECTED, foreign)
        if notice.ignore_reason or not notice.instance_id:
            why = notice.ignore_reason or "the message names no instance"
            return Report.for_notice(notice, Outcome.IGNORED, why)
        info = batch.infos.get(notice.instance_id)
        where = route(notice, info, self.settings, self.clock())
        if where.skip_reason is not None or info is None:
            return Report.for_notice(
                notice,
                Outcome.IGNORED,
                where.skip_reason or "unknown instance",
                unmanaged=True,
                cluster=where.cluster,
            )
        resolver = batch.resolver(where.cluster)
        target = resolver.resolve(notice.instance_id, info)
        if target.node is None or notice.involuntary:
            return self._decide_and_act(resolver, notice, target)
        # Voluntary: weigh the budget and take the slot under the pool's lease. Only the
        # first step (the taint that makes the node count as disrupting, or the pending
        # mark) needs the lease; the replacement and the rest follow once it is released.
        with self._pool_lease(resolver.kube, target):
            target = resolver.with_budget_state(target)
            decision = decide(notice, target, self.settings, self.clock())
            first = replace(decision, steps=decision.steps[:1])
            held = self._actor(resolver.kube).carry_out(notice, target, first)
        return self._carry_out(resolver.kube, notice, target, decision, done=held)

    @contextmanager
    def _pool_lease(self, kube: KubeApi, target: Target) -> Iterator[None]:
        if target.nodepool is None or self.settings.dry_run:
            yield
            return
        lock = PoolLock(kube, self.settings.lease_namespace, self.holder, clock=self.clock)
        with lock.hold(nodes.name_of(target.nodepool)):
            yield

    def _decide_and_act(self, resolver: Resolver, notice: Notice, target: Target) -> Report:
        decision = decide(notice, target, self.settings, self.clock())
        return self._carry_out(resolver.kube, notice, target, decision)

    def _carry_out(
        self,
        kube: KubeApi,
        notice: Notice,
        target: Target,
        decision: Decision,
        done: ActResult | None = None,
    ) -> Report:
        """Carry out ``decision`` (all but the steps ``done`` already took), schedule its
        follow-ups and record it."""
        now = self.clock()
        rest = replace(decision, steps=decision.steps[1:]) if done is not None else decision
        outcome = self._actor(kube).carry_out(notice, target, rest)
        if done is not None:
            outcome.actions[:0] = done.actions
        reason = decision.reason
        if self.settings.dry_run and decision.verdict is not Verdict.IGNORE:
            reason = f"dry run, nothing changed: {reason}"
        if not self.settings.dry_run:
            self._follow_up(notice, target, decision, outcome.replacement, outcome.pods_remaining)
            if target.node is not None:
                record(kube, target.node, notice, decision, now)
        if outcome.pods_remaining:
            reason += f"; {outcome.pods_remaining} pod(s) held by PodDisruptionBudgets, retrying"
        return Report.for_notice(
            notice,
            _VERDICT_OUTCOME[decision.verdict],
            reason,
            node=target.node_name,
            nodepool=target.nodepool_name,
            deferred_until=decision.deferred_until,
            actions=tuple(outcome.actions),
            cluster=target.info.cluster if target.info else None,
            forced=decision.forced,
            gave_up=decision.gave_up,
        )

    def _actor(self, kube: KubeApi) -> Actor:
        return Actor(
            kube,
            self.settings,
            self.lifecycle,
            clock=self.clock,
            drain_patience=self.drain_patience,
        )

    def _follow_up(
        self,
        notice: Notice,
        target: Target,
        decision: Decision,
        replacement: str | None,
        pods_remaining: int,
    ) -> None:
        """Schedule what must happen later; never sleep for it."""
        if self.wakeups is None:
            return
        now = self.clock()
        cluster = target.info.cluster if target.info else None
        if decision.verdict is Verdict.DEFER:
            candidates = [t for t in (decision.deferred_until, decision.recheck_at) if t]
            due = min(candidates) if candidates else now + FOLLOW_UP_INTERVAL
            self.wakeups.schedule(Wakeup(Task.DECIDE, notice, due))
        if Step.FINISH_REPLACEMENT in decision.steps and target.nodeclaim:
            self.wakeups.schedule(
                Wakeup(
                    Task.FINISH_REPLACEMENT,
                    notice,
                    now + FOLLOW_UP_INTERVAL,
                    replacement=replacement,
                    old_nodeclaim=target.nodeclaim,
                    old_nodeclaim_uid=target.nodeclaim_uid,
                    started=now,
                    cluster=cluster,
                )
            )
        if pods_remaining:
            if notice.lifecycle is not None and self.lifecycle is not None:
                # Keep the instance alive while PDBs hold the drain back.
                self.lifecycle.heartbeat(notice.lifecycle)
            due = now + FOLLOW_UP_INTERVAL
            self.wakeups.schedule(Wakeup(Task.CONTINUE_DRAIN, notice, due, cluster=cluster))

    # -- wake-ups --------------------------------------------------------------------------

    def _wake(self, batch: _Batch, wakeup: Wakeup) -> Report:
        if wakeup.task is Task.DECIDE:
            return self._handle(batch, wakeup.notice)
        notice = wakeup.notice
        info = batch.infos.get(notice.instance_id or "")
        resolver = batch.resolver(wakeup.cluster or (info.cluster if info else None))
        if wakeup.task is Task.CONTINUE_DRAIN:
            target = resolver.resolve(notice.instance_id or "", info) if info else Target("")
            steps: tuple[Step, ...] = (Step.DRAIN, Step.COMPLETE_LIFECYCLE)
            if target.node is None:
                steps = (Step.COMPLETE_LIFECYCLE,)
            decision = Decision(Verdict.ACT, "continuing the drain", steps)
            return self._carry_out(resolver.kube, notice, target, decision)
        return self._finish_replacement(resolver.kube, wakeup)

    def _finish_replacement(self, kube: KubeApi, wakeup: Wakeup) -> Report:
        """Delete the old NodeClaim once its replacement is Ready, or when waiting longer
        would only risk the deadline (``replacement_timeout``)."""
        notice, now = wakeup.notice, self.clock()
        started = wakeup.started or now
        claim = kube.get_nodeclaim(wakeup.replacement) if wakeup.replacement else None
        ready = claim is not None and nodes.is_ready(claim)
        give_up = started + self.settings.replacement_timeout
        if claim is not None and not ready and now < give_up:
            due = min(now + FOLLOW_UP_INTERVAL, give_up)
            if self.wakeups is not None:
                self.wakeups.schedule(wakeup.again(due))
            return Report.for_notice(
                notice,
                Outcome.DEFERRED,
                f"waiting for replacement {wakeup.replacement} to become Ready",
                deferred_until=due,
                cluster=wakeup.cluster,
            )
        if ready:
            why = f"replacement {wakeup.replacement} is Ready"
        elif claim is None:
            why = f"replacement {wakeup.replacement or '(none)'} is gone"
        else:
            why = f"replacement {wakeup.replacement} not Ready after the timeout"
        target = Target(
            notice.instance_id or "",
            nodeclaim=wakeup.old_nodeclaim,
            nodeclaim_uid=wakeup.old_nodeclaim_uid,
        )
        decision = Decision(
            Verdict.ACT,
            f"{why}: deleting NodeClaim {wakeup.old_nodeclaim}",
            (Step.DELETE_NODECLAIM,),
        )
        outcome = self._actor(kube).carry_out(notice, target, decision)
        return Report.for_notice(
            notice,
            Outcome.ACTED,
            decision.reason,
            actions=tuple(outcome.actions),
            cluster=wakeup.cluster,
        )


def _notices_of(item: Parsed) -> list[Notice]:
    if isinstance(item, list):
        return item
    if isinstance(item, Wakeup):
        return [item.notice]
    return []

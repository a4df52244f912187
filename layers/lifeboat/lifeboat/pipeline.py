"""parse -> resolve -> decide -> act, for a batch of messages. The fate of every message is
decided here, in one visible place; the Lambda handler and ``lifeboat replay`` both call it.

A message ends as one or more reports (acted, deferred, ignored, rejected), or as an
exception that the caller turns into a batch item failure: the message goes back to the
queue, and after ``maxReceiveCount`` tries into the dead-letter queue. Nothing is dropped
on an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

from lifeboat import nodes
from lifeboat.act import Actor, LifecycleActions
from lifeboat.decide import Decision, Step, Verdict, decide
from lifeboat.events import parse_message
from lifeboat.events.notice import MalformedMessage, Notice
from lifeboat.instances import InstanceDirectory
from lifeboat.kube import KubeApi
from lifeboat.pool_lock import PoolLock
from lifeboat.recorder import record
from lifeboat.report import Outcome, Report
from lifeboat.resolve import Resolver
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


class Ledger(Protocol):
    """Remembers which (event, instance) pairs were handled, so a duplicate acts once."""

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        """Run ``handle`` unless ``key`` was handled before (then None). If ``handle``
        raises, the key is not remembered, so the retry of the message is not a duplicate."""
        ...


class MemoryLedger:
    def __init__(self) -> None:
        self._seen: set[str] = set()

    def once(self, key: str, handle: Callable[[], Report]) -> Report | None:
        if key in self._seen:
            return None
        report = handle()
        self._seen.add(key)
        return report


@dataclass
class MessageResult:
    """The fate of one message: its reports, or the error that sends it back to the queue."""

    reports: list[Report] = field(default_factory=list)
    error: BaseException | None = None


@dataclass
class Pipeline:
    kube: KubeApi
    directory: InstanceDirectory
    settings: Settings
    clock: Callable[[], datetime]
    lifecycle: LifecycleActions | None = None
    wakeups: WakeupSink | None = None
    ledger: Ledger | None = None
    cluster: str | None = None
    drain_patience: float = 0.0
    holder: str = "lifeboat"

    def process(self, bodies: Sequence[str | bytes | Mapping[str, Any]]) -> list[MessageResult]:
        """Handle one batch. One directory lookup serves all its instances."""
        resolver = Resolver(
            self.kube, self.directory, cluster=self.cluster, managed_clusters=self.settings.clusters
        )
        parsed = [self._parse(body) for body in bodies]
        resolver.prefetch(n for item in parsed if isinstance(item, list) for n in item)
        return [self._one(resolver, item) for item in parsed]

    def _one(
        self, resolver: Resolver, item: MessageResult | Wakeup | list[Notice]
    ) -> MessageResult:
        if isinstance(item, MessageResult):
            return item
        try:
            if isinstance(item, Wakeup):
                return MessageResult([self._wake(resolver, item)])
            return MessageResult(self._notices(resolver, item))
        except Exception as error:
            return MessageResult(error=error)

    # -- parse -----------------------------------------------------------------------------

    def _parse(
        self, body: str | bytes | Mapping[str, Any]
    ) -> MessageResult | Wakeup | list[Notice]:
        try:
            message = _as_mapping(body)
            if message is not None and is_wakeup(message):
                return decode(message)
            return parse_message(message if message is not None else body, received_at=self.clock())
        except MalformedMessage as error:
            return MessageResult([Report.rejected(error.reason, error.event_id)])

    # -- notices ---------------------------------------------------------------------------

    def _notices(self, resolver: Resolver, notices: list[Notice]) -> list[Report]:
        reports = []
        for notice in notices:
            if self.ledger is None:
                reports.append(self._handle(resolver, notice))
                continue
            report = self.ledger.once(notice.dedup_key, partial(self._handle, resolver, notice))
            if report is None:
                report = Report.for_notice(
                    notice, Outcome.IGNORED, "duplicate delivery: already handled"
                )
            reports.append(report)
        return reports

    def _handle(self, resolver: Resolver, notice: Notice) -> Report:
        target = resolver.resolve(notice)
        if notice.ignore_reason or target.node is None or notice.involuntary:
            decision = decide(notice, target, self.settings, self.clock())
            return self._carry_out(notice, target, decision)
        # Voluntary: weigh the budget and take the slot under the pool's lease.
        with self._pool_lease(target):
            target = resolver.with_budget_state(target)
            decision = decide(notice, target, self.settings, self.clock())
            return self._carry_out(notice, target, decision)

    @contextmanager
    def _pool_lease(self, target: Target) -> Iterator[None]:
        if target.nodepool is None or self.settings.dry_run:
            with nullcontext():
                yield
            return
        lock = PoolLock(self.kube, self.settings.lease_namespace, self.holder, clock=self.clock)
        with lock.hold(nodes.name_of(target.nodepool)):
            yield

    def _carry_out(self, notice: Notice, target: Target, decision: Decision) -> Report:
        now = self.clock()
        outcome = self._actor().carry_out(notice, target, decision)
        reason = decision.reason
        if self.settings.dry_run and decision.verdict is not Verdict.IGNORE:
            reason = f"dry run, nothing changed: {reason}"
        if not self.settings.dry_run:
            self._follow_up(notice, target, decision, outcome.replacement, outcome.pods_remaining)
            if target.node is not None:
                record(self.kube, target.node, notice, decision, now)
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
        )

    def _actor(self) -> Actor:
        return Actor(
            self.kube,
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
        if decision.verdict is Verdict.DEFER:
            due = decision.deferred_until or decision.recheck_at or now + FOLLOW_UP_INTERVAL
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
                )
            )
        if pods_remaining:
            if notice.lifecycle is not None and self.lifecycle is not None:
                # Keep the instance alive while PDBs hold the drain back.
                self.lifecycle.heartbeat(notice.lifecycle)
            self.wakeups.schedule(Wakeup(Task.CONTINUE_DRAIN, notice, now + FOLLOW_UP_INTERVAL))

    # -- wake-ups --------------------------------------------------------------------------

    def _wake(self, resolver: Resolver, wakeup: Wakeup) -> Report:
        if wakeup.task is Task.DECIDE:
            return self._handle(resolver, wakeup.notice)
        if wakeup.task is Task.CONTINUE_DRAIN:
            target = resolver.resolve(wakeup.notice)
            steps: tuple[Step, ...] = (Step.DRAIN, Step.COMPLETE_LIFECYCLE)
            if target.node is None:
                steps = (Step.COMPLETE_LIFECYCLE,)
            decision = Decision(Verdict.ACT, "continuing the drain", steps)
            return self._carry_out(wakeup.notice, target, decision)
        return self._finish_replacement(resolver, wakeup)

    def _finish_replacement(self, resolver: Resolver, wakeup: Wakeup) -> Report:
        """Delete the old NodeClaim once its replacement is Ready, or when waiting longer
        would only risk the deadline (``replacement_timeout``)."""
        notice, now = wakeup.notice, self.clock()
        started = wakeup.started or now
        claim = self.kube.get_nodeclaim(wakeup.replacement) if wakeup.replacement else None
        ready = claim is not None and _is_ready(claim)
        timed_out = now >= started + self.settings.replacement_timeout
        if claim is not None and not ready and not timed_out:
            due = min(now + FOLLOW_UP_INTERVAL, started + self.settings.replacement_timeout)
            if self.wakeups is not None:
                self.wakeups.schedule(wakeup.again(due))
            return Report.for_notice(
                notice,
                Outcome.DEFERRED,
                f"waiting for replacement {wakeup.replacement} to become Ready",
                deferred_until=due,
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
        outcome = self._actor().carry_out(notice, target, decision)
        return Report.for_notice(
            notice, Outcome.ACTED, decision.reason, actions=tuple(outcome.actions)
        )


def _is_ready(claim: Mapping[str, Any]) -> bool:
    conditions = claim.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _as_mapping(body: str | bytes | Mapping[str, Any]) -> Mapping[str, Any] | None:
    if isinstance(body, Mapping):
        return body
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded if isinstance(decoded, dict) else None

"""parse -> resolve -> decide -> act, for a batch of messages. The fate of every message is
decided here, in one visible place; the Lambda handler and ``lifeboat replay`` both call it.

A message ends as one or more reports (acted, deferred, ignored, rejected), or as an
exception that the caller turns into a batch item failure: the message goes back to the
queue, and after ``maxReceiveCount`` tries into the dead-letter queue. Nothing is dropped
on an error.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from lifeboat.aws.capacity_blocks import CapacityReservations, find_instances
from lifeboat.aws.sweep import (
    InstanceStatuses,
    is_sweep_request,
    sweep_request_problem,
    too_recently_impaired,
)
from lifeboat.decide import Decision, Step, decide, follow_ups
from lifeboat.decide.followups import decide_again_at
from lifeboat.decide.notice import replacement_refused
from lifeboat.decide.staleness import Stale, staleness
from lifeboat.decide.wakeups import (
    check_old_claim,
    continue_drain,
    finish_replacement,
    hand_over_when_ready,
    release_cordon,
)
from lifeboat.errors import BrokenInvariant, RetryLater
from lifeboat.events import parse_message, parse_statuses
from lifeboat.events.capacity_block import read_reservations, unread_reservations
from lifeboat.events.envelope import load_body
from lifeboat.events.instance_status import read_response
from lifeboat.events.notice import Kind, MalformedMessage, Notice
from lifeboat.flow.act import Actor, ActResult, LifecycleActions
from lifeboat.flow.handover_sweep import Swept, orphaned
from lifeboat.flow.lanes import lanes as message_lanes
from lifeboat.flow.lookup import describe_batch, found_before
from lifeboat.flow.resolve import Resolver
from lifeboat.flow.routing import Triage, foreign_origin, triage, triage_follow_up
from lifeboat.flow.split import expand, remainders, split
from lifeboat.flow.sweep_holds import ClusterHolds, listed_events, listing_failed, look_at, relisted
from lifeboat.flow.sweep_triage import Sorted, sort_out
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, retrying_for
from lifeboat.kube.pool_lock import PoolLock
from lifeboat.marks import node_marks
from lifeboat.model.deadline import INVOCATION_RESERVE, is_near, retry_window
from lifeboat.model.instances import InstanceDirectory, InstanceInfo, ReservationDirectory
from lifeboat.model.ledger import Ledger
from lifeboat.model.report import Outcome, Report, decision_report
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target
from lifeboat.rotation.messages import concerns as rotation_concerns
from lifeboat.rotation.messages import is_rotation_event
from lifeboat.telemetry.recorder import record, warn_pods
from lifeboat.wakeup.codec import Task, Wakeup, WakeupSink, decode, is_wakeup

if TYPE_CHECKING:  # the rotation loads with its first message (lifeboat.rotation.messages)
    from lifeboat.rotation.request import RotationCommand
    from lifeboat.rotation.runner import RotationRunner

Body = str | bytes | Mapping[str, Any]


class ClusterClients(Protocol):
    """The API of each managed cluster (``None``: the instance named no cluster)."""

    def kube(self, cluster: str | None) -> KubeApi: ...


class ClusterScope(Protocol):
    """Whether a cluster is this stack's to serve, found at run time (lifeboat.aws.discovery)."""

    def serves(self, cluster: str | None) -> bool: ...

    def serving(self) -> tuple[str, ...]:
        """Every cluster served now (the sweep looks at each one's marked nodes)."""
        ...


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


Parsed: TypeAlias = "MessageResult | Wakeup | list[Notice] | Swept | RotationCommand"


# Clusters whose labelled nodes a sweep lists at once (lifeboat.aws.sweep.vanished).
SWEEP_LISTS_AT_ONCE = 8


class _Batch:
    """What the messages of one batch share: instance facts and per-cluster resolvers."""

    def __init__(
        self,
        infos: dict[str, InstanceInfo],
        clients: ClusterClients,
        time_left: Callable[[], float] | None = None,
    ) -> None:
        self.infos = infos
        self.time_left = time_left
        # The node each involuntary notice's early taint left, by ledger key (None: the
        # patch did not fit), taken by _handle instead of tainting again.
        self.tainted: dict[str, Mapping[str, Any] | None] = {}
        self._clients = clients
        self._resolvers: dict[str | None, Resolver] = {}
        self._lock = threading.Lock()

    def resolver(self, cluster: str | None) -> Resolver:
        with self._lock:
            if cluster not in self._resolvers:
                self._resolvers[cluster] = Resolver(self._clients.kube(cluster))
            return self._resolvers[cluster]


def _not_let_through(notice: Notice, checked: Triage) -> Report:
    """The report of a notice or wake-up that triage did not let through (rejected, ignored,
    another cluster's), or that names no instance to go on with."""
    return Report.for_notice(
        notice,
        checked.outcome or Outcome.IGNORED,
        checked.reason,
        unmanaged=checked.unmanaged,
        cluster=checked.cluster,
    )


def _wanted(parsed: list[Parsed], found: Mapping[str, InstanceInfo]) -> list[str]:
    """The instances of a batch still to be described (not ``found`` while parsing)."""
    return sorted(
        {
            notice.instance_id
            for item in parsed
            for notice in _notices_of(item)
            if notice.instance_id and notice.instance_id not in found
        }
    )


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
    # How the drain waits between rounds of PDB-blocked evictions (tests inject their own,
    # moving their clock).
    sleep: Callable[[float], None] = time.sleep
    # The clock a near deadline's retry window runs on (lifeboat.kube.client.retrying_for): the
    # one the clients' sleep moves.
    monotonic: Callable[[], float] = time.monotonic
    holder: str = "lifeboat"
    # Messages of a batch handled at once; 1 keeps replay's output in a stable order.
    workers: int = 1
    # Told of each decision about a notice, with the target it judged, before it is carried
    # out: ``lifeboat explain`` reads the cluster at that moment. Must not write.
    on_decision: Callable[[Notice, Target, Decision], None] | None = None
    # Instances one message acts on; the rest are handed on as remainders (lifeboat.flow.split).
    # None: every one (replay, where no function timeout applies).
    notices_per_message: int | None = None
    # Where a sweep request (lifeboat.aws.sweep) reads DescribeInstanceStatus; None: ignored.
    statuses: InstanceStatuses | None = None
    # Clusters served by their tag (lifeboat.aws.discovery); None: settings.clusters decide.
    scope: ClusterScope | None = None
    # The ARN of the stack's sweep schedule: the only sender of sweep requests obeyed
    # (lifeboat.aws.sweep.sweep_request_problem); None: not checked (replay, tests).
    sweep_schedule: str | None = None
    # Where an ending Capacity Block's instances are found (lifeboat.aws.capacity_blocks), and
    # where the sweep reads the capacity reservations; None: not looked up, not swept.
    reservations: ReservationDirectory | None = None
    capacity_reservations: CapacityReservations | None = None

    def process(
        self,
        bodies: Sequence[Body],
        *,
        time_left: Callable[[], float] | None = None,
        receives: Sequence[int] | None = None,
    ) -> list[MessageResult]:
        """Handle one batch. One directory lookup serves all its instances.

        ``time_left``: seconds left of the invocation; a message naming several instances
        hands on those it has not started when too little is left (lifeboat.flow.split).
        ``receives``: how many times SQS has delivered each message (its
        ``ApproximateReceiveCount``; None: once each): a message received again after a
        failure continues where it stopped, and says so, instead of calling what its
        earlier receipt did a duplicate."""
        found: dict[str, InstanceInfo] = {}  # instances described already, while parsing
        parsed = [self._parse(body, found) for body in bodies]
        later: list[list[Wakeup]] = [[] for _ in parsed]
        # What a sweep's triage decided before the split (lifeboat.flow.sweep_triage).
        early: list[list[Report]] = [[] for _ in parsed]
        limit = self.notices_per_message
        for index, item in enumerate(parsed):
            if limit and self.wakeups is not None and isinstance(item, list) and len(item) > limit:
                parsed[index], later[index] = split(item, limit)
            elif isinstance(item, Swept):
                early[index] = item.reports
                found.update(item.infos)
                if limit and self.wakeups is not None:
                    item.notices, later[index] = split(item.notices, limit)
        described, failed = self._describe(_wanted(parsed, found), parsed, time_left)
        infos = found | described
        batch = _Batch(infos, self.clusters, time_left)
        results: list[MessageResult] = [MessageResult() for _ in parsed]
        if failed is not None:  # those messages fail alone; the rest of the batch goes on
            for index, item in enumerate(parsed):
                if any(n.instance_id not in infos for n in _notices_of(item) if n.instance_id):
                    parsed[index] = MessageResult(error=failed, deadline=_deadline_of(item))

        def run(lane: list[int]) -> None:
            for index in lane:
                again = receives is not None and receives[index] > 1
                results[index] = self._one(batch, parsed[index], later[index], again=again)
                results[index].reports[:0] = early[index]

        lanes = message_lanes(
            [[n.instance_id for n in _notices_of(item) if n.instance_id] for item in parsed]
        )
        if self.workers <= 1 or len(lanes) <= 1:
            for lane in lanes:
                run(lane)
        else:
            with ThreadPoolExecutor(max_workers=min(self.workers, len(lanes))) as pool:
                list(pool.map(run, lanes))
        return results

    def _describe(
        self, wanted: list[str], parsed: list[Parsed], time_left: Callable[[], float] | None
    ) -> tuple[dict[str, InstanceInfo], InstanceLookupFailed | None]:
        """The batch's one DescribeInstances, retried (``lifeboat.aws.retries``) for as long
        as the batch's nearest deadline and the invocation allow; if it still fails, the
        error each message naming an instance fails with. Raising here instead would fail
        the whole batch, back only after the queue's visibility timeout: past a Spot
        warning's two minutes. What was found before the failure (a NodeClaim's answer,
        lifeboat.flow.lookup) is kept: its messages go on."""
        if not wanted:
            return {}, None
        deadline = min(
            (d for d in (_deadline_of(item) for item in parsed) if d is not None), default=None
        )
        try:
            window = _window(deadline, self.clock(), time_left)
            with retrying_for(window, clock=self.monotonic):
                notices = [n for item in parsed for n in _notices_of(item)]
                return describe_batch(self.directory, wanted, notices), None
        except Exception as error:
            failed = InstanceLookupFailed(f"instance lookup failed: {error!r}"[:500])
            failed.__cause__ = error
            return found_before(error), failed

    # -- parse -----------------------------------------------------------------------------

    def _parse(self, body: Body, found: dict[str, InstanceInfo]) -> Parsed:
        """A message's notices or wake-up, or its result already: rejected with a reason,
        or (a bug, never bad input) failed alone, without failing its batch-mates. An
        ending Capacity Block's notice becomes one per instance of the block, whose facts
        go into ``found`` (lifeboat.aws.capacity_blocks)."""
        try:
            message = load_body(body)  # decoded once, for both kinds of message
            if is_wakeup(message):
                wakeup = decode(message)
                if wakeup.task is Task.SWEEP_PART:
                    return self._sweep_part(wakeup, found)
                if wakeup.task is not Task.REMAINDER:
                    return wakeup
                late = _remainder_too_late(wakeup, self.clock())
                if late is not None:
                    raise MalformedMessage(late, wakeup.notice.event_id, wakeup.notice.kind)
                return expand(wakeup)
            if is_rotation_event(message):  # an operator's command (lifeboat.rotation)
                from lifeboat.rotation.request import parse_command

                return parse_command(message)
            if is_sweep_request(message):
                return self._with_hand_overs(self._sweep(message, found))
            parsed = parse_message(message, received_at=self.clock())
            return self._block_instances(parsed, found)
        except MalformedMessage as error:
            return MessageResult([Report.rejected(error.reason, error.event_id, error.kind)])
        except Exception as error:  # the message goes back to the queue, then to the DLQ
            return MessageResult(error=error)

    def _sweep(
        self, message: dict[str, Any], found: dict[str, InstanceInfo]
    ) -> Sorted | MessageResult:
        """A sweep request (a trigger from the stack's own schedule): EC2 asked now, every
        page of each filter set, and the answer's notices sorted before any split."""
        problem = sweep_request_problem(message, self.sweep_schedule)
        if problem is not None:
            ident = message.get("id")
            raise MalformedMessage(problem, ident if isinstance(ident, str) else None)
        if self.statuses is None:
            reason = (
                "instance status sweep requested, but the sweep is off: this pipeline reads "
                "no EC2 status (InstanceStatusSweepMinutes=0)"
            )
            return MessageResult(
                [Report(None, str(Kind.INSTANCE_IMPAIRED), Outcome.IGNORED, reason)]
            )
        pages = self.statuses.pages()
        return self._swept(pages, found, whole=self.statuses.complete(pages), blocks=True)

    def _sweep_part(self, wakeup: Wakeup, found: dict[str, InstanceInfo]) -> Parsed:
        """A sweep's instances one message did not take on: EC2 asked about them again."""
        if self.statuses is None:
            reason = "sweep part, but this pipeline reads no EC2 status"
            return MessageResult([Report.for_notice(wakeup.notice, Outcome.IGNORED, reason)])
        part = self._swept(self.statuses.describe(list(wakeup.instances)), found, whole=False)
        return Swept(part.notices, reports=part.reports, infos=part.infos)

    def _swept(
        self,
        pages: list[dict[str, Any]],
        found: dict[str, InstanceInfo],
        *,
        whole: bool,
        blocks: bool = False,
    ) -> Sorted:
        """EC2's answer read: with a sweep request's (``blocks``), the Capacity Blocks ending
        (each block's notice one per instance: lifeboat.aws.capacity_blocks); with a whole
        answer, the holds of the marked nodes first (ends first, so a maintenance EC2 moved
        is undone before the new start is acted on); then every notice triaged with one
        directory lookup."""
        now = self.clock()
        notices = self._recheck_old(parse_statuses({"Pages": pages}, received_at=now), now)
        ends: list[Notice] = []
        reports: list[Report] = []
        if blocks:
            notices = notices + find_instances(self._ending_blocks(now), self.reservations, found)
        if whole:
            holds = self._sweep_holds(read_response({"Pages": pages}, received_at=now), now)
            ends = [n for found in holds for n in found.ends]
            reports = [r for found in holds for r in found.reports]
            by_instance = {i: h for found in holds for i, h in found.holds.items()}
            notices = relisted(notices, by_instance)
        notices = ends + notices
        wanted = sorted({n.instance_id for n in notices if n.instance_id} - found.keys())
        found.update(self.directory.describe(wanted) if wanted else {})
        return sort_out(notices, reports, dict(found), self.settings, now, self._managed)

    def _recheck_old(self, notices: list[Notice], now: datetime) -> list[Notice]:
        """An impairment EC2 reported longer ago than ``stale_notice_after`` (an answer
        that waited) is not acted on as it was read: EC2 is asked again about those
        instances, and what it says now replaces it (nothing, if they recovered)."""
        limit = self.settings.stale_notice_after
        old = {
            n.instance_id
            for n in notices
            if n.kind is Kind.INSTANCE_IMPAIRED
            and n.instance_id
            and n.deadline is not None
            and now - n.deadline > limit
        }
        if not old or self.statuses is None:
            return notices
        again = parse_statuses({"Pages": self.statuses.describe(sorted(old))}, received_at=now)
        kept = [
            n for n in notices if n.kind is not Kind.INSTANCE_IMPAIRED or n.instance_id not in old
        ]
        fresh = [n for n in again if n.kind is Kind.INSTANCE_IMPAIRED and n.instance_id in old]
        if len(fresh) < len(old):  # said, so the message still ends in a report
            recovered = ", ".join(sorted(old - {n.instance_id for n in fresh}))
            why = f"EC2, asked again, no longer reports impaired: {recovered}"
            kept.append(Notice(Kind.INSTANCE_IMPAIRED, "instance-status", now, ignore_reason=why))
        return kept + fresh

    def _sweep_holds(self, statuses: list[Any], now: datetime) -> list[ClusterHolds]:
        """Each served cluster's nodes labelled ``lifeboat.dev/ec2-maintenance`` against a
        complete sweep (lifeboat.flow.sweep_holds): one LIST per cluster, side by side; a
        cluster that cannot be looked at is reported as an error, with its name."""
        listed = listed_events(statuses)

        def one(cluster: str | None) -> ClusterHolds:
            try:
                kube = self.clusters.kube(cluster)
                return look_at(kube, cluster, listed, now, dry_run=self.settings.dry_run)
            except Exception as error:  # that cluster's ends wait for the next sweep
                return ClusterHolds(reports=[listing_failed(cluster, error, now)])

        try:
            clusters = self._served_clusters()
        except Exception as error:  # discovery failed: nothing ends this time, said so
            return [ClusterHolds(reports=[listing_failed(None, error, now)])]
        # The clusters are listed side by side: a sweep's time is not their sum.
        with ThreadPoolExecutor(max_workers=min(SWEEP_LISTS_AT_ONCE, len(clusters))) as pool:
            return list(pool.map(one, clusters))

    def _served_clusters(self) -> tuple[str | None, ...]:
        """The clusters a sweep looks at: those named, and those found by their tag
        (lifeboat.aws.discovery); neither: the one cluster of replay and tests."""
        named = tuple(self.settings.clusters)
        if self.scope is not None:
            named = tuple(dict.fromkeys(named + self.scope.serving()))
        return named or (None,)

    def _block_instances(
        self, notices: list[Notice], found: dict[str, InstanceInfo]
    ) -> list[Notice]:
        """Each ending block's notice as one per instance of it (lifeboat.aws.capacity_blocks).
        A block named by another account's or region's event is left for triage to reject
        before EC2 is asked: a forged warning costs no DescribeInstances."""
        return find_instances(
            notices,
            self.reservations,
            found,
            foreign=lambda notice: foreign_origin(notice, self.settings) is not None,
        )

    def _ending_blocks(self, now: datetime) -> list[Notice]:
        """The Capacity Blocks ending within 40 minutes (lifeboat.events.capacity_block)."""
        if self.capacity_reservations is None:
            return []
        try:
            pages = self.capacity_reservations.pages()
        except Exception as error:  # the instance statuses go on; the next sweep looks again
            return [unread_reservations(error, now)]
        return [n for page in pages for n in read_reservations(page, now=now)]

    def _with_hand_overs(self, found: Sorted | MessageResult) -> Parsed:
        """A sweep's notices, and the hand-overs whose own wake-ups no longer run, which
        each sweep takes over (lifeboat.flow.handover_sweep, issue 33.3)."""
        if not isinstance(found, Sorted):
            return found
        swept = Swept(found.notices, reports=found.reports, infos=found.infos)
        now = self.clock()
        try:
            clusters = self._served_clusters()
        except Exception as error:  # discovery failed: the hand-overs wait, said so
            swept.problems.append(f"could not find the clusters served: {error}")
            return swept
        for cluster in clusters:
            try:
                wakeups, problems = orphaned(self.clusters.kube(cluster), cluster, now)
            except Exception as error:  # that cluster's hand-overs wait for the next sweep
                where = f"cluster {cluster}" if cluster else "the cluster"
                problems, wakeups = [f"could not list the hand-overs of {where}: {error}"], []
            swept.hand_overs += wakeups
            swept.problems += problems
        return swept

    def _one(
        self, batch: _Batch, item: Parsed, later: Sequence[Wakeup] = (), *, again: bool = False
    ) -> MessageResult:
        """One message's reports; when it fails, its error and the reports of what it did
        before (issue 33.4): the notices it finished, and the actions of the one a failure
        interrupted (``_carry_out``), reported like any others, so a retry that finds them
        done says it continues instead of leaving them unreported."""
        if isinstance(item, MessageResult):
            return item
        deadline = _deadline_of(item)
        done: list[Report] = []
        token = _DONE.set(done)
        try:
            window = _window(deadline, self.clock(), batch.time_left)
            with retrying_for(window, clock=self.monotonic):
                if isinstance(item, list):
                    self._hand_on(later)  # before acting: the message holds them until then
                    return MessageResult(self._notices(batch, item, done, again), deadline=deadline)
                if isinstance(item, Swept):
                    self._hand_on(later)
                    self._notices(batch, item.notices, done, again)
                    return MessageResult(self._take_over(batch, item, done), deadline=deadline)
                if isinstance(item, Wakeup) and not rotation_concerns(item):
                    report = replace(self._wake(batch, item), wakeup=str(item.task))
                    return MessageResult([report], deadline=deadline)
                # A rotation's command, or a wake-up of one of its looks or nodes.
                return MessageResult(self._rotations(batch).handle(item))
        except Exception as error:  # the caller returns the message to the queue
            if isinstance(item, Wakeup) and not rotation_concerns(item):
                done[:] = [replace(r, wakeup=str(item.task)) for r in done]
            return MessageResult(list(done), error=error, deadline=deadline)
        finally:
            _DONE.reset(token)

    # -- notices ---------------------------------------------------------------------------

    def _notices(
        self,
        batch: _Batch,
        notices: list[Notice],
        reports: list[Report] | None = None,
        again: bool = False,
    ) -> list[Report]:
        """Each notice handled once (the ledger); ``reports`` gathers them as they are done,
        so they outlast a failure of a later one. ``again``: the message was received before
        (and failed): what the ledger finds done was done by that receipt."""
        reports = [] if reports is None else reports
        for index, notice in enumerate(notices):
            if index and self._out_of_time(batch):
                self._hand_on(remainders(notices[index:], len(notices)))
                break
            early = too_recently_impaired(notice, self.settings)
            if early is not None:  # not remembered: the next sweep sees it again
                reports.append(Report.for_notice(notice, Outcome.IGNORED, early))
                continue
            # The end of a maintenance is looked at each time it is reported (undoing is
            # idempotent, and the node may become Ready only at a later sweep).
            if self.ledger is None or notice.ends_maintenance:
                reports.append(self._handle(batch, notice))
                continue
            self._taint_before_ledger(batch, notice)
            report = self.ledger.once(notice.ledger_key, partial(self._handle, batch, notice))
            if report is None and notice.ec2_event and notice.deadline is not None:
                # Told by Health first: the sweep has now seen EC2's event (once per
                # maintenance), so the node is labelled and the event's vanishing ends it.
                seen = partial(self._mark_ec2_maintenance, batch, notice)
                self.ledger.once(f"ec2-seen#{notice.ledger_key}", seen)
            if report is None:
                report = Report.for_notice(notice, Outcome.IGNORED, _handled_before(again))
            reports.append(report)
        return reports

    def _taint_before_ledger(self, batch: _Batch, notice: Notice) -> None:
        """An involuntary notice's taint and cordon, before the ledger records the notice as
        being handled: that record is a DynamoDB write (retried, and slow, when DynamoDB is
        throttled during a storm), and the node must stop taking pods first. Safe to
        repeat: a duplicate delivery's guarded patch is refused by the API server because
        the taint is there (``Actor.taint_unread``) and changes nothing; what must happen
        once (the replacement, the deletion) stays behind the ledger. The same triage and
        staleness checks as ``_handle``."""
        info = batch.infos.get(notice.instance_id or "")
        if info is None or not notice.involuntary:
            return
        now = self.clock()
        checked = triage(notice, info, self.settings, now, self._managed(info.cluster))
        if checked.outcome is not None or staleness(notice, info, self.settings, now):
            return
        resolver = batch.resolver(checked.cluster)
        batch.tainted[notice.ledger_key] = self._taint_at_once(resolver, notice, info)

    def _take_over(self, batch: _Batch, swept: Swept, reports: list[Report]) -> list[Report]:
        """Do the work of each hand-over whose wake-ups no longer run, as its wake-up would
        (lifeboat.flow.handover_sweep); one that fails is reported, and the next sweep finds
        it again (its marks stay until the work is done)."""
        for problem in swept.problems:
            reports.append(Report(None, str(Kind.UNSUPPORTED), Outcome.IGNORED, problem))
        for wakeup in swept.hand_overs:
            try:
                report = self._wake(batch, wakeup)
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

    def _mark_ec2_maintenance(self, batch: _Batch, notice: Notice) -> Report:
        info = batch.infos.get(notice.instance_id or "")
        checked = triage(notice, info, self.settings, self.clock())
        if checked.outcome is not None or info is None or notice.instance_id is None:
            return Report.for_notice(notice, Outcome.IGNORED, checked.reason)
        resolver = batch.resolver(checked.cluster)
        target = resolver.resolve(notice.instance_id, info)
        marked = self._actor(resolver.kube).mark_ec2_maintenance(notice, target)
        why = "labelled with the EC2 event's start" if marked else "nothing to label"
        return Report.for_notice(notice, Outcome.IGNORED, why)

    def _out_of_time(self, batch: _Batch) -> bool:
        """Whether a message should hand on what it has not started (lifeboat.flow.split)."""
        if batch.time_left is None or self.wakeups is None:
            return False
        return batch.time_left() < INVOCATION_RESERVE.total_seconds()

    def _hand_on(self, later: Sequence[Wakeup]) -> None:
        for wakeup in later:
            if self.wakeups is None:
                raise BrokenInvariant(
                    "pipeline._hand_on: self.wakeups is None (only split when there is a sink)"
                )
            self.wakeups.schedule(wakeup)

    def _handle(self, batch: _Batch, notice: Notice, wakeup: Wakeup | None = None) -> Report:
        """Triage, decide and act on one notice; ``wakeup``: the DECIDE wake-up it came back
        in, whose due time (not the clock) times what follows, so a wake-up delivered twice
        schedules the same next one instead of forking its chain."""
        info = batch.infos.get(notice.instance_id or "")
        managed = self._managed(info.cluster if info is not None else None)
        checked = triage(notice, info, self.settings, self.clock(), managed)
        if checked.outcome is not None or info is None or notice.instance_id is None:
            return _not_let_through(notice, checked)
        resolver = batch.resolver(checked.cluster)
        # A notice past its age limit is judged from the present state, as a voluntary one
        # (lifeboat.decide.staleness): never tainted at once, never forced.
        stale = staleness(notice, info, self.settings, self.clock())
        if notice.involuntary and stale is None:
            if notice.ledger_key in batch.tainted:  # tainted before the ledger's record
                node = batch.tainted.pop(notice.ledger_key)
            else:
                node = self._taint_at_once(resolver, notice, info)
            target = resolver.resolve(notice.instance_id, info, node=node)
            return self._decide_and_act(resolver, notice, target, wakeup=wakeup)
        target = resolver.resolve(notice.instance_id, info)
        if (
            target.node is None
            or notice.kind is Kind.ASG_LAUNCH
            or (stale is not None and stale.nothing_going)
        ):
            # Nothing to weigh against a budget: no node, a launch (nothing is done to it), or
            # a stale notice about an instance that is not going after all.
            return self._decide_and_act(resolver, notice, target, stale, wakeup=wakeup)
        # Voluntary: weigh the budget and take the slot under the pool's lease. Only the
        # first step (the taint that makes the node count as disrupting, or the pending
        # mark) needs the lease; the replacement and the rest follow once it is released.
        with self._pool_lease(resolver.kube, target):
            target = resolver.with_budget_state(target)
            decision = self._decide(notice, target, stale)
            first = replace(decision, steps=decision.steps[:1])
            held = self._actor(resolver.kube).carry_out(notice, target, first)
        return self._carry_out(resolver.kube, notice, target, decision, done=held, wakeup=wakeup)

    def _managed(self, cluster: str | None) -> frozenset[str] | None:
        """The served clusters triage needs to know of (None: the named ones decide). Asked
        here, before the pure triage: it may describe the cluster (lifeboat.aws.discovery)."""
        if self.scope is None:
            return None
        return (
            frozenset([cluster])
            if cluster is not None and self.scope.serves(cluster)
            else frozenset()
        )

    def _taint_at_once(
        self, resolver: Resolver, notice: Notice, info: InstanceInfo
    ) -> Mapping[str, Any] | None:
        """An involuntary notice is never held back, and its first step is always to taint
        and cordon the node: done before reading the node, with a patch guarded by the
        instance's providerID (saving a request when two minutes is all there is). Not when
        nothing may change (dry run), when EC2 did not say where the node is, or when the
        node's NodePool opted out of Lifeboat. The node as patched, or None."""
        if self.settings.dry_run or not info.node_name or not info.zone:
            return None
        if info.nodepool:
            nodepool = resolver.nodepool(info.nodepool)
            if nodepool is not None and node_marks.opted_out(nodepool):
                return None
        provider_id = f"aws:///{info.zone}/{info.instance_id}"
        return self._actor(resolver.kube).taint_unread(info.node_name, provider_id, notice)

    @contextmanager
    def _pool_lease(self, kube: KubeApi, target: Target) -> Iterator[None]:
        if target.nodepool is None or self.settings.dry_run:
            yield
            return
        lock = PoolLock(kube, self.settings.lease_namespace, self.holder, clock=self.clock)
        with lock.hold(nodes.name_of(target.nodepool)):
            yield

    def _decide_and_act(
        self,
        resolver: Resolver,
        notice: Notice,
        target: Target,
        stale: Stale | None = None,
        *,
        wakeup: Wakeup | None = None,
    ) -> Report:
        decision = self._decide(notice, target, stale)
        return self._carry_out(resolver.kube, notice, target, decision, wakeup=wakeup)

    def _decide(self, notice: Notice, target: Target, stale: Stale | None = None) -> Decision:
        decision = decide(notice, target, self.settings, self.clock(), stale=stale)
        if self.on_decision is not None:
            self.on_decision(notice, target, decision)
        return decision

    def _carry_out(
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
        now = self.clock()
        rest = replace(decision, steps=decision.steps[1:]) if done is not None else decision
        if wakeup is None and target.node is not None and not self.settings.dry_run:
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
            self._actor(kube).carry_out(
                notice,
                target,
                rest,
                replacement=wakeup.replacement if wakeup else None,
                into=result,
            )
            decision = _as_carried_out(notice, target, decision, result, now)
            if not first:
                self._follow_up(notice, target, decision, result, now, wakeup)
        except Exception as error:  # what was done is reported all the same (issue 33.4)
            self._interrupted(kube, notice, target, decision, result, error, cluster)
            raise
        if not self.settings.dry_run and target.node is not None:
            record(kube, target.node, notice, decision, now)
        return decision_report(
            notice,
            target,
            decision,
            result.actions,
            pods_remaining=result.pods_remaining,
            dry_run=self.settings.dry_run,
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
        if self.settings.dry_run or self.wakeups is None:
            return
        for later in follow_ups(
            notice,
            target,
            decision,
            pods_remaining=result.pods_remaining + result.pods_terminating,
            now=now,
            wakeup=wakeup,
            release_cordon_after=self.settings.rebalance_cordon_release,
            awaiting=result.awaiting,
            maintenance_lead=self.settings.scheduled_change_lead,
        ):
            self.wakeups.schedule(later)

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
        why = f"{type(error).__name__}: {error}"[:300]
        reason = (
            f"{decision.reason}; interrupted ({why}) after {len(result.actions)} action(s): "
            "the message is retried and continues from there"
        )
        partial = replace(decision, reason=reason)
        if target.node is not None and not self.settings.dry_run:
            with suppress(Exception):  # the audit trail must not hide the failure itself
                record(kube, target.node, notice, partial, self.clock(), part="interrupted")
        report = decision_report(
            notice, target, partial, result.actions, dry_run=self.settings.dry_run, cluster=cluster
        )
        gathered = _DONE.get()
        if gathered is not None:  # None: handled outside a message (a test's direct call)
            gathered.append(report)

    def _actor(self, kube: KubeApi) -> Actor:
        return Actor(
            kube,
            self.settings,
            self.lifecycle,
            clock=self.clock,
            sleep=self.sleep,
            drain_patience=self.drain_patience,
        )

    # -- wake-ups --------------------------------------------------------------------------

    def _wake(self, batch: _Batch, wakeup: Wakeup) -> Report:
        if wakeup.task is Task.DECIDE:
            return self._handle(batch, wakeup.notice, wakeup)  # decided again like an AWS notice
        notice = wakeup.notice
        info = batch.infos.get(notice.instance_id or "")
        managed = self._managed(info.cluster if info is not None else wakeup.cluster)
        checked = triage_follow_up(wakeup, info, self.settings, self.clock(), managed)
        if checked.outcome is not None or notice.instance_id is None:
            return _not_let_through(notice, checked)
        resolver = batch.resolver(checked.cluster)
        if wakeup.task is Task.CONTINUE_DRAIN:
            if info is None:  # triage_follow_up lets only hand-overs go on without
                raise BrokenInvariant("pipeline._wake: a drain to continue without its instance")
            target = resolver.resolve(notice.instance_id, info)
            decision = continue_drain(target)
        elif wakeup.task is Task.RELEASE_CORDON:
            if info is None:  # as for a continued drain
                raise BrokenInvariant("pipeline._wake: a cordon to release without its instance")
            target = resolver.resolve(notice.instance_id, info)
            decision = release_cordon(target)
        elif wakeup.task is Task.HAND_OVER:
            # The old node is read too: a hand-over given up on puts it back in service.
            target = Target(notice.instance_id, info, claim=wakeup.old_claim)
            if info is not None:
                target = replace(resolver.resolve(notice.instance_id, info), claim=wakeup.old_claim)
            old = resolver.kube.get_nodeclaim(wakeup.old_nodeclaim or "")
            if old is not None and wakeup.old_claim is not None and nodes.is_deleting(old):
                # A redelivered look, or the old claim deleted meanwhile: no second delete.
                target = replace(target, claim=replace(wakeup.old_claim, deleting=True))
            name = wakeup.replacement
            stale = check_old_claim(wakeup, old)
            if stale is not None:  # nothing to hand over: the replacement is freed all the same
                decision = replace(stale, steps=(Step.RELEASE_REPLACEMENT,))
            else:
                decision = hand_over_when_ready(
                    wakeup, resolver.kube.get_nodeclaim(name) if name else None, self.clock()
                )
        else:
            target = Target(notice.instance_id, info, claim=wakeup.old_claim)
            old = resolver.kube.get_nodeclaim(wakeup.old_nodeclaim or "")
            name = wakeup.replacement
            decision = check_old_claim(wakeup, old) or finish_replacement(
                wakeup, resolver.kube.get_nodeclaim(name) if name else None
            )
        return self._carry_out(
            resolver.kube, notice, target, decision, wakeup=wakeup, cluster=checked.cluster
        )

    # -- rotations -------------------------------------------------------------------------

    def _rotations(self, batch: _Batch) -> RotationRunner:
        """Rotations (lifeboat.rotation) hand their nodes to this pipeline as notices."""
        from lifeboat.rotation.runner import RotationRunner

        return RotationRunner(
            kube_for=self.clusters.kube,
            settings=self.settings,
            clock=self.clock,
            nodes=_RotationNodes(
                batch,
                self.directory,
                handle=partial(self._handle, batch),
                wake=partial(self._wake, batch),
            ),
            describe=self.directory.describe,
            wakeups=self.wakeups,
            ledger=self.ledger,
            serves=self.scope.serves if self.scope is not None else None,
        )


@dataclass(frozen=True)
class _RotationNodes:
    """The pipeline's triage, resolve, decide and act, lent to a rotation for its nodes: the
    pipeline hands over its own handling of a notice and of a wake-up, bound to the batch."""

    batch: _Batch
    directory: InstanceDirectory
    handle: Callable[[Notice], Report]
    wake: Callable[[Wakeup], Report]

    def decide(self, notices: list[Notice]) -> list[Report]:
        infos = self.batch.infos
        wanted = sorted({n.instance_id for n in notices if n.instance_id} - infos.keys())
        if wanted:  # one DescribeInstances for the nodes a look starts
            infos.update(self.directory.describe(wanted))
        return [self.handle(notice) for notice in notices]


# The reports of the message being handled, gathered as its work is done (``Pipeline._one``):
# one list per message, in the thread that handles it.
_DONE: ContextVar[list[Report] | None] = ContextVar("lifeboat_message_reports", default=None)


def _handled_before(again: bool) -> str:
    """What a notice the ledger finds handled is: the work of this message's earlier
    receipt, which failed after it (``again``), or of another delivery of the event."""
    if again:
        return (
            "continuing: already handled by an earlier receipt of this message (reported "
            "then); the rest of the message goes on"
        )
    return "duplicate delivery: already handled"


def _notices_of(item: Parsed) -> list[Notice]:
    if isinstance(item, list):
        return item
    if isinstance(item, Swept):
        return item.notices + [w.notice for w in item.hand_overs]
    if isinstance(item, Wakeup):
        return [item.notice]
    return []


def _window(
    deadline: datetime | None, now: datetime, time_left: Callable[[], float] | None
) -> timedelta | None:
    """The retry window of a deadline (lifeboat.model.deadline.retry_window), bounded by
    what is left of the invocation; the invocation is asked only for a near deadline."""
    if not is_near(deadline, now):
        return None
    return retry_window(deadline, now, time_left() if time_left is not None else None)


def _deadline_of(item: Parsed) -> datetime | None:
    """The earliest deadline of a message's notices: how soon a failed message must return."""
    return min((n.deadline for n in _notices_of(item) if n.deadline), default=None)


class InstanceLookupFailed(RetryLater):
    """The batch's DescribeInstances failed (throttled past its retries, EC2 unreachable):
    each message naming an instance goes back to the queue, early when its deadline is near."""


def _remainder_too_late(wakeup: Wakeup, now: datetime) -> str | None:
    """A remainder is handed on minutes after its event, long before the maintenance
    starts: one arriving after the start is no work Lifeboat scheduled (or is too late to
    prepare for it), and its instances are not taken out on its word."""
    deadline = wakeup.notice.deadline
    if deadline is not None and now >= deadline:
        start = deadline.isoformat()
        return f"lifeboat-wakeup.notice.deadline: a remainder past its start ({start})"
    return None


def _as_carried_out(
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

"""parse -> resolve -> decide -> act, for a batch of messages. The fate of every message is
decided here, in one visible place; the Lambda handler and ``lifeboat replay`` both call it.

A message ends as one or more reports (acted, deferred, ignored, rejected), or as an
exception that the caller turns into a batch item failure: the message goes back to the
queue, and after ``maxReceiveCount`` tries into the dead-letter queue. Nothing is dropped
on an error.

:class:`Pipeline` reads the batch (``read``: each message told apart by ``classify`` and
parsed; a sweep request by ``sweep_request``), describes its instances at once (``batch``),
taints the node of every involuntary notice of the batch (its taint phase), and hands each
message to the step for it: its notices to ``notices``, a wake-up to ``wake``, the
rotation's work to ``lifeboat.rotation``; ``carry`` carries out every decision.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import TYPE_CHECKING

from lifeboat.flow.batch import (
    DONE,
    Batch,
    InstanceLookupFailed,
    MessageResult,
    Parsed,
    Swept,
    deadline_of,
    describe,
    notices_of,
    wanted,
    window,
)
from lifeboat.flow.classify import Body
from lifeboat.flow.config import ClusterClients, ClusterScope, FlowConfig, OneCluster
from lifeboat.flow.lanes import lanes as message_lanes
from lifeboat.flow.notices import NoticeHandler
from lifeboat.flow.read import MessageReader
from lifeboat.flow.resolve import OptOutVerdicts
from lifeboat.flow.split import split
from lifeboat.kube.client import UNAVAILABLE_STATUSES, KubeError, retrying_for
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.report import Report
from lifeboat.wakeup.codec import Wakeup

if TYPE_CHECKING:  # the rotation loads with its first message (lifeboat.flow.classify)
    from lifeboat.flow.wake import Waker
    from lifeboat.rotation.runner import RotationRunner

_log = logging.getLogger(__name__)

# How long the lanes of a batch wait for the others' taints before handling their own
# messages: above what a batch's taints take on a loaded machine (the bench's storms: 2 s at
# most), far below a retry window (lifeboat.model.deadline.RETRY_PATIENCE), which one node's
# failing taint may use up: the other messages' replacements are not held back that long.
TAINT_PHASE_WAIT = 5.0

__all__ = [
    "Body",
    "ClusterClients",
    "ClusterScope",
    "InstanceLookupFailed",
    "MessageResult",
    "OneCluster",
    "Pipeline",
]


@dataclass
class Pipeline(FlowConfig):
    """A batch's messages, each to the step for it (its fields: :class:`FlowConfig`)."""

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
        reader = MessageReader(self)
        parsed = [reader.read(body, found) for body in bodies]
        later, early = self._split(parsed, found)
        described, failed = describe(self, wanted(parsed, found), parsed, time_left)
        infos = found | described
        batch = Batch(infos, self.clusters, time_left, self.opt_outs)
        results: list[MessageResult] = [MessageResult() for _ in parsed]
        if failed is not None:  # those messages fail alone; the rest of the batch goes on
            for index, item in enumerate(parsed):
                if any(n.instance_id not in infos for n in notices_of(item) if n.instance_id):
                    parsed[index] = MessageResult(error=failed, deadline=deadline_of(item))
        steps = _Steps(self)
        named = [[n.instance_id for n in notices_of(item) if n.instance_id] for item in parsed]
        shared = _named_twice(named)

        def taint(lane: list[int]) -> None:
            self._taint_first(steps, batch, [parsed[index] for index in lane], shared)

        def run(lane: list[int]) -> None:
            for index in lane:
                again = receives is not None and receives[index] > 1
                results[index] = self._one(steps, batch, parsed[index], later[index], again)
                results[index].reports[:0] = early[index]

        self._in_lanes(message_lanes(named), taint, run)
        return results

    @cached_property
    def opt_outs(self) -> OptOutVerdicts:
        """The NodePools' opt-out verdicts, kept across this pipeline's batches for the taint
        at once (lifeboat.flow.resolve.OptOutVerdicts), on the pipeline's monotonic clock
        (read when asked: a test that replaces ``monotonic`` moves it)."""
        return OptOutVerdicts(lambda: self.monotonic())

    def _in_lanes(
        self,
        lanes: list[list[int]],
        taint: Callable[[list[int]], None],
        run: Callable[[list[int]], None],
    ) -> None:
        """The taint phase over every lane, then the handling (side by side when there are
        workers): the batch's taints are done before any message is handled, and a lane
        whose taint is still retrying after :data:`TAINT_PHASE_WAIT` holds back only its
        own messages, not the replacements of the others."""
        if self.workers <= 1 or len(lanes) <= 1:
            for lane in lanes:
                taint(lane)
            for lane in lanes:
                run(lane)
            return
        with ThreadPoolExecutor(max_workers=min(self.workers, len(lanes))) as pool:
            tainting = [pool.submit(taint, lane) for lane in lanes]
            wait(tainting, timeout=TAINT_PHASE_WAIT)
            # Each lane's handling is queued once its own taints are done, in the order they
            # finish (those done by now in batch order): with fewer workers than lanes, a
            # lane waiting for its retrying taint would otherwise hold a worker ahead of
            # lanes whose taints finish later (a single look at which were done after the
            # wait put them behind it when the machine was slow).
            lane_of = {future: index for index, future in enumerate(tainting)}

            def handle(tainted: Future[None]) -> None:
                tainted.result()  # its taint phase's own error, if it raised one
                run(lanes[lane_of[tainted]])

            done: list[Future[None]] = []
            pending: list[Future[None]] = []
            for future in tainting:  # one look each: a taint ending between two looks
                (done if future.done() else pending).append(future)  # would be in neither
            handling = [pool.submit(handle, future) for future in done]
            handling += [pool.submit(handle, future) for future in as_completed(pending)]
            for future in handling:
                future.result()  # a lane's error is raised here, as before

    def _taint_first(
        self, steps: _Steps, batch: Batch, items: list[Parsed], shared: set[str]
    ) -> None:
        """The taint phase (issue 36): the node of every involuntary notice of the lane's
        messages (AWS's and a sweep's) tainted and cordoned before any message of the batch
        is handled, so the last of a batch's nodes stops taking pods without waiting for
        the ledger's writes and the replacements of those before it. Each message under
        its own retry window, as its handling; a failure is logged and leaves the message
        to its handling, which tries the taint again and fails or reports as it would have;
        after an outage the phase waited out (``Batch.outage``), it fails at that notice
        without waiting a second window.
        The node as patched is kept for ``handle`` only when no other notice of the batch
        names its instance (``shared``): that one's handling could change it in between.
        Nearly out of time, a message's further notices are left to the wake-ups its
        handling hands them on as (``NoticeHandler.out_of_time``), not tainted here."""
        for item in items:
            notices = item.notices if isinstance(item, Swept) else item
            if not isinstance(notices, list):
                continue
            limit = window(deadline_of(item), self.clock(), batch.time_left)
            try:
                with retrying_for(limit, clock=self.monotonic):
                    for index, notice in enumerate(notices):
                        if index and notice.involuntary and steps.notices.out_of_time(batch):
                            break  # as handle_all: the rest is handed on, tainted then
                        keep = notice.instance_id not in shared
                        steps.notices.taint_first(batch, notice, keep=keep)
            except KubeError as error:  # an outage waited out once: the handling fails at once
                if error.status in UNAVAILABLE_STATUSES:
                    batch.outage[notice.ledger_key] = error
                _gave_up(error)
            except Exception as error:  # the message's handling tries (and reports) again
                _gave_up(error)

    def _split(
        self, parsed: list[Parsed], found: dict[str, InstanceInfo]
    ) -> tuple[list[list[Wakeup]], list[list[Report]]]:
        """Each message's instances past what one message acts on, handed on as wake-ups
        (lifeboat.flow.split); and what a sweep's triage decided before the split."""
        later: list[list[Wakeup]] = [[] for _ in parsed]
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
        return later, early

    def _one(
        self, steps: _Steps, batch: Batch, item: Parsed, later: Sequence[Wakeup], again: bool
    ) -> MessageResult:
        """One message's reports; when it fails, its error and the reports of what it did
        before (issue 33.4): the notices it finished, and the actions of the one a failure
        interrupted (``Carrier.carry_out``), reported like any others, so a retry that finds
        them done says it continues instead of leaving them unreported."""
        if isinstance(item, MessageResult):
            return item
        deadline = deadline_of(item)
        done: list[Report] = []
        token = DONE.set(done)
        try:
            with retrying_for(
                window(deadline, self.clock(), batch.time_left), clock=self.monotonic
            ):
                if isinstance(item, list):
                    self.hand_on(later)  # before acting: the message holds them until then
                    reports = steps.notices.handle_all(batch, item, done, again)
                    return MessageResult(reports, deadline=deadline)
                if isinstance(item, Swept):
                    self.hand_on(later)
                    steps.notices.handle_all(batch, item.notices, done, again)
                    return MessageResult(
                        steps.waker.take_over(batch, item, done), deadline=deadline
                    )
                if isinstance(item, Wakeup):
                    report = replace(steps.waker.wake(batch, item), wakeup=str(item.task))
                    return MessageResult([report], deadline=deadline)
                # A rotation's command, or a wake-up of one of its looks or nodes.
                return MessageResult(self._rotations(steps, batch).handle(item.item))
        except Exception as error:  # the caller returns the message to the queue
            if isinstance(item, Wakeup):
                done[:] = [replace(r, wakeup=str(item.task)) for r in done]
            return MessageResult(list(done), error=error, deadline=deadline)
        finally:
            DONE.reset(token)

    def _rotations(self, steps: _Steps, batch: Batch) -> RotationRunner:
        """Rotations (lifeboat.rotation) hand their nodes to this pipeline as notices."""
        from lifeboat.flow.rotation_nodes import RotationNodes
        from lifeboat.rotation.runner import RotationRunner

        return RotationRunner(
            kube_for=self.clusters.kube,
            settings=self.settings,
            clock=self.clock,
            nodes=RotationNodes(
                batch,
                self.directory,
                self.settings,
                handle=partial(steps.notices.handle, batch),
                wake=partial(steps.waker.wake, batch),
            ),
            describe=self.directory.describe,
            wakeups=self.wakeups,
            ledger=self.ledger,
            serves=self.scope.serves if self.scope is not None else None,
        )


def _gave_up(error: Exception) -> None:
    _log.warning(
        "taint before handling failed; the message's handling tries again (or, after an "
        "outage waited out, fails with it)",
        extra={"error": repr(error)[:300]},
    )


def _named_twice(named: list[list[str]]) -> set[str]:
    """The instances named by more than one notice of the batch (any message's)."""
    counts = Counter(instance for instances in named for instance in instances)
    return {instance for instance, count in counts.items() if count > 1}


class _Steps:
    """The steps a batch's messages go through, each reading the pipeline's fields; built
    when a message first needs them (a Spot warning never builds the waker)."""

    def __init__(self, config: FlowConfig) -> None:
        self.notices = NoticeHandler(config)
        self._config = config

    @cached_property
    def waker(self) -> Waker:
        # Imported with the first wake-up or sweep: wake-ups' decisions, hand-overs' take-over.
        from lifeboat.flow.wake import Waker

        return Waker(self._config, self.notices)

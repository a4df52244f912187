"""parse -> resolve -> decide -> act, for a batch of messages. The fate of every message is
decided here, in one visible place; the Lambda handler and ``lifeboat replay`` both call it.

A message ends as one or more reports (acted, deferred, ignored, rejected), or as an
exception that the caller turns into a batch item failure: the message goes back to the
queue, and after ``maxReceiveCount`` tries into the dead-letter queue. Nothing is dropped
on an error.

:class:`Pipeline` reads the batch (``read``: each message told apart by ``classify`` and
parsed; a sweep request by ``sweep_request``), describes its instances at once (``batch``),
and hands each message to the step for it: its notices to ``notices``, a wake-up to
``wake``, the rotation's work to ``lifeboat.rotation``; ``carry`` carries out every decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from lifeboat.flow.split import split
from lifeboat.kube.client import retrying_for
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.report import Report
from lifeboat.wakeup.codec import Wakeup

if TYPE_CHECKING:  # the rotation loads with its first message (lifeboat.flow.classify)
    from lifeboat.flow.wake import Waker
    from lifeboat.rotation.runner import RotationRunner

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
        batch = Batch(infos, self.clusters, time_left)
        results: list[MessageResult] = [MessageResult() for _ in parsed]
        if failed is not None:  # those messages fail alone; the rest of the batch goes on
            for index, item in enumerate(parsed):
                if any(n.instance_id not in infos for n in notices_of(item) if n.instance_id):
                    parsed[index] = MessageResult(error=failed, deadline=deadline_of(item))
        steps = _Steps(self)

        def run(lane: list[int]) -> None:
            for index in lane:
                again = receives is not None and receives[index] > 1
                results[index] = self._one(steps, batch, parsed[index], later[index], again)
                results[index].reports[:0] = early[index]

        lanes = message_lanes(
            [[n.instance_id for n in notices_of(item) if n.instance_id] for item in parsed]
        )
        if self.workers <= 1 or len(lanes) <= 1:
            for lane in lanes:
                run(lane)
        else:
            with ThreadPoolExecutor(max_workers=min(self.workers, len(lanes))) as pool:
                list(pool.map(run, lanes))
        return results

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

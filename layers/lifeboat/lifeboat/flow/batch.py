"""What the messages of one batch share, and what each one is once read.

A message read (``lifeboat.flow.read``) is one of :data:`Parsed`: its result already (a
rejection), its notices, a sweep's triaged notices (``Swept``), a wake-up, or work for the
rotation (:class:`ForRotation`). The batch then describes every instance they name at once
(:func:`describe`) and hands each message its share of :class:`Batch`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from lifeboat.errors import RetryLater
from lifeboat.flow.config import ClusterClients, FlowConfig
from lifeboat.flow.lookup import describe_batch, found_before
from lifeboat.flow.resolve import OptOutVerdicts, Resolver
from lifeboat.kube.client import retrying_for
from lifeboat.model.deadline import is_near, retry_window
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import Notice
from lifeboat.model.report import Report
from lifeboat.wakeup.codec import Wakeup

if TYPE_CHECKING:  # the rotation loads with its first message (lifeboat.flow.classify)
    from lifeboat.rotation.request import RotationCommand


@dataclass
class MessageResult:
    """The fate of one message: its reports, or the error that sends it back to the queue."""

    reports: list[Report] = field(default_factory=list)
    error: BaseException | None = None
    # The earliest deadline of the message's notices: how soon a failed message must return.
    deadline: datetime | None = None


@dataclass(frozen=True)
class ForRotation:
    """A rotation's command, or a wake-up of one of its looks or nodes: the rotation's to
    handle (``lifeboat.flow.classify.for_rotation``)."""

    item: RotationCommand | Wakeup


@dataclass
class Swept:
    """A sweep's work: EC2's notices, the hand-overs it takes over, and what it could not
    read (each reported, none stopping the rest)."""

    notices: list[Notice]
    hand_overs: list[Wakeup] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # What the sweep's triage decided before the split, and the instance facts it looked up
    # (the batch reuses them): lifeboat.flow.sweep_triage.
    reports: list[Report] = field(default_factory=list)
    infos: dict[str, InstanceInfo] = field(default_factory=dict)


Parsed: TypeAlias = "MessageResult | Wakeup | list[Notice] | Swept | ForRotation"


class Batch:
    """What the messages of one batch share: instance facts and per-cluster resolvers."""

    def __init__(
        self,
        infos: dict[str, InstanceInfo],
        clients: ClusterClients,
        time_left: Callable[[], float] | None = None,
        verdicts: OptOutVerdicts | None = None,
    ) -> None:
        self.infos = infos
        self.time_left = time_left
        # The node each involuntary notice's early taint left, by ledger key (None: the
        # patch did not fit), taken by NoticeHandler.handle instead of tainting again.
        self.tainted: dict[str, Mapping[str, Any] | None] = {}
        # An outage the early taint already waited out, by ledger key: the notice's handling
        # fails with it instead of waiting out a second window (NoticeHandler.taint_first).
        self.outage: dict[str, Exception] = {}
        self._clients = clients
        self._verdicts = verdicts  # the pipeline's, outliving the batch
        self._resolvers: dict[str | None, Resolver] = {}
        self._lock = threading.Lock()

    def resolver(self, cluster: str | None) -> Resolver:
        with self._lock:
            if cluster not in self._resolvers:
                kube = self._clients.kube(cluster)
                self._resolvers[cluster] = Resolver(kube, self._verdicts, cluster)
            return self._resolvers[cluster]


class InstanceLookupFailed(RetryLater):
    """The batch's DescribeInstances failed (throttled past its retries, EC2 unreachable):
    each message naming an instance goes back to the queue, early when its deadline is near."""


def describe(
    config: FlowConfig,
    wanted: list[str],
    parsed: list[Parsed],
    time_left: Callable[[], float] | None,
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
        (d for d in (deadline_of(item) for item in parsed) if d is not None), default=None
    )
    try:
        limit = window(deadline, config.clock(), time_left)
        with retrying_for(limit, clock=config.monotonic):
            notices = [n for item in parsed for n in notices_of(item)]
            return describe_batch(config.directory, wanted, notices), None
    except Exception as error:
        failed = InstanceLookupFailed(f"instance lookup failed: {error!r}"[:500])
        failed.__cause__ = error
        return found_before(error), failed


def wanted(parsed: list[Parsed], found: Mapping[str, InstanceInfo]) -> list[str]:
    """The instances of a batch still to be described (not ``found`` while parsing)."""
    return sorted(
        {
            notice.instance_id
            for item in parsed
            for notice in notices_of(item)
            if notice.instance_id and notice.instance_id not in found
        }
    )


def notices_of(item: Parsed) -> list[Notice]:
    if isinstance(item, list):
        return item
    if isinstance(item, Swept):
        return item.notices + [w.notice for w in item.hand_overs]
    if isinstance(item, ForRotation):
        return [item.item.notice] if isinstance(item.item, Wakeup) else []
    if isinstance(item, Wakeup):
        return [item.notice]
    return []


def window(
    deadline: datetime | None, now: datetime, time_left: Callable[[], float] | None
) -> timedelta | None:
    """The retry window of a deadline (lifeboat.model.deadline.retry_window), bounded by
    what is left of the invocation; the invocation is asked only for a near deadline."""
    if not is_near(deadline, now):
        return None
    return retry_window(deadline, now, time_left() if time_left is not None else None)


def deadline_of(item: Parsed) -> datetime | None:
    """The earliest deadline of a message's notices: how soon a failed message must return."""
    return min((n.deadline for n in notices_of(item) if n.deadline), default=None)


# The reports of the message being handled, gathered as its work is done (``Pipeline._one``):
# one list per message, in the thread that handles it.
DONE: ContextVar[list[Report] | None] = ContextVar("lifeboat_message_reports", default=None)

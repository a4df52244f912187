"""One message read: told apart (``lifeboat.flow.classify``), then handed to its kind's
parser. What comes out (:data:`lifeboat.flow.batch.Parsed`) is its notices, a sweep's
triaged notices, a wake-up, the rotation's work, or its result already: rejected with a
reason, or (a bug, never bad input) failed alone, without failing its batch-mates.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from lifeboat.aws.capacity_blocks import find_instances
from lifeboat.decide.origin import foreign_origin
from lifeboat.errors import BrokenInvariant
from lifeboat.events import RESERVATIONS_ON_QUEUE, STATUS_ON_QUEUE, parse_unwrapped
from lifeboat.events.base import malformed
from lifeboat.flow.batch import ForRotation, MessageResult, Parsed
from lifeboat.flow.classify import Body, Classified, MessageKind, classify
from lifeboat.flow.config import FlowConfig
from lifeboat.flow.split import expand
from lifeboat.model.instances import InstanceInfo
from lifeboat.model.notice import MalformedMessage, Notice
from lifeboat.model.report import Report
from lifeboat.wakeup.codec import Wakeup

if TYPE_CHECKING:
    from lifeboat.flow.sweep_request import SweepReader


class MessageReader:
    """Reads the messages of a batch, each into what the pipeline goes on with."""

    def __init__(self, config: FlowConfig) -> None:
        self._config = config

    def read(self, body: Body, found: dict[str, InstanceInfo]) -> Parsed:
        """A message's notices or wake-up, or its result already. An ending Capacity Block's
        notice becomes one per instance of the block, whose facts go into ``found``
        (lifeboat.aws.capacity_blocks)."""
        try:
            return self._read(classify(body), found)
        except MalformedMessage as error:
            return MessageResult([Report.rejected(error.reason, error.event_id, error.kind)])
        except Exception as error:  # the message goes back to the queue, then to the DLQ
            return MessageResult(error=error)

    def _read(self, message: Classified, found: dict[str, InstanceInfo]) -> Parsed:
        kind, wakeup = message.kind, message.wakeup
        if wakeup is not None and kind is MessageKind.SWEEP_PART:
            return self._sweeps().part(wakeup, found)
        if wakeup is not None and kind is MessageKind.REMAINDER:
            return self._remainder(wakeup)
        if wakeup is not None and kind is MessageKind.ROTATION_WAKEUP:
            return ForRotation(wakeup)
        if wakeup is not None:
            return wakeup
        if kind is MessageKind.ROTATION_COMMAND:  # an operator's command (lifeboat.rotation)
            from lifeboat.rotation.request import parse_command

            return ForRotation(parse_command(message.message))
        if kind is MessageKind.SWEEP_REQUEST:
            return self._sweeps().request(message.message, found)
        if kind is MessageKind.STATUS_ANSWER:
            raise malformed(STATUS_ON_QUEUE)
        if kind is MessageKind.RESERVATIONS_ANSWER:
            raise malformed(RESERVATIONS_ON_QUEUE)
        if message.envelope is None:
            raise BrokenInvariant("read: classify opens every AWS message's envelope")
        parsed = parse_unwrapped(message.envelope, received_at=self._config.clock())
        return self._block_instances(parsed, found)

    def _sweeps(self) -> SweepReader:
        """The sweep's reader, imported by the first sweep message: its triage, its holds
        and its hand-over take-over are no part of a Spot warning's cold start."""
        from lifeboat.flow.sweep_request import SweepReader

        return SweepReader(self._config)

    def _remainder(self, wakeup: Wakeup) -> list[Notice]:
        late = _remainder_too_late(wakeup, self._config.clock())
        if late is not None:
            raise MalformedMessage(late, wakeup.notice.event_id, wakeup.notice.kind)
        return expand(wakeup)

    def _block_instances(
        self, notices: list[Notice], found: dict[str, InstanceInfo]
    ) -> list[Notice]:
        """Each ending block's notice as one per instance of it (lifeboat.aws.capacity_blocks).
        A block named by another account's or region's event is left for triage to reject
        before EC2 is asked: a forged warning costs no DescribeInstances."""
        settings = self._config.settings
        return find_instances(
            notices,
            self._config.reservations,
            found,
            foreign=lambda notice: foreign_origin(notice, settings) is not None,
        )


def _remainder_too_late(wakeup: Wakeup, now: datetime) -> str | None:
    """A remainder is handed on minutes after its event, long before the maintenance
    starts: one arriving after the start is no work Lifeboat scheduled (or is too late to
    prepare for it), and its instances are not taken out on its word."""
    deadline = wakeup.notice.deadline
    if deadline is not None and now >= deadline:
        start = deadline.isoformat()
        return f"lifeboat-wakeup.notice.deadline: a remainder past its start ({start})"
    return None

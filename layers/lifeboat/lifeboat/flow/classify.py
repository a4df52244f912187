"""What a message on Lifeboat's queue is, worked out in one place: :func:`classify`.

The queue carries AWS's warnings and Lifeboat's own messages side by side. In the order
they are told apart (the first that matches wins):

=====================  ==================================================================
kind                   how it is told
=====================  ==================================================================
wake-up                the ``lifeboat-wakeup`` marker (``lifeboat.wakeup``); decoded, then
                       by its task: a sweep part, a remainder, one of a rotation's, or any
                       other (a deferred decision, a drain to continue, a hand-over, ...)
rotation command       source ``lifeboat`` and a rotation detail-type (``lifeboat.rotation``)
sweep request          source ``lifeboat.aws.sweep``, detail-type ``Instance Status Sweep``
status answer          a ``DescribeInstanceStatus`` response: rejected, never obeyed
reservations answer    a ``DescribeCapacityReservations`` response: rejected likewise
AWS message            anything else: an EventBridge event, an Auto Scaling message, either
                       wrapped in SNS or not (``lifeboat.events.envelope``), the warning
                       kind it announces read from its source and detail-type
=====================  ==================================================================

Each kind keeps its own parser where it lives (``lifeboat.events`` one per AWS warning,
``lifeboat.wakeup.codec``, ``lifeboat.rotation.request``); this module only says which one a
message goes to, so the pipeline reads one answer instead of asking each package in turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lifeboat.aws import sweep
from lifeboat.events import announced, open_envelope
from lifeboat.events.envelope import (
    Unwrapped,
    is_reservations_response,
    is_status_response,
    load_body,
)
from lifeboat.model.notice import Kind
from lifeboat.rotation import messages as rotation
from lifeboat.wakeup.codec import MARKER, Task, Wakeup, decode

Body = str | bytes | Mapping[str, Any]


class MessageKind(StrEnum):
    """What a message on the queue is (what the pipeline does with it follows from this)."""

    WAKEUP = "wake-up"
    SWEEP_PART = "sweep-part"  # a sweep's instances handed on (lifeboat.flow.split)
    REMAINDER = "remainder"  # a message's instances handed on (lifeboat.flow.split)
    ROTATION_WAKEUP = "rotation-wake-up"  # a rotation's look, or one of its nodes'
    ROTATION_COMMAND = "rotation-command"
    SWEEP_REQUEST = "sweep-request"
    STATUS_ANSWER = "status-answer"
    RESERVATIONS_ANSWER = "reservations-answer"
    AWS_MESSAGE = "aws-message"


@dataclass(frozen=True)
class Classified:
    """One message told apart: its kind, its body decoded, and what was read to tell it (the
    wake-up, for the wake-up kinds; the envelope opened, for AWS's messages)."""

    kind: MessageKind
    message: dict[str, Any]
    wakeup: Wakeup | None = None
    envelope: Unwrapped | None = None

    @property
    def announced(self) -> Kind | None:
        """The warning kind an AWS message announces (``lifeboat.events.announced``)."""
        return announced(self.envelope) if self.envelope is not None else None


def classify(body: Body) -> Classified:
    """What ``body`` is. Raises ``MalformedMessage`` (its reason naming the field) when it is
    no JSON object, a wake-up that does not decode, or an AWS envelope that does not open."""
    message = load_body(body)  # decoded once, for every kind of message
    if is_wakeup(message):
        wakeup = decode(message)
        return Classified(_wakeup_kind(wakeup), message, wakeup=wakeup)
    if is_rotation_event(message):  # an operator's command (lifeboat.rotation)
        return Classified(MessageKind.ROTATION_COMMAND, message)
    if is_sweep_request(message):
        return Classified(MessageKind.SWEEP_REQUEST, message)
    if is_status_response(message):
        return Classified(MessageKind.STATUS_ANSWER, message)
    if is_reservations_response(message):
        return Classified(MessageKind.RESERVATIONS_ANSWER, message)
    return Classified(MessageKind.AWS_MESSAGE, message, envelope=open_envelope(message))


def is_wakeup(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is one of Lifeboat's wake-ups (checked before anything else)."""
    return MARKER in message


def is_rotation_event(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is one of the rotation events (checked before AWS's parsers)."""
    detail_type = message.get("detail-type")
    return (
        message.get("source") == rotation.SOURCE
        and isinstance(detail_type, str)
        and (detail_type in rotation.DETAIL_TYPES)
    )


def is_sweep_request(message: Mapping[str, Any]) -> bool:
    """Whether a message asks for a sweep (what the schedule sends)."""
    return message.get("source") == sweep.SOURCE and message.get("detail-type") == sweep.DETAIL_TYPE


def for_rotation(wakeup: Wakeup) -> bool:
    """Whether the pipeline hands ``wakeup`` to the rotation (commands always go there)."""
    if wakeup.task is Task.ROTATE:
        return True
    return wakeup.notice.kind is Kind.ROTATION and wakeup.task in (
        Task.DECIDE,
        Task.CONTINUE_DRAIN,
        Task.HAND_OVER,  # a rollback cancels it (lifeboat.rotation.rollback)
    )


def _wakeup_kind(wakeup: Wakeup) -> MessageKind:
    if wakeup.task is Task.SWEEP_PART:
        return MessageKind.SWEEP_PART
    if wakeup.task is Task.REMAINDER:
        return MessageKind.REMAINDER
    return MessageKind.ROTATION_WAKEUP if for_rotation(wakeup) else MessageKind.WAKEUP

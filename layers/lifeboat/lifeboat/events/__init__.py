"""Parse what one SQS record carries into :class:`Notice` objects.

>>> from datetime import UTC, datetime
>>> body = (
...     '{"version": "0", "id": "7e0c1b2a-0000-4000-8000-000000000001",'
...     ' "detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2",'
...     ' "time": "2026-12-01T14:02:00Z", "region": "us-east-1", "resources": [],'
...     ' "detail": {"instance-id": "i-0a1b2c3d4e5f60001", "instance-action": "terminate"}}'
... )
>>> [notice] = parse_message(body, received_at=datetime.now(UTC))
>>> notice.kind, notice.instance_id, notice.deadline.isoformat()
(<Kind.SPOT_INTERRUPTION: 'spot-interruption'>, 'i-0a1b2c3d4e5f60001', '2026-12-01T14:04:00+00:00')

One module per event kind (``spot_interruption``, ``rebalance_recommendation``,
``scheduled_change``, ``state_change``, ``asg_lifecycle``, ``capacity_reservation``,
``capacity_block``), each a
small model of its ``detail`` read with :class:`~lifeboat.events.base.Fields` and a parser
object (:class:`Parser`) listed in
:mod:`lifeboat.events.registry`; :mod:`lifeboat.events.envelope` tells the body's forms apart.

May import model/ and errors only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from lifeboat.events import registry
from lifeboat.events.base import MAX_REASON, malformed
from lifeboat.events.capacity_block import read_reservations
from lifeboat.events.envelope import (
    EventBridgeEvent,
    Form,
    Unwrapped,
    is_reservations_response,
    is_status_response,
    load_body,
    unwrap,
)
from lifeboat.events.registry import Parser
from lifeboat.model.instants import as_utc
from lifeboat.model.notice import Kind, LifecycleHook, MalformedMessage, Notice

__all__ = [
    "MAX_REASON",
    "EventBridgeEvent",
    "Kind",
    "LifecycleHook",
    "MalformedMessage",
    "Notice",
    "Parser",
    "Unwrapped",
    "announced",
    "open_envelope",
    "parse_message",
    "parse_unwrapped",
]

STATUS_ON_QUEUE = (
    "body: a DescribeInstanceStatus answer is never taken from the queue: Lifeboat asks EC2 "
    "itself at each sweep (replay a saved answer with lifeboat replay)"
)
"""Why a raw ``DescribeInstanceStatus`` body on the queue is rejected."""

RESERVATIONS_ON_QUEUE = (
    "body: a DescribeCapacityReservations answer is never taken from the queue: Lifeboat asks "
    "EC2 itself at each sweep (replay a saved answer with lifeboat replay)"
)
"""Why a raw ``DescribeCapacityReservations`` body on the queue is rejected (as a status
answer is: it carries no account or region, and a copy of EC2's word is not EC2's word)."""

UNEXPECTED = "body: could not be parsed"
"""Prefix of the reason given when a parser fails in an unforeseen way (a bug, not bad input)."""


def parse_message(body: str | bytes | Mapping[str, Any], *, received_at: datetime) -> list[Notice]:
    """The notices one SQS record body announces.

    ``body`` is an EventBridge event, an SNS notification wrapping one (or wrapping an Auto
    Scaling message), or an Auto Scaling lifecycle hook message sent straight to SQS, as a
    JSON string, UTF-8 bytes or an already decoded mapping. ``received_at`` is used only as
    the time of a message that carries none. Every time in the result is timezone-aware UTC.

    Returns at least one notice: a message that is understood but calls for nothing (a test
    notification, a non-actionable state, an unsupported detail-type) gives a notice with
    ``ignore_reason`` set.

    Raises :class:`MalformedMessage` when the body cannot be understood; its reason names the
    field (``detail.instance-id: field required``) and is at most ``MAX_REASON`` characters.

    The pipeline tells a message's kind first (``lifeboat.flow.classify``) and hands AWS's
    messages, their envelope opened, to :func:`parse_unwrapped`; this is the same parse for
    a caller holding a body (``lifeboat explain``, tests).
    """
    with _safety_net():
        payload = load_body(body)
        if is_status_response(payload):
            # It carries no account or region, and a copy of EC2's word is not EC2's word: the
            # sweep asks EC2 itself (lifeboat.aws.sweep); only ``lifeboat replay`` reads saved
            # answers, through the same sweep.
            raise malformed(STATUS_ON_QUEUE)
        if is_reservations_response(payload):
            raise malformed(RESERVATIONS_ON_QUEUE)
        return _parse_unwrapped(unwrap(payload), received_at=as_utc(received_at))


def open_envelope(payload: dict[str, Any]) -> Unwrapped:
    """Which of AWS's forms ``payload`` is, SNS removed (``lifeboat.events.envelope.unwrap``),
    or :class:`MalformedMessage`."""
    with _safety_net():
        return unwrap(payload)


def parse_unwrapped(message: Unwrapped, *, received_at: datetime) -> list[Notice]:
    """The notices of one of AWS's messages whose envelope :func:`open_envelope` opened: as
    :func:`parse_message`, the body already told apart from Lifeboat's own messages."""
    with _safety_net():
        return _parse_unwrapped(message, received_at=as_utc(received_at))


def announced(message: Unwrapped) -> Kind | None:
    """The warning kind a message announces before its details are read: an EventBridge
    event's by its ``source`` and ``detail-type`` (``UNSUPPORTED`` when no parser knows
    them), a lifecycle hook's ``asg-termination``; None when the message does not say (an
    Auto Scaling notification, an event without source or detail-type)."""
    if message.form is Form.LIFECYCLE_HOOK:
        return Kind.ASG_TERMINATION
    if message.form is not Form.EVENTBRIDGE:
        return None
    source, detail_type = message.payload.get("source"), message.payload.get("detail-type")
    if not isinstance(source, str) or not isinstance(detail_type, str):
        return None
    return _announced(message.payload) or Kind.UNSUPPORTED


@contextmanager
def _safety_net() -> Iterator[None]:
    try:
        yield
    except MalformedMessage:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as exc:
        # A safety net: parsers validate everything they read, so reaching this is a bug.
        raise malformed(f"{UNEXPECTED} ({type(exc).__name__}: {exc})") from exc


def _parse_unwrapped(message: Unwrapped, *, received_at: datetime) -> list[Notice]:
    if message.form is not Form.EVENTBRIDGE:
        # Auto Scaling's own forms, imported by the first (as lifeboat.events.registry does).
        from lifeboat.events.asg_lifecycle import parse_autoscaling_message

        hook = Kind.ASG_TERMINATION if message.form is Form.LIFECYCLE_HOOK else None
        with _rejected_as(hook):
            return parse_autoscaling_message(message, received_at=received_at)
    with _rejected_as(_announced(message.payload)):  # an envelope at fault: its kind stays
        event = EventBridgeEvent.load(message.payload, path=message.path, received_at=received_at)
    if event.region is None and message.region is not None:
        event = event.with_region(message.region)
    parser = registry.lookup(event.source, event.detail_type)
    if parser is None:
        reason = (
            f"unsupported event: source {_q(event.source)}, detail-type {_q(event.detail_type)}"
        )
        nearest = _nearest_detail_type(event.source, event.detail_type)
        source = _nearest_source(event.source)
        if nearest is not None:
            reason += f" (did you mean {_q(nearest)}?)"
        elif source is not None:
            reason += f" (did you mean source {_q(source)}?)"
        return [event.notice(Kind.UNSUPPORTED, ignore_reason=reason)]
    with _rejected_as(parser.kind):
        return parser.parse(event)


def parse_statuses(payload: dict[str, Any], *, received_at: datetime) -> list[Notice]:
    """The notices of a ``DescribeInstanceStatus`` answer the sweep read (from EC2, or from
    a file ``lifeboat replay`` was given): each instance's status through every
    ``registry.status_parsers()``. A response naming no instance in trouble gives one notice
    ignored with that reason, so that every message ends in a report."""
    from lifeboat.events.instance_status import read_response  # the sweep's, not a warning's

    with _rejected_as(Kind.INSTANCE_IMPAIRED):
        statuses = read_response(payload, received_at=received_at)
    readers = registry.status_parsers()
    notices = [n for status in statuses for parser in readers for n in parser.parse(status)]
    if notices:
        return notices
    reason = f"instance status: {len(statuses)} instance(s) described, none impaired or scheduled"
    return [
        Notice(
            kind=Kind.INSTANCE_IMPAIRED,
            event_id="instance-status",
            event_time=received_at,
            ignore_reason=reason,
        )
    ]


def parse_reservations(payload: dict[str, Any], *, received_at: datetime) -> list[Notice]:
    """The ending Capacity Blocks of a ``DescribeCapacityReservations`` response (what the
    sweep reads, or a response saved to a file), one notice naming each reservation
    (``lifeboat.events.capacity_block.read_reservations``); a response naming none gives one
    notice ignored with that reason."""
    with _rejected_as(Kind.CAPACITY_BLOCK_EXPIRY):
        notices = read_reservations(payload, now=received_at)
    if notices:
        return notices
    return [
        Notice(
            kind=Kind.CAPACITY_BLOCK_EXPIRY,
            event_id="capacity-reservations",
            event_time=received_at,
            ignore_reason="capacity reservations described: no capacity block ends within 40 min",
        )
    ]


@contextmanager
def _rejected_as(kind: Kind | None) -> Iterator[None]:
    """A message whose source and type say what it is stays that kind when its details are
    invalid: a Spot warning without ``instance-id`` is a rejected spot-interruption."""
    try:
        yield
    except MalformedMessage as error:
        error.kind = error.kind or kind
        raise


def _announced(payload: Mapping[str, Any]) -> Kind | None:
    """The kind an event's ``source`` and ``detail-type`` announce, read before its envelope
    is validated (a Spot warning without ``time`` is still a Spot warning)."""
    source, detail_type = payload.get("source"), payload.get("detail-type")
    if not isinstance(source, str) or not isinstance(detail_type, str):
        return None
    return registry.kind_of(source, detail_type)


def _nearest_detail_type(source: str, detail_type: str) -> str | None:
    """The detail-type of ``source`` a misspelled one was most likely meant to be."""
    import difflib  # only for a detail-type no parser knows: kept off the cold start

    known = [d for s, d in registry.supported() if s == source]
    found = difflib.get_close_matches(detail_type, known, n=1, cutoff=0.8)
    return found[0] if found else None


def _nearest_source(source: str) -> str | None:
    """The source a misspelled one (``aws.ecc2``) was most likely meant to be; None for a
    source Lifeboat knows, or one no known source is near."""
    import difflib  # as above: only for a message no parser knows

    known = sorted({s for s, _ in registry.supported()})
    if source in known:
        return None
    found = difflib.get_close_matches(source, known, n=1, cutoff=0.75)
    return found[0] if found else None


def _q(text: str) -> str:
    return '"' + (text if len(text) <= 80 else text[:79] + "…") + '"'

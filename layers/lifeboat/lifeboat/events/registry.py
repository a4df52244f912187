"""Which parser handles which (source, detail-type). Adding a kind: a module and a line here.

Only the Spot warning's parser is imported with the registry: every other kind's module
(its detail model, a few frozen dataclasses each, about a millisecond apiece at a cold start)
is imported by :func:`lookup` the first time a message of that kind comes, so the cold start
pays for what the two-minute warning needs and nothing else. :data:`ROUTES` says each pair's
kind without importing its module (a message rejected before its parser runs keeps its kind);
``tests/unit/events/test_events_kinds.py`` checks it against the parsers themselves.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Protocol

from lifeboat.events import spot_interruption
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.model.notice import Kind, Notice

if TYPE_CHECKING:  # read by the sweep's parsers only, imported with them
    from lifeboat.events.instance_status import InstanceStatus


class Parser(Protocol):
    """Turns one EventBridge event of one (source, detail-type) into notices.

    Implementations live one per module (``spot_interruption``, ``scheduled_change``, ...),
    as ``PARSER`` or, for a module registered under several detail-types, ``PARSERS``; each
    pair is listed in this module's ``ROUTES``.
    """

    @property
    def source(self) -> str: ...

    @property
    def detail_type(self) -> str: ...

    @property
    def kind(self) -> Kind:
        """What the event announces, also when its detail is invalid (the rejection's kind)."""
        ...

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        """Notices for ``event``; raises :class:`MalformedMessage` when its detail is invalid."""
        ...


_EC2 = "aws.ec2"
_AUTOSCALING = "aws.autoscaling"

# (source, detail-type) -> (the kind it announces, the module of lifeboat.events parsing it).
ROUTES: dict[tuple[str, str], tuple[Kind, str]] = {
    (_EC2, "EC2 Spot Instance Interruption Warning"): (
        Kind.SPOT_INTERRUPTION,
        "spot_interruption",
    ),
    (_EC2, "EC2 Instance Rebalance Recommendation"): (
        Kind.REBALANCE_RECOMMENDATION,
        "rebalance_recommendation",
    ),
    ("aws.health", "AWS Health Event"): (Kind.SCHEDULED_CHANGE, "scheduled_change"),
    (_EC2, "EC2 Instance State-change Notification"): (Kind.STATE_CHANGE, "state_change"),
    (_EC2, "EC2 Capacity Reservation Instance Interruption Warning"): (
        Kind.CAPACITY_RESERVATION_INTERRUPTION,
        "capacity_reservation",
    ),
    **{
        (_EC2, detail_type): (Kind.CAPACITY_BLOCK_EXPIRY, "capacity_block")
        for detail_type in (
            "Capacity Block Reservation Expiration Warning",
            "Capacity Block Expiration Warning",
            "Capacity Block Reservation Delivered",
            "Capacity Block Delivered",
        )
    },
    (_AUTOSCALING, "EC2 Instance-terminate Lifecycle Action"): (
        Kind.ASG_TERMINATION,
        "asg_lifecycle",
    ),
    (_AUTOSCALING, "EC2 Instance-launch Lifecycle Action"): (
        Kind.ASG_TERMINATION,
        "asg_lifecycle",
    ),
}

_loaded: dict[tuple[str, str], Parser] = {
    (parser.source, parser.detail_type): parser for parser in (spot_interruption.PARSER,)
}
_lock = threading.Lock()  # a batch's messages are parsed on several threads


class StatusParser(Protocol):
    """Turns one instance's ``DescribeInstanceStatus`` entry into notices of one kind
    (``instance_impaired``, ``ec2_scheduled_event``); listed by :func:`status_parsers`."""

    @property
    def kind(self) -> Kind: ...

    def parse(self, status: InstanceStatus) -> list[Notice]: ...


def status_parsers() -> tuple[StatusParser, ...]:
    """What an instance status (the sweep's, or a response replayed from a file) is read by;
    imported by the first sweep, not at the cold start."""
    from lifeboat.events import ec2_scheduled_event, instance_impaired

    return (instance_impaired.PARSER, ec2_scheduled_event.PARSER)


def kind_of(source: str, detail_type: str) -> Kind | None:
    """The kind events of ``source`` and ``detail_type`` announce, if a parser knows them
    (without importing that parser)."""
    route = ROUTES.get((source, detail_type))
    return route[0] if route is not None else None


def lookup(source: str, detail_type: str) -> Parser | None:
    """The parser for EventBridge events of ``source`` and ``detail_type``, if any; its
    module is imported on the first call for it."""
    key = (source, detail_type)
    parser = _loaded.get(key)
    if parser is not None or key not in ROUTES:
        return parser
    with _lock:
        return _loaded.setdefault(key, _import(key))


def _import(key: tuple[str, str]) -> Parser:
    module = importlib.import_module(f"lifeboat.events.{ROUTES[key][1]}")
    candidates: tuple[Parser, ...] = getattr(module, "PARSERS", None) or (module.PARSER,)
    for parser in candidates:
        if (parser.source, parser.detail_type) == key:
            return parser
    raise LookupError(f"lifeboat.events.{ROUTES[key][1]} has no parser for {key}")


def parsers() -> tuple[Parser, ...]:
    """Every registered parser, each module imported (tests, tools: not the Lambda)."""
    found = [lookup(source, detail_type) for source, detail_type in ROUTES]
    return tuple(parser for parser in found if parser is not None)


def supported() -> list[tuple[str, str]]:
    """Every (source, detail-type) pair a parser is registered for (for EventBridge rules)."""
    return list(ROUTES)

"""Which parser handles which (source, detail-type). Adding a kind: a module and a line here."""

from __future__ import annotations

from typing import Protocol

from lifeboat.events import (
    asg_lifecycle,
    capacity_block,
    capacity_reservation,
    ec2_scheduled_event,
    instance_impaired,
    rebalance_recommendation,
    scheduled_change,
    spot_interruption,
    state_change,
)
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.events.instance_status import InstanceStatus
from lifeboat.model.notice import Kind, Notice


class Parser(Protocol):
    """Turns one EventBridge event of one (source, detail-type) into notices.

    Implementations live one per module (``spot_interruption``, ``scheduled_change``, ...)
    and are listed in this module's ``PARSERS``.
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


PARSERS: tuple[Parser, ...] = (
    spot_interruption.PARSER,
    rebalance_recommendation.PARSER,
    scheduled_change.PARSER,
    state_change.PARSER,
    capacity_reservation.PARSER,
    *capacity_block.PARSERS,
    *asg_lifecycle.PARSERS,
)


class StatusParser(Protocol):
    """Turns one instance's ``DescribeInstanceStatus`` entry into notices of one kind
    (``instance_impaired``, ``ec2_scheduled_event``); listed in ``STATUS_PARSERS``."""

    @property
    def kind(self) -> Kind: ...

    def parse(self, status: InstanceStatus) -> list[Notice]: ...


# What an instance status (the sweep's, or a response replayed from a file) is read by.
STATUS_PARSERS: tuple[StatusParser, ...] = (
    instance_impaired.PARSER,
    ec2_scheduled_event.PARSER,
)

_BY_KEY: dict[tuple[str, str], Parser] = {}
for _parser in PARSERS:
    _key = (_parser.source, _parser.detail_type)
    if _key in _BY_KEY:
        raise RuntimeError(f"two parsers for source {_key[0]!r}, detail-type {_key[1]!r}")
    _BY_KEY[_key] = _parser


def lookup(source: str, detail_type: str) -> Parser | None:
    """The parser for EventBridge events of ``source`` and ``detail_type``, if any."""
    return _BY_KEY.get((source, detail_type))


def supported() -> list[tuple[str, str]]:
    """Every (source, detail-type) pair a parser is registered for (for EventBridge rules)."""
    return list(_BY_KEY)

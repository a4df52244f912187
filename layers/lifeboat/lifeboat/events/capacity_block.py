"""``capacity-block-expiry``: a Capacity Block for ML is ending, and EC2 takes its instances.

EC2 user guide, "Monitor Capacity Blocks using EventBridge": forty minutes before a
Capacity Block reservation ends, EC2 sends (source ``aws.ec2``)::

    "detail-type": "Capacity Block Reservation Expiration Warning",
    "resources": ["arn:aws:ec2:<region>:<account>:capacity-reservation/cr-..."],
    "detail": {"capacity-reservation-id": "cr-...", "end-date": "2026-12-01T14:45:00Z"}

and "any instances running in the reservation will begin to terminate in 10 minutes": the
deadline is ``end-date`` minus 30 minutes (:data:`TERMINATION_LEAD`). When a block starts,
"Capacity Block Reservation Delivered" carries the same detail. The guide's revisions spell
both detail-types also without "Reservation" ("Capacity Block Expiration Warning"): both
spellings are parsed, and the stack's rule takes both.

The warning names a reservation, not an instance: it is parsed into one notice naming the
reservation (``Notice.reservation_id``, no instance), which the pipeline turns into one
involuntary notice per instance of the reservation (:func:`for_instances`, from one
``DescribeInstances`` filtered by ``capacity-reservation-id``). Each instance's replacement
is kept out of the expiring reservation (``lifeboat.karpenter.replacement``).

Without the event, the instance status sweep finds the same blocks
(:func:`read_reservations`, a ``DescribeCapacityReservations`` response), as Karpenter's
``capacityreservation/expiration`` controller does (``CapacityReservationFromEC2``: a
``capacity-block`` reservation is expiring from 40 minutes before its ``EndDate``); the
ledger key (``Notice.ledger_key``: instance and deadline) makes them one.

"Delivered" is routed and ignored with its reason: it concerns no node (the capacity is
there; a node class or node group launches into it), and the report it leaves in the logs
shows, days before the warning that matters, that the rule and the queue carry the block's
events.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from lifeboat.events.base import MAX_REASON, Fields, clip, parse_time
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, Notice

# EC2 sends the warning 40 minutes before the end and starts terminating 30 minutes before.
WARNING_LEAD = timedelta(minutes=40)
TERMINATION_LEAD = timedelta(minutes=30)
# A warning whose end is further away than this is no warning EC2 sends (it sends it 40
# minutes before the end): not obeyed, lest a wrong end-date take nodes out days early; the
# sweep acts on the block when its end is near.
LATEST_WARNING = timedelta(hours=2)
EXPIRY_WARNINGS = (
    "Capacity Block Reservation Expiration Warning",
    "Capacity Block Expiration Warning",
)
DELIVERIES = ("Capacity Block Reservation Delivered", "Capacity Block Delivered")
# DescribeCapacityReservations' ReservationType of a Capacity Block.
CAPACITY_BLOCK = "capacity-block"
# What the sweep's DescribeCapacityReservations answer is called in reports.
ORIGIN = "DescribeCapacityReservations"


@dataclass(frozen=True)
class CapacityBlockDetail:
    """A Capacity Block event's ``detail``: the reservation, and its end when EC2 says it."""

    reservation_id: str
    end_date: datetime | None

    @classmethod
    def read(cls, fields: Fields) -> CapacityBlockDetail:
        return cls(
            reservation_id=fields.reservation_id("capacity-reservation-id"),
            end_date=fields.time("end-date", default=None),
        )


def block_notice(
    reservation_id: str, end: datetime, *, event_id: str, event_time: datetime, **fields: Any
) -> Notice:
    """The notice of one ending block, naming its reservation and no instance yet."""
    return Notice(
        kind=Kind.CAPACITY_BLOCK_EXPIRY,
        event_id=event_id,
        event_time=event_time,
        deadline=end - TERMINATION_LEAD,
        detail=f"capacity block {reservation_id} ends {format_instant(end)}",
        reservation_id=reservation_id,
        **fields,
    )


class _CapacityBlockParser:
    """EC2's Capacity Block events, registered under each spelling the EC2 guide uses."""

    source = "aws.ec2"
    kind = Kind.CAPACITY_BLOCK_EXPIRY

    def __init__(self, detail_type: str) -> None:
        self.detail_type = detail_type


class CapacityBlockExpiryParser(_CapacityBlockParser):
    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = CapacityBlockDetail.read(event.detail_fields())
        # The warning is sent 40 minutes before the end: without end-date, that is the end.
        end = detail.end_date or event.after(WARNING_LEAD)
        notice = block_notice(
            detail.reservation_id,
            end,
            event_id=event.id,
            event_time=event.time,
            account=event.account,
            region=event.region,
        )
        if end <= event.time:
            reason = f"{notice.detail}: already ended when the warning was sent"
            return [replace(notice, ignore_reason=reason)]
        if end - event.time > LATEST_WARNING:
            reason = (
                f"{notice.detail}: {format_instant(event.time)} is more than 2 hours before the "
                "end, and EC2 warns 40 minutes before it; not acted on (the instance status "
                "sweep acts on the block when its end is 40 minutes away)"
            )
            return [replace(notice, ignore_reason=reason)]
        return [notice]


class CapacityBlockDeliveredParser(_CapacityBlockParser):
    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = CapacityBlockDetail.read(event.detail_fields())
        ends = f", ends {format_instant(detail.end_date)}" if detail.end_date else ""
        reason = (
            f"capacity block {detail.reservation_id} delivered{ends}: no node to act on yet "
            "(its nodes are replaced at the expiration warning, 40 minutes before the end, "
            "or when the sweep sees the end that near)"
        )
        return [
            event.notice(
                Kind.CAPACITY_BLOCK_EXPIRY,
                detail=clip(f"capacity block {detail.reservation_id} delivered", 120),
                reservation_id=detail.reservation_id,
                ignore_reason=reason,
            )
        ]


PARSERS: tuple[CapacityBlockExpiryParser | CapacityBlockDeliveredParser, ...] = (
    *(CapacityBlockExpiryParser(detail_type) for detail_type in EXPIRY_WARNINGS),
    *(CapacityBlockDeliveredParser(detail_type) for detail_type in DELIVERIES),
)


def awaits_instances(notice: Notice) -> bool:
    """Whether ``notice`` names an ending block whose instances are still to be found."""
    return (
        notice.kind is Kind.CAPACITY_BLOCK_EXPIRY
        and notice.instance_id is None
        and notice.reservation_id is not None
        and notice.ignore_reason is None
    )


def for_instances(notice: Notice, instance_ids: list[str]) -> list[Notice]:
    """One notice per instance of the block (the reservation's notice, ignored with its
    reason, when none runs in it)."""
    if not instance_ids:
        reason = f"{notice.detail}: no instance runs in it"
        return [replace(notice, ignore_reason=reason)]
    return [replace(notice, instance_id=instance) for instance in sorted(instance_ids)]


# --- DescribeCapacityReservations (the sweep) --------------------------------------------


def read_reservations(payload: dict[str, Any], *, now: datetime) -> list[Notice]:
    """The Capacity Blocks of a ``DescribeCapacityReservations`` response that are ending:
    ``ReservationType`` ``capacity-block``, ``State`` ``active``, ``EndDate`` after ``now``
    and at most :data:`WARNING_LEAD` away (Karpenter's ``CapacityReservationFromEC2``:
    expiring once ``now`` is not before ``EndDate - 40m``; its provider drops reservations
    whose end has passed). Each gives one notice naming its reservation."""
    fields = Fields(payload, path="", event_id=None)
    notices = []
    for entry in fields.objects("CapacityReservations"):
        if entry.string("ReservationType", "default") != CAPACITY_BLOCK:
            continue
        if entry.string("State", "active") != "active":
            continue
        end = entry.time("EndDate", parse_time, None)
        if end is None or not end - WARNING_LEAD <= now < end:
            continue
        reservation = entry.reservation_id("CapacityReservationId")
        stamp = end.strftime("%Y%m%dT%H%M%SZ")
        notices.append(
            block_notice(
                reservation,
                end,
                event_id=f"capacity-block:{reservation}:{stamp}",
                event_time=now,
            )
        )
    return notices


def unread_reservations(error: Exception, now: datetime) -> Notice:
    """The report of a sweep whose ``DescribeCapacityReservations`` failed: the instance
    statuses are handled all the same, and the next sweep looks at the blocks again."""
    return Notice(
        kind=Kind.CAPACITY_BLOCK_EXPIRY,
        event_id="capacity-reservations",
        event_time=now,
        ignore_reason=clip(
            f"could not describe the capacity reservations ({type(error).__name__}: {error}); "
            "ending capacity blocks looked for at the next sweep",
            MAX_REASON,
        ),
    )

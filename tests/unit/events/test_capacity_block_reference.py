"""The sweep's reading of ``DescribeCapacityReservations`` against Karpenter's AWS provider,
boundary by boundary: ``pkg/apis/v1/ec2nodeclass_status.go`` ``CapacityReservationFromEC2``
(a ``capacity-block`` reservation is ``expiring`` once ``now`` is not before ``EndDate - 40m``;
any other type, or no ``EndDate``, is never expiring) and
``pkg/providers/capacityreservation/provider.go`` ``filterReservations`` (a reservation whose
``EndDate`` is not after ``now`` is dropped)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lifeboat.events.capacity_block import read_reservations

END = datetime(2026, 12, 1, 14, 45, tzinfo=UTC)
BLOCK = "cr-0b1c2d3e4f5a60001"


def response(**fields: Any) -> dict[str, Any]:
    entry = {
        "CapacityReservationId": BLOCK,
        "ReservationType": "capacity-block",
        "State": "active",
        "InstanceMatchCriteria": "targeted",
        "EndDate": END.isoformat(),
        **fields,
    }
    return {"CapacityReservations": [{k: v for k, v in entry.items() if v is not None}]}


@pytest.mark.parametrize(
    ("before_end", "expiring"),
    [
        (timedelta(minutes=41), False),  # clk.Now().Before(end - 40m): active
        (timedelta(minutes=40), True),  # not before end - 40m: expiring
        (timedelta(minutes=1), True),
        (timedelta(0), False),  # filterReservations: EndDate.After(now) is false: dropped
    ],
)
def test_expiring_from_forty_minutes_before_the_end_as_capacity_reservation_from_ec2(
    before_end: timedelta, expiring: bool
) -> None:
    notices = read_reservations(response(), now=END - before_end)
    assert bool(notices) is expiring
    if notices:
        assert notices[0].deadline == END - timedelta(minutes=30)


@pytest.mark.parametrize(
    "fields",
    [
        {"ReservationType": "default"},  # an ODCR: reservationType != capacity-block
        {"ReservationType": None},  # EC2 omits it for an ODCR: default
        {"EndDate": None},  # endTime == nil: active
    ],
)
def test_only_a_capacity_block_with_an_end_is_ever_expiring(fields: dict[str, Any]) -> None:
    """``CapacityReservationFromEC2``: ``reservationType != CapacityBlock || endTime == nil``
    is ``active`` whatever the clock says."""
    assert read_reservations(response(**fields), now=END - timedelta(minutes=5)) == []

"""Capacity Blocks for ML: the ending blocks EC2 describes, and the instances running in them.

Two lookups, both EC2's:

- :class:`Ec2CapacityReservations`: ``DescribeCapacityReservations`` of the account's active
  reservations, read by the instance status sweep (``lifeboat.flow.pipeline``) so that a
  block nearing its end is found without EC2's warning, as Karpenter's
  ``capacityreservation/expiration`` controller finds it (it polls every minute, no queue
  needed). Karpenter asks for the ids its NodeClaims carry (``karpenter.k8s.aws/capacity-
  reservation-id``); Lifeboat asks for every active reservation of the account and region, in
  one paginated call whatever the number of clusters: node-group nodes carry no such label,
  and instances outside the managed clusters are dropped at triage like any other
  notice's. Which reservations are ending is ``lifeboat.events.capacity_block``'s to say.
- :func:`find_instances`: a notice naming an ending block becomes one notice per instance of
  it, from one ``DescribeInstances`` filtered by ``capacity-reservation-id``
  (``lifeboat.model.instances.Ec2InstanceDirectory.in_reservation``); the instances' facts
  are kept, so the batch does not describe them again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from lifeboat.events.capacity_block import awaits_instances, for_instances
from lifeboat.model.instances import InstanceInfo, ReservationDirectory
from lifeboat.model.notice import Notice

# DescribeCapacityReservations' largest page.
PAGE_SIZE = 1000


class CapacityReservations(Protocol):
    """Where the sweep reads capacity reservations from (EC2, or a test's answer)."""

    def pages(self) -> list[dict[str, Any]]: ...


class Ec2CapacityReservations:
    """``DescribeCapacityReservations`` of the active reservations, every page.

    ``state`` ``active`` is filtered by EC2, as Karpenter's query does
    (``Query.DescribeCapacityReservationsInput``); the reservation type and the end are
    judged by the reader, which needs the end anyway."""

    def __init__(self, ec2_client: Any) -> None:
        self._ec2 = ec2_client
        self.calls = 0

    def pages(self) -> list[dict[str, Any]]:
        pages: list[dict[str, Any]] = []
        paginator = self._ec2.get_paginator("describe_capacity_reservations")
        filters = [{"Name": "state", "Values": ["active"]}]
        for page in paginator.paginate(Filters=filters, MaxResults=PAGE_SIZE):
            self.calls += 1
            pages.append(page)
        return pages


def find_instances(
    notices: list[Notice],
    directory: ReservationDirectory | None,
    found: dict[str, InstanceInfo],
    foreign: Callable[[Notice], bool] | None = None,
) -> list[Notice]:
    """``notices`` with each ending block's notice replaced by one per instance running in
    it; their facts go into ``found``. Without a ``directory`` a block's notice is ignored
    with that reason (nothing to look its instances up with). A ``foreign`` notice (another
    account's or region's, which triage rejects) is kept as it is: EC2 is not asked."""
    out: list[Notice] = []
    looked_up: dict[str, list[str]] = {}
    for notice in notices:
        reservation = notice.reservation_id
        if not awaits_instances(notice) or reservation is None or (foreign and foreign(notice)):
            out.append(notice)
            continue
        if directory is None:
            why = f"{notice.detail}: this pipeline cannot look up a reservation's instances"
            out.append(replace(notice, ignore_reason=why))
            continue
        if reservation not in looked_up:  # one call per block, however often it is named
            infos = directory.in_reservation(reservation)
            found.update(infos)
            looked_up[reservation] = sorted(infos)
        out.extend(for_instances(notice, looked_up[reservation]))
    return out

"""EC2 Capacity Reservation Instance Interruption Warning.

The owner of an interruptible Capacity Reservation reclaims capacity; instances running in it
are terminated two minutes after this warning. Detail-type and detail shape as documented in
"Monitor interruptible Capacity Reservations with EventBridge and CloudTrail"
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-interruptible-cr.html)::

    "detail": {"instance-id": "i-...", "instance-action": "terminate",
               "instance-termination-time": "yyyy-mm-ddThh:mm:ssZ", "azId": "use1-az2"}

The deadline is the event time plus two minutes, or ``instance-termination-time`` if that is
earlier.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from lifeboat.events.base import Fields, clip
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.model.notice import Kind, Notice

WARNING = timedelta(minutes=2)


@dataclass(frozen=True)
class CapacityReservationInterruptionDetail:
    instance_id: str
    instance_action: str = "terminate"
    instance_termination_time: datetime | None = None

    @classmethod
    def read(cls, fields: Fields) -> CapacityReservationInterruptionDetail:
        return cls(
            instance_id=fields.instance_id("instance-id"),
            instance_action=fields.string("instance-action", "terminate"),
            instance_termination_time=fields.time("instance-termination-time", default=None),
        )


class CapacityReservationInterruptionParser:
    source = "aws.ec2"
    detail_type = "EC2 Capacity Reservation Instance Interruption Warning"
    kind = Kind.CAPACITY_RESERVATION_INTERRUPTION

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = CapacityReservationInterruptionDetail.read(event.detail_fields())
        deadline = event.after(WARNING)
        if detail.instance_termination_time is not None:
            deadline = min(deadline, detail.instance_termination_time)
        return [
            event.notice(
                Kind.CAPACITY_RESERVATION_INTERRUPTION,
                instance_id=detail.instance_id,
                deadline=deadline,
                detail=clip(detail.instance_action),
            )
        ]


PARSER = CapacityReservationInterruptionParser()

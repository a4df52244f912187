"""EC2 Spot Instance Interruption Warning: the instance goes away in two minutes.

https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from lifeboat.events.base import Fields
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.model.notice import Kind, Notice

WARNING = timedelta(minutes=2)
"""How long before the interruption AWS sends the warning."""


ACTIONS = ("terminate", "stop", "hibernate")


@dataclass(frozen=True)
class SpotInterruptionDetail:
    """The warning's ``detail``: which instance, and what EC2 does to it."""

    instance_id: str
    instance_action: str

    @classmethod
    def read(cls, fields: Fields) -> SpotInterruptionDetail:
        return cls(
            instance_id=fields.instance_id("instance-id"),
            instance_action=fields.literal("instance-action", ACTIONS),
        )


class SpotInterruptionParser:
    source = "aws.ec2"
    detail_type = "EC2 Spot Instance Interruption Warning"
    kind = Kind.SPOT_INTERRUPTION

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = SpotInterruptionDetail.read(event.detail_fields())
        return [
            event.notice(
                Kind.SPOT_INTERRUPTION,
                instance_id=detail.instance_id,
                deadline=event.after(WARNING),
                detail=detail.instance_action,
            )
        ]


PARSER = SpotInterruptionParser()

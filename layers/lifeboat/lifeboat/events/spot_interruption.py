"""EC2 Spot Instance Interruption Warning: the instance goes away in two minutes.

https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field

from lifeboat.events.base import InstanceId, Model
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.events.notice import Kind, Notice

WARNING = timedelta(minutes=2)
"""How long before the interruption AWS sends the warning."""


class SpotInterruptionDetail(Model):
    instance_id: InstanceId = Field(alias="instance-id")
    instance_action: Literal["terminate", "stop", "hibernate"] = Field(alias="instance-action")


class SpotInterruptionParser:
    source = "aws.ec2"
    detail_type = "EC2 Spot Instance Interruption Warning"
    kind = Kind.SPOT_INTERRUPTION

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = event.detail_as(SpotInterruptionDetail)
        return [
            event.notice(
                Kind.SPOT_INTERRUPTION,
                instance_id=detail.instance_id,
                deadline=event.after(WARNING),
                detail=detail.instance_action,
            )
        ]


PARSER = SpotInterruptionParser()

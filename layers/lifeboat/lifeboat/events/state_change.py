"""EC2 Instance State-change Notification: the instance is stopping or already gone.

Only ``stopping``, ``stopped``, ``shutting-down`` and ``terminated`` call for action (at once:
the deadline is the event time); ``pending``, ``running`` and any other state are no-ops.
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
"""

from __future__ import annotations

from pydantic import Field

from lifeboat.events.base import InstanceId, Model, clip
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.events.notice import Kind, Notice

ACTIONABLE_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})


class StateChangeDetail(Model):
    instance_id: InstanceId = Field(alias="instance-id")
    state: str


class StateChangeParser:
    source = "aws.ec2"
    detail_type = "EC2 Instance State-change Notification"
    kind = Kind.STATE_CHANGE

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = event.detail_as(StateChangeDetail)
        if detail.state not in ACTIONABLE_STATES:
            return [
                event.notice(
                    Kind.STATE_CHANGE,
                    instance_id=detail.instance_id,
                    detail=clip(detail.state),
                    ignore_reason=f"state {clip(detail.state)!r} is not actionable",
                )
            ]
        return [
            event.notice(
                Kind.STATE_CHANGE,
                instance_id=detail.instance_id,
                deadline=event.time,
                detail=detail.state,
            )
        ]


PARSER = StateChangeParser()

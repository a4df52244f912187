"""EC2 Instance State-change Notification: the instance is stopping or already gone.

Only ``stopping``, ``stopped``, ``shutting-down`` and ``terminated`` call for action (at once:
the deadline is the event time); ``pending``, ``running`` and any other state are no-ops.
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
"""

from __future__ import annotations

from dataclasses import dataclass

from lifeboat.events.base import Fields, clip
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.model.notice import Kind, Notice

ACTIONABLE_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})


@dataclass(frozen=True)
class StateChangeDetail:
    instance_id: str
    state: str

    @classmethod
    def read(cls, fields: Fields) -> StateChangeDetail:
        return cls(instance_id=fields.instance_id("instance-id"), state=fields.string("state"))


class StateChangeParser:
    source = "aws.ec2"
    detail_type = "EC2 Instance State-change Notification"
    kind = Kind.STATE_CHANGE

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = StateChangeDetail.read(event.detail_fields())
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

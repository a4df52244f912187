"""EC2 Instance Rebalance Recommendation: a Spot instance is at elevated risk of interruption.

No deadline: an interruption warning may or may not follow. The action is voluntary and
waits for the NodePool's budgets and windows.
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html
"""

from __future__ import annotations

from pydantic import Field

from lifeboat.events.base import InstanceId, Model
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.events.notice import Kind, Notice


class RebalanceRecommendationDetail(Model):
    instance_id: InstanceId = Field(alias="instance-id")


class RebalanceRecommendationParser:
    source = "aws.ec2"
    detail_type = "EC2 Instance Rebalance Recommendation"
    kind = Kind.REBALANCE_RECOMMENDATION

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        detail = event.detail_as(RebalanceRecommendationDetail)
        return [event.notice(Kind.REBALANCE_RECOMMENDATION, instance_id=detail.instance_id)]


PARSER = RebalanceRecommendationParser()

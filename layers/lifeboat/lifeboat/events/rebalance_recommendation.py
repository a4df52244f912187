"""EC2 Instance Rebalance Recommendation: a Spot instance is at elevated risk of interruption.

No deadline: an interruption warning may or may not follow. The action is voluntary and
waits for the NodePool's budgets and windows.
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html
"""

from __future__ import annotations

from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.model.notice import Kind, Notice


class RebalanceRecommendationParser:
    source = "aws.ec2"
    detail_type = "EC2 Instance Rebalance Recommendation"
    kind = Kind.REBALANCE_RECOMMENDATION

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        instance_id = event.detail_fields().instance_id("instance-id")
        return [event.notice(Kind.REBALANCE_RECOMMENDATION, instance_id=instance_id)]


PARSER = RebalanceRecommendationParser()

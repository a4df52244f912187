"""AWS Health Event: scheduled maintenance or retirement of EC2 instances.

Only events of service ``EC2`` and category ``scheduledChange`` call for action, one notice per
affected instance, due at ``startTime`` (an RFC 1123 date such as
``Tue, 08 Dec 2026 09:00:00 GMT``; ISO 8601 is accepted too). Other Health events, closed ones
and ones that name no instance are understood but ignored.
https://docs.aws.amazon.com/health/latest/ug/aws-health-events-eventbridge-schema.html
"""

from __future__ import annotations

from pydantic import Field

from lifeboat.events.base import INSTANCE_ID_RE, Model, Rfc1123, clip
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.events.notice import Kind, Notice

SERVICE = "EC2"
CATEGORY = "scheduledChange"


class HealthEventHead(Model):
    """What every Health event carries; enough to tell whether it concerns Lifeboat."""

    service: str
    event_type_code: str = Field(alias="eventTypeCode")
    event_type_category: str = Field(alias="eventTypeCategory")
    status_code: str | None = Field(None, alias="statusCode")


class AffectedEntity(Model):
    entity_value: str | None = Field(None, alias="entityValue")


class ScheduledChangeDetail(HealthEventHead):
    start_time: Rfc1123 = Field(alias="startTime")
    affected_entities: list[AffectedEntity] = Field(alias="affectedEntities")


class ScheduledChangeParser:
    source = "aws.health"
    detail_type = "AWS Health Event"
    kind = Kind.SCHEDULED_CHANGE

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        head = event.detail_as(HealthEventHead)
        code = clip(head.event_type_code)
        if head.service != SERVICE or head.event_type_category != CATEGORY:
            reason = (
                f"health event of service {clip(head.service)!r}, category "
                f"{clip(head.event_type_category)!r} is not an EC2 scheduled change"
            )
            return [event.notice(Kind.SCHEDULED_CHANGE, detail=code, ignore_reason=reason)]
        detail = event.detail_as(ScheduledChangeDetail)
        if detail.status_code == "closed":
            reason = "health event is closed: the scheduled change is over or cancelled"
            return [event.notice(Kind.SCHEDULED_CHANGE, detail=code, ignore_reason=reason)]
        instances = dict.fromkeys(
            entity.entity_value
            for entity in detail.affected_entities
            if entity.entity_value is not None and INSTANCE_ID_RE.match(entity.entity_value)
        )
        if not instances:
            reason = "no affected entity of the health event is an EC2 instance"
            return [event.notice(Kind.SCHEDULED_CHANGE, detail=code, ignore_reason=reason)]
        return [
            event.notice(
                Kind.SCHEDULED_CHANGE,
                instance_id=instance_id,
                deadline=detail.start_time,
                detail=code,
            )
            for instance_id in instances
        ]


PARSER = ScheduledChangeParser()

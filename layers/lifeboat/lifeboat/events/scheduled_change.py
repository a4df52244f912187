"""AWS Health Event: scheduled maintenance or retirement of EC2 instances.

Only events of service ``EC2`` and category ``scheduledChange`` call for action, one notice per
affected instance, due at ``startTime``; a ``closed`` one ends the maintenance for each
instance it names (``Notice.ends_maintenance``) (an RFC 1123 date such as
``Tue, 08 Dec 2026 09:00:00 GMT``; ISO 8601 is accepted too). Other Health events, closed ones
and ones that name no instance are understood but ignored.
https://docs.aws.amazon.com/health/latest/ug/aws-health-events-eventbridge-schema.html
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lifeboat.events.base import INSTANCE_ID_RE, Fields, clip, parse_rfc1123
from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.model.notice import EMPTY_START, Kind, Notice

SERVICE = "EC2"
CATEGORY = "scheduledChange"


@dataclass(frozen=True)
class HealthEventHead:
    """What every Health event carries; enough to tell whether it concerns Lifeboat."""

    service: str
    event_type_code: str
    event_type_category: str
    status_code: str | None = None
    # Which Health event this is: recorded on the node it holds, so that only its own
    # closing ends that hold.
    event_arn: str | None = None

    @classmethod
    def read(cls, fields: Fields) -> HealthEventHead:
        return cls(
            service=fields.string("service"),
            event_type_code=fields.string("eventTypeCode"),
            event_type_category=fields.string("eventTypeCategory"),
            status_code=fields.string("statusCode", None),
            event_arn=fields.string("eventArn", None),
        )


@dataclass(frozen=True)
class ScheduledChangeDetail:
    head: HealthEventHead
    start_time: datetime
    affected_entities: list[str | None]
    """Each affected entity's ``entityValue`` (``None`` where it has none)."""

    @classmethod
    def read(cls, fields: Fields, *, now: datetime) -> ScheduledChangeDetail:
        """``now``: what an empty ``startTime`` is (due at once)."""
        head = HealthEventHead.read(fields)
        empty = fields.data.get("startTime") == ""
        start_time = now if empty else fields.time("startTime", parse_rfc1123)
        entities = [
            entity.string("entityValue", None) for entity in fields.objects("affectedEntities")
        ]
        return cls(head=head, start_time=start_time, affected_entities=entities)


class ScheduledChangeParser:
    source = "aws.health"
    detail_type = "AWS Health Event"
    kind = Kind.SCHEDULED_CHANGE

    def parse(self, event: EventBridgeEvent) -> list[Notice]:
        head = HealthEventHead.read(event.detail_fields())
        code = clip(head.event_type_code)
        if head.service != SERVICE or head.event_type_category != CATEGORY:
            reason = (
                f"health event of service {clip(head.service)!r}, category "
                f"{clip(head.event_type_category)!r} is not an EC2 scheduled change"
            )
            return [event.notice(Kind.SCHEDULED_CHANGE, detail=code, ignore_reason=reason)]
        # ``startTime: ""`` (a string, as AWS's schema types it, but empty: the json.Marshal
        # of an unset field in Karpenter's tests): due now. Karpenter never reads startTime
        # and drains a scheduled change at once (``actionForMessage``: CordonAndDrain).
        if event.detail.get("startTime") == "":
            event = event.assume(EMPTY_START)
        now = event.received_at or event.time
        detail = ScheduledChangeDetail.read(event.detail_fields(), now=now)
        instances = dict.fromkeys(
            value
            for value in detail.affected_entities
            if value is not None and INSTANCE_ID_RE.match(value)
        )
        closed = head.status_code == "closed"
        if not instances:
            reason = (
                "health event is closed: the scheduled change is over or cancelled"
                if closed
                else "no affected entity of the health event is an EC2 instance"
            )
            return [event.notice(Kind.SCHEDULED_CHANGE, detail=code, ignore_reason=reason)]
        # Closed: over or cancelled, so what Lifeboat did to a node it kept is undone (decide).
        return [
            event.notice(
                Kind.SCHEDULED_CHANGE,
                instance_id=instance_id,
                deadline=detail.start_time,
                detail=code,
                ends_maintenance=closed,
                event_arn=clip(head.event_arn, 1600) if head.event_arn else None,
            )
            for instance_id in instances
        ]


PARSER = ScheduledChangeParser()

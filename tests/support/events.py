"""AWS events from the samples in ``events/``, the SQS records Lambda receives around them,
and ``Notice`` values for the pure policy.

Every builder starts from a fresh copy of a sample, so a test changes only what it names::

    spot = aws_event("spot-interruption", instance="i-0a1b2c3d4e5f60003", event_id="spot-3")
    batch = sqs_batch(spot, aws_event("state-change", state="stopping"))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from lifeboat.model.notice import Kind, LifecycleHook, Notice
from tests.support.kube import INSTANCE
from tests.support.paths import EVENTS

ACCOUNT = "123456789012"
REGION = "us-east-1"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lifeboat-queue"
# The sample cluster's clock: a Tuesday afternoon, inside general's weekday freeze.
SAMPLE_TIME = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


def sample(name: str) -> dict[str, Any]:
    """A fresh copy of ``events/<name>``; ``name`` may leave out ``.json`` and may name a
    subfolder (``"raw/asg-lifecycle-hook"``, ``"sqs/spot-interruption.json"``)."""
    path = EVENTS / (name if name.endswith(".json") else f"{name}.json")
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def stamp(moment: datetime) -> str:
    """An EventBridge ``time``: ISO 8601 in UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def instance_arn(instance_id: str, region: str = REGION, account: str = ACCOUNT) -> str:
    return f"arn:aws:ec2:{region}:{account}:instance/{instance_id}"


def aws_event(
    name: str,
    *,
    instance: str | None = None,
    event_id: str | None = None,
    time: datetime | str | None = None,
    **detail: Any,
) -> dict[str, Any]:
    """The sample ``name`` (an EventBridge event), about ``instance`` when given, with its
    ``id``, ``time`` and ``detail`` fields changed as named. For an AWS Health event the
    instance becomes the one affected entity; for a lifecycle action, ``EC2InstanceId``."""
    event = sample(name)
    if event_id is not None:
        event["id"] = event_id
    if time is not None:
        event["time"] = time if isinstance(time, str) else stamp(time)
    body = event["detail"]
    if instance is not None:
        if event.get("source") == "aws.health":
            updated = body.get("lastUpdatedTime", "")
            body["affectedEntities"] = [
                {"entityValue": instance, "lastUpdatedTime": updated, "status": "IMPAIRED"}
            ]
            event["resources"] = [instance]
        elif "EC2InstanceId" in body:
            body["EC2InstanceId"] = instance
        else:
            body["instance-id"] = instance
            event["resources"] = [
                instance_arn(instance, event.get("region", REGION), event.get("account", ACCOUNT))
            ]
    body.update(detail)
    return event


def health_time(moment: datetime) -> str:
    """An AWS Health ``startTime``: RFC 1123 in GMT (``Tue, 08 Dec 2026 09:00:00 GMT``)."""
    return format_datetime(moment.astimezone(UTC), usegmt=True)


def sqs_record(
    body: str | Mapping[str, Any],
    message_id: str = "m-0",
    *,
    receive_count: int = 1,
    queue_arn: str = QUEUE_ARN,
) -> dict[str, Any]:
    """One record of the SQS batch event Lambda receives."""
    text = body if isinstance(body, str) else json.dumps(body)
    return {
        "messageId": message_id,
        "receiptHandle": f"handle-{message_id}-{receive_count}",
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": "1796133720412",
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": "1796133720435",
        },
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": queue_arn.split(":")[3],
    }


def sqs_batch(*bodies: str | Mapping[str, Any]) -> dict[str, Any]:
    """An SQS batch event of one record per body, message ids ``m-0``, ``m-1``, ..."""
    return {"Records": [sqs_record(body, f"m-{index}") for index, body in enumerate(bodies)]}


# --- Notices ----------------------------------------------------------------------------------

LIFECYCLE_HOOK = LifecycleHook("eks-system-1", "lifeboat-drain", "token-1", INSTANCE)


def notice(
    kind: Kind,
    *,
    at: datetime = SAMPLE_TIME - timedelta(minutes=3),
    instance: str | None = INSTANCE,
    event_id: str = "evt-1",
    deadline: datetime | None = None,
    lifecycle: LifecycleHook | None = None,
    ignore_reason: str | None = None,
    **fields: Any,
) -> Notice:
    """A parsed notice as ``decide`` receives it; an Auto Scaling termination gets a
    lifecycle hook unless one is given."""
    if lifecycle is None and kind is Kind.ASG_TERMINATION:
        lifecycle = LIFECYCLE_HOOK
    return Notice(
        kind=kind,
        event_id=event_id,
        event_time=at,
        instance_id=instance,
        deadline=deadline,
        lifecycle=lifecycle,
        ignore_reason=ignore_reason,
        **fields,
    )

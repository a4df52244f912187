"""AWS event bodies for the benchmark, and SQS batches around them (as Lambda receives them)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.cluster import REGION, Machine

ACCOUNT = "123456789012"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lifeboat-interruptions"

KINDS = (
    "spot-interruption",
    "rebalance-recommendation",
    "scheduled-change",
    "state-change",
    "asg-termination",
)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _envelope(detail_type: str, source: str, resources: list[str], detail: Any) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": _stamp(datetime.now(UTC)),
        "region": REGION,
        "resources": resources,
        "detail": detail,
    }


def _instance_arn(machine: Machine) -> str:
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{machine.instance_id}"


def spot_interruption(machine: Machine) -> dict[str, Any]:
    return _envelope(
        "EC2 Spot Instance Interruption Warning",
        "aws.ec2",
        [_instance_arn(machine)],
        {"instance-id": machine.instance_id, "instance-action": "terminate"},
    )


def rebalance_recommendation(machine: Machine) -> dict[str, Any]:
    return _envelope(
        "EC2 Instance Rebalance Recommendation",
        "aws.ec2",
        [_instance_arn(machine)],
        {"instance-id": machine.instance_id},
    )


def scheduled_change(machine: Machine) -> dict[str, Any]:
    start = (datetime.now(UTC) + timedelta(days=7)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    updated = datetime.now(UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
    code = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
    return _envelope(
        "AWS Health Event",
        "aws.health",
        [machine.instance_id],
        {
            "eventArn": f"arn:aws:health:{REGION}::event/EC2/{code}/{code}_{uuid.uuid4()}",
            "service": "EC2",
            "eventScopeCode": "ACCOUNT_SPECIFIC",
            "statusCode": "upcoming",
            "eventRegion": REGION,
            "eventTypeCode": code,
            "eventTypeCategory": "scheduledChange",
            "startTime": start,
            "endTime": start,
            "lastUpdatedTime": updated,
            "eventDescription": [{"language": "en_US", "latestDescription": "retirement"}],
            "affectedEntities": [
                {
                    "entityValue": machine.instance_id,
                    "lastUpdatedTime": updated,
                    "status": "IMPAIRED",
                }
            ],
            "affectedAccount": ACCOUNT,
        },
    )


def state_change(machine: Machine) -> dict[str, Any]:
    return _envelope(
        "EC2 Instance State-change Notification",
        "aws.ec2",
        [_instance_arn(machine)],
        {"instance-id": machine.instance_id, "state": "stopping"},
    )


def asg_termination(machine: Machine) -> dict[str, Any]:
    group = machine.auto_scaling_group or "eks-system"
    return _envelope(
        "EC2 Instance-terminate Lifecycle Action",
        "aws.autoscaling",
        [
            f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:{uuid.uuid4()}"
            f":autoScalingGroupName/{group}"
        ],
        {
            "Origin": "AutoScalingGroup",
            "Destination": "EC2",
            "LifecycleActionToken": str(uuid.uuid4()),
            "AutoScalingGroupName": group,
            "LifecycleHookName": "lifeboat-drain",
            "EC2InstanceId": machine.instance_id,
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
        },
    )


BUILDERS: dict[str, Callable[[Machine], dict[str, Any]]] = {
    "spot-interruption": spot_interruption,
    "rebalance-recommendation": rebalance_recommendation,
    "scheduled-change": scheduled_change,
    "state-change": state_change,
    "asg-termination": asg_termination,
}


def sqs_record(
    body: dict[str, Any] | str, message_id: str | None = None, receive_count: int = 1
) -> dict[str, Any]:
    """One record of the SQS batch event Lambda receives; ``body`` as sent (JSON text, or
    an object to serialise), a fresh message id unless one is given."""
    text = body if isinstance(body, str) else json.dumps(body)
    now_ms = str(int(datetime.now(UTC).timestamp() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": uuid.uuid4().hex,
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": now_ms,
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": now_ms,
        },
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(text.encode()).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": REGION,
    }


def sqs_batches(
    kind: str, machines: Sequence[Machine], batch_size: int = 10
) -> list[tuple[dict[str, Any], list[Machine]]]:
    """One event per machine, as SQS batch events of ``batch_size`` records."""
    build = BUILDERS[kind]
    batches = []
    for start in range(0, len(machines), batch_size):
        chunk = list(machines[start : start + batch_size])
        batches.append(({"Records": [sqs_record(build(m)) for m in chunk]}, chunk))
    return batches

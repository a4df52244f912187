"""A rotation end to end on AWS's side: ``lifeboat rotate`` puts the request on the bus
(boto3 PutEvents, moto), the stack's RotationRule (read from template.yaml) delivers it to
the queue, and the Lambda's handler takes it from there: the same handler, ledger
(Powertools idempotency on DynamoDB) and wake-ups (EventBridge Scheduler) as AWS's warnings,
acting on the emulated cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from cfnlint.decode import decode_str  # type: ignore[import-untyped]
from moto import mock_aws

from kubemu import Emulator, load_cluster_file
from lifeboat.aws.idempotency import PowertoolsLedger
from lifeboat.aws.scheduler import SchedulerWakeups
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.settings import Settings
from lifeboat.rotation import store
from lifeboat.rotation.model import NodePhase, Phase
from lifeboat.runtime.handler import handle_batch
from lifeboat.wakeup.codec import Task, decode
from lifeboat_local.cli import main
from lifeboat_local.directory import directory_from_objects
from lifeboat_local.rotate import DEFAULT_EVENT_BUS
from tests.support.rotation_rig import EVENTS, LEGACY, ROOT

REGION = "us-east-1"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
GROUP = "lifeboat-schedules"


class FakeContext:
    function_name = "lifeboat-InterruptionFunction"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:lifeboat"
    aws_request_id = "8f5e2c1a-0000-4000-8000-000000000002"

    def get_remaining_time_in_millis(self) -> int:
        return 55_000


@dataclass
class Stack:
    emulator: Emulator
    pipeline: Pipeline
    queue_url: str
    queue_arn: str

    def deliver(self) -> list[dict[str, Any]]:
        """Everything the rule put in the queue, as the Lambda's SQS batch records."""
        sqs = boto3.client("sqs")
        messages = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get(
            "Messages", []
        )
        return [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {},
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": self.queue_arn,
                "awsRegion": REGION,
            }
            for m in messages
        ]

    def handle(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return handle_batch({"Records": records}, FakeContext(), self.pipeline)

    def rotation(self) -> Any:
        kube = KubeApi(self.emulator.api_client())
        stored = store.load(kube, "lifeboat", "legacy-to-karpenter")
        return stored.rotation if stored else None


def rotation_rule() -> dict[str, Any]:
    template, errors = decode_str((ROOT / "template.yaml").read_text())
    assert not errors, errors
    return dict(template["Resources"]["RotationRule"]["Properties"])


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        sqs, events = boto3.client("sqs"), boto3.client("events")
        url = sqs.create_queue(QueueName="lifeboat-queue")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        rule = rotation_rule()
        # The rule lives on the stack's command bus (named by its parameter's default).
        assert rule["EventBusName"] == {"Ref": "CommandEventBus"}
        events.create_event_bus(Name=DEFAULT_EVENT_BUS)
        events.put_rule(
            Name="RotationRule",
            EventBusName=DEFAULT_EVENT_BUS,
            EventPattern=json.dumps(rule["EventPattern"]),
        )
        events.put_targets(
            Rule="RotationRule",
            EventBusName=DEFAULT_EVENT_BUS,
            Targets=[{"Id": "queue", "Arn": arn}],
        )
        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(
            TableName="idempotency",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        scheduler = boto3.client("scheduler")
        scheduler.create_schedule_group(Name=GROUP)
        objects = load_cluster_file(EVENTS / "cluster.yaml")
        with Emulator(objects) as emulator:
            ledger = PowertoolsLedger("idempotency", boto3_client=dynamodb)
            ledger.register_lambda_context(FakeContext())
            pipeline = Pipeline(
                clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=2))),
                directory=directory_from_objects(objects, cluster="prod-a"),
                settings=Settings(clusters=("prod-a",)),
                clock=lambda: NOW,
                wakeups=SchedulerWakeups(
                    scheduler,
                    group=GROUP,
                    role_arn="arn:aws:iam::123456789012:role/lifeboat-scheduler",
                    queue_arn=arn,
                    clock=lambda: NOW,
                ),
                ledger=ledger,
                workers=10,
            )
            yield Stack(emulator, pipeline, url, arn)


def rotate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["rotate", "legacy-to-karpenter", "--cluster-name", "prod-a", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_lifeboat_rotate_to_the_bus_to_the_queue_to_the_handler(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = rotate(capsys, "--node-group", "legacy", "--health-timeout", "900")
    assert code == 0
    assert out.startswith("put Lifeboat Rotation Requested for rotation legacy-to-karpenter")
    records = stack.deliver()
    assert len(records) == 1
    body = json.loads(records[0]["body"])
    assert (body["source"], body["detail"]["healthGate"]) == ("lifeboat", {"timeoutSeconds": 900})

    assert stack.handle(records) == {"batchItemFailures": []}
    rotation = stack.rotation()
    assert rotation.phase is Phase.RUNNING
    assert f"(uid {rotation.uid})" in out  # the uid its commands must name
    assert rotation.node(LEGACY[0]).phase is NodePhase.DRAINING
    node = stack.emulator.get_object("Node", LEGACY[0])
    assert node is not None and node["spec"].get("unschedulable") is True
    # Its next look is a one-time schedule into the queue, like every wake-up.
    scheduler = boto3.client("scheduler")
    names = [s["Name"] for s in scheduler.list_schedules(GroupName=GROUP)["Schedules"]]
    looks = []
    for name in names:
        target = scheduler.get_schedule(Name=name, GroupName=GROUP)["Target"]
        assert target["Arn"] == stack.queue_arn
        looks.append(decode(json.loads(target["Input"])))
    assert Task.ROTATE in {w.task for w in looks}

    # SQS delivers the same message again: Powertools' ledger makes it a no-op.
    requested = len(stack.emulator.objects("Event"))
    assert stack.handle(records) == {"batchItemFailures": []}
    assert len(stack.emulator.objects("Event")) == requested
    assert stack.rotation().node(LEGACY[1]).phase is NodePhase.PENDING

    code, out, _ = rotate(capsys, "--pause", "--uid", stack.rotation().uid)
    assert (code, out.split(" for ")[0]) == (0, "put Lifeboat Rotation Pause Requested")
    assert stack.handle(stack.deliver()) == {"batchItemFailures": []}
    assert stack.rotation().phase is Phase.PAUSED


def test_a_request_for_a_cluster_this_stack_does_not_manage_is_ignored(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    code = main(["rotate", "other", "--cluster-name", "prod-b", "--node-group", "legacy"])
    assert code == 0
    assert stack.handle(stack.deliver()) == {"batchItemFailures": []}
    assert stack.emulator.objects("ConfigMap") == []
    assert all(not n["spec"].get("unschedulable") for n in stack.emulator.objects("Node"))


def test_the_rule_does_not_take_lifeboats_own_notifications(stack: Stack) -> None:
    boto3.client("events").put_events(
        Entries=[
            {
                "Source": "lifeboat",
                "DetailType": "Lifeboat Action Taken",
                "Detail": json.dumps({"rotation": "legacy-to-karpenter"}),
                "EventBusName": DEFAULT_EVENT_BUS,
            }
        ]
    )
    assert stack.deliver() == []


def test_a_command_put_on_the_default_bus_never_reaches_the_queue(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression (issue 23.1): the rule listened on the default bus, so anyone allowed
    events:PutEvents there could rotate nodes; now only the command bus is read."""
    code, out, _ = rotate(capsys, "--node-group", "legacy", "--event-bus", "default")
    assert code == 0 and "on bus default" in out
    assert stack.deliver() == []
    code, out, _ = rotate(capsys, "--node-group", "legacy")
    assert code == 0 and f"on bus {DEFAULT_EVENT_BUS}" in out
    assert len(stack.deliver()) == 1


def test_a_refused_put_is_an_error_naming_the_bus(
    stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = rotate(capsys, "--node-group", "legacy", "--event-bus", "no-such-bus")
    assert code == 1
    assert "bus no-such-bus" in err
    assert stack.deliver() == []

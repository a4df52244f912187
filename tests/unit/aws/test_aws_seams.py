"""The AWS seams of the Lambda, each on moto (or a botocore Stubber where moto has no API):
EventBridge Scheduler wake-ups, the Powertools idempotency ledger on DynamoDB, Auto Scaling
lifecycle actions, the EC2 instance directory, and ``build_service``'s start-up checks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
)
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from lifeboat.aws.idempotency import RECORD_TTL, PowertoolsLedger
from lifeboat.aws.lifecycle import AutoScalingLifecycle
from lifeboat.aws.notify import (
    ACTION,
    CAPACITY_BLOCK_ENDING,
    DETAIL_TYPES,
    FORCED_ACTION,
    GIVE_UP,
    ROTATION_CHANGE,
    EventBridgeNotifier,
)
from lifeboat.aws.redelivery import SqsRedelivery
from lifeboat.aws.scheduler import SchedulerWakeups, schedule_name
from lifeboat.events import parse_message
from lifeboat.events.notice import LifecycleHook, Notice
from lifeboat.flow.split import NOTICES_PER_MESSAGE
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import SettingsError
from lifeboat.runtime.service import BATCH_WORKERS, build_service
from lifeboat.wakeup.codec import Task, Wakeup, decode
from tests.support.aws import ANY_AMI, create_idempotency_table
from tests.support.paths import EVENTS, TEMPLATE

REGION = "us-east-1"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
GROUP = "lifeboat-schedules"
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:lifeboat-queue"
DLQ_ARN = "arn:aws:sqs:us-east-1:123456789012:lifeboat-dlq"
ROLE_ARN = "arn:aws:iam::123456789012:role/lifeboat-scheduler"

pytestmark = pytest.mark.filterwarnings(
    # Outside a Lambda, Powertools cannot tell how long an in-progress record may live.
    "ignore:Couldn't determine the remaining time left:UserWarning"
)


def notice(sample: str = "rebalance-recommendation.json") -> Notice:
    [first, *_] = parse_message((EVENTS / sample).read_text(), received_at=NOW)
    return first


# --- EventBridge Scheduler ------------------------------------------------------------------


@pytest.fixture
def scheduler(aws: None) -> Any:
    client = boto3.client("scheduler")
    client.create_schedule_group(Name=GROUP)
    return client


def wakeups_on(client: Any, now: datetime = NOW) -> SchedulerWakeups:
    return SchedulerWakeups(
        client,
        group=GROUP,
        role_arn=ROLE_ARN,
        queue_arn=QUEUE_ARN,
        dead_letter_arn=DLQ_ARN,
        clock=lambda: now,
    )


def schedules(client: Any) -> list[dict[str, Any]]:
    listed = client.list_schedules(GroupName=GROUP)["Schedules"]
    return [client.get_schedule(Name=s["Name"], GroupName=GROUP) for s in listed]


def test_a_wakeup_becomes_a_one_time_schedule_into_the_queue(scheduler: Any) -> None:
    wakeup = Wakeup(Task.DECIDE, notice(), datetime(2026, 12, 1, 17, 0, tzinfo=UTC))
    wakeups_on(scheduler).schedule(wakeup)

    [schedule] = schedules(scheduler)
    assert schedule["Name"] == schedule_name(wakeup)
    assert schedule["Name"].startswith("lifeboat-decide-") and len(schedule["Name"]) <= 64
    assert schedule["ScheduleExpression"] == "at(2026-12-01T17:00:00)"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["Target"]["Arn"] == QUEUE_ARN
    assert schedule["Target"]["RoleArn"] == ROLE_ARN
    assert decode(json.loads(schedule["Target"]["Input"])) == wakeup
    if "ActionAfterCompletion" in schedule:  # moto 5 returns it; older versions did not
        assert schedule["ActionAfterCompletion"] == "DELETE"


def test_a_wakeup_scheduler_cannot_deliver_goes_to_the_dead_letter_queue(scheduler: Any) -> None:
    """Regression: schedules had no DeadLetterConfig, so a wake-up EventBridge Scheduler
    could not deliver (after its day of retries) was dropped silently. Now it lands in
    Lifeboat's DLQ, where the alarm fires; build_service wires the stack's DLQ in.

    Relies on moto storing the target as given (it delivers nothing): that an undeliverable
    target event goes to DeadLetterConfig.Arn after RetryPolicy is Scheduler's documented
    behaviour, and the template lets SchedulerRole send to the DLQ (test_template)."""
    wakeup = Wakeup(Task.CONTINUE_DRAIN, notice(), NOW + timedelta(minutes=1))
    wakeups_on(scheduler).schedule(wakeup)
    [schedule] = schedules(scheduler)
    assert schedule["Target"]["DeadLetterConfig"] == {"Arn": DLQ_ARN}
    assert schedule["Target"]["RetryPolicy"]["MaximumEventAgeInSeconds"] == 86400

    built = build_service(full_env() | {"LIFEBOAT_SCHEDULE_GROUP": GROUP})
    sink = built.pipeline.wakeups
    assert sink is not None
    assert isinstance(sink, SchedulerWakeups)
    sink._client = scheduler  # the stack's wiring, on moto's scheduler
    later = Wakeup(Task.DECIDE, notice(), NOW + timedelta(hours=3))
    sink.schedule(later)
    target = scheduler.get_schedule(Name=schedule_name(later), GroupName=GROUP)["Target"]
    assert target["DeadLetterConfig"] == {"Arn": full_env()["LIFEBOAT_DEAD_LETTER_QUEUE_ARN"]}


def test_schedule_names_are_deterministic_and_distinct_per_wakeup() -> None:
    first = Wakeup(Task.DECIDE, notice(), NOW + timedelta(hours=1))
    assert schedule_name(first) == schedule_name(
        Wakeup(Task.DECIDE, notice(), NOW + timedelta(hours=1))
    )
    others = {
        schedule_name(first.again(NOW + timedelta(hours=2))),
        schedule_name(Wakeup(Task.FINISH_REPLACEMENT, notice(), NOW + timedelta(hours=1))),
        schedule_name(Wakeup(Task.DECIDE, notice("spot-interruption.json"), first.due)),
    }
    assert schedule_name(first) not in others and len(others) == 3


def test_scheduling_the_same_wakeup_twice_is_not_an_error(scheduler: Any) -> None:
    wakeup = Wakeup(Task.DECIDE, notice(), NOW + timedelta(hours=1))
    sink = wakeups_on(scheduler)
    sink.schedule(wakeup)
    sink.schedule(wakeup)  # a redelivered message
    assert [s["Name"] for s in schedules(scheduler)] == [schedule_name(wakeup)]


def test_a_conflict_from_scheduler_means_already_scheduled() -> None:
    """AWS answers ConflictException for an existing name (moto overwrites instead)."""
    client = boto3.client(
        "scheduler", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        stub.add_client_error(
            "create_schedule", service_error_code="ConflictException", http_status_code=409
        )
        wakeups_on(client).schedule(Wakeup(Task.DECIDE, notice(), NOW + timedelta(hours=1)))
        stub.add_client_error(
            "create_schedule", service_error_code="ValidationException", http_status_code=400
        )
        with pytest.raises(ClientError, match="ValidationException"):
            wakeups_on(client).schedule(Wakeup(Task.DECIDE, notice(), NOW + timedelta(hours=2)))


@pytest.mark.parametrize("due", [NOW - timedelta(hours=1), NOW, NOW + timedelta(seconds=20)])
def test_a_due_time_in_the_past_or_too_near_fires_a_minute_from_now(
    scheduler: Any, due: datetime
) -> None:
    wakeup = Wakeup(
        Task.FINISH_REPLACEMENT,
        notice(),
        due,
        replacement="general-0123456789",
        old_nodeclaim="general-7xkqz",
        old_nodeclaim_uid="0b7e6a1c-5d2f-4c3a-9e1b-000000000101",
    )
    wakeups_on(scheduler).schedule(wakeup)
    [schedule] = schedules(scheduler)
    assert schedule["ScheduleExpression"] == "at(2026-12-01T14:06:00)"
    # The message still carries the wake-up as asked; only its delivery moved.
    assert decode(json.loads(schedule["Target"]["Input"])).due == due


def test_a_due_time_in_another_offset_is_scheduled_at_the_same_instant_in_utc(
    scheduler: Any,
) -> None:
    due = datetime(2026, 12, 1, 19, 0, tzinfo=timezone(timedelta(hours=2)))  # 17:00 UTC
    wakeups_on(scheduler).schedule(Wakeup(Task.DECIDE, notice(), due))
    [schedule] = schedules(scheduler)
    assert schedule["ScheduleExpression"] == "at(2026-12-01T17:00:00)"


# --- Powertools idempotency on DynamoDB -----------------------------------------------------


@pytest.fixture
def ledger(aws: None) -> tuple[PowertoolsLedger, Any]:
    dynamodb = boto3.client("dynamodb")
    create_idempotency_table(dynamodb, "idempotency")
    return PowertoolsLedger("idempotency", boto3_client=dynamodb), dynamodb


REPORT = Report("ev-1", "spot-interruption", Outcome.ACTED, "done", instance_id="i-1")


def test_the_ledger_runs_a_key_once(ledger: tuple[PowertoolsLedger, Any]) -> None:
    store, dynamodb = ledger
    runs: list[str] = []

    def handle() -> Report:
        runs.append("ran")
        return REPORT

    assert store.once("ev-1#i-1", handle) == REPORT
    assert store.once("ev-1#i-1", handle) is None
    assert store.once("ev-1#i-2", handle) == REPORT  # another instance of the same event
    assert runs == ["ran", "ran"]
    items = dynamodb.scan(TableName="idempotency")["Items"]
    assert len(items) == 2
    assert {item["status"]["S"] for item in items} == {"COMPLETED"}
    # Records expire (TTL attribute "expiration", as the table's TimeToLiveSpecification).
    soonest = min(int(item["expiration"]["N"]) for item in items)
    assert (
        soonest > datetime.now(UTC).timestamp() + (RECORD_TTL - timedelta(days=1)).total_seconds()
    )


def test_a_raising_handle_leaves_no_record_so_the_retry_runs(
    ledger: tuple[PowertoolsLedger, Any],
) -> None:
    store, dynamodb = ledger

    def boom() -> Report:
        raise RuntimeError("api server down")

    with pytest.raises(RuntimeError, match="api server down"):
        store.once("ev-1#i-1", boom)
    assert dynamodb.scan(TableName="idempotency")["Items"] == []
    assert store.once("ev-1#i-1", lambda: REPORT) == REPORT


def test_a_concurrent_duplicate_is_an_error_so_sqs_retries_it(
    ledger: tuple[PowertoolsLedger, Any],
) -> None:
    store, _ = ledger
    inner: list[BaseException] = []

    def handle() -> Report:
        try:  # the same key arrives while this one is still in progress
            store.once("ev-1#i-1", lambda: REPORT)
        except IdempotencyAlreadyInProgressError as error:
            inner.append(error)
        return REPORT

    assert store.once("ev-1#i-1", handle) == REPORT
    assert len(inner) == 1


# --- Auto Scaling lifecycle actions ---------------------------------------------------------

HOOK = LifecycleHook(
    auto_scaling_group="eks-system-20260101-1a2b3c4d",
    hook_name="lifeboat-drain",
    action_token="5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
    instance_id="i-0a1b2c3d4e5f60006",
)
HOOK_PARAMS = {
    "LifecycleHookName": "lifeboat-drain",
    "AutoScalingGroupName": "eks-system-20260101-1a2b3c4d",
    "LifecycleActionToken": "5b8e2f4a-9c1d-4e7b-8a3f-6d0c2e9b1a75",
    "InstanceId": "i-0a1b2c3d4e5f60006",
}


@pytest.fixture
def autoscaling(aws: None) -> Iterator[tuple[AutoScalingLifecycle, Stubber]]:
    client = boto3.client("autoscaling")
    with Stubber(client) as stub:
        yield AutoScalingLifecycle(client), stub
        stub.assert_no_pending_responses()


def test_complete_and_heartbeat_send_the_hooks_parameters(
    autoscaling: tuple[AutoScalingLifecycle, Stubber],
) -> None:
    lifecycle, stub = autoscaling
    stub.add_response(
        "complete_lifecycle_action", {}, {**HOOK_PARAMS, "LifecycleActionResult": "CONTINUE"}
    )
    stub.add_response("record_lifecycle_action_heartbeat", {}, HOOK_PARAMS)
    stub.add_response(
        "complete_lifecycle_action", {}, {**HOOK_PARAMS, "LifecycleActionResult": "ABANDON"}
    )
    lifecycle.complete(HOOK)
    lifecycle.heartbeat(HOOK)
    lifecycle.complete(HOOK, "ABANDON")


def test_the_hook_from_the_sample_event_is_what_auto_scaling_needs() -> None:
    hook = notice("asg-termination.json").lifecycle
    assert hook is not None
    assert (hook.auto_scaling_group, hook.hook_name, hook.action_token, hook.instance_id) == (
        HOOK.auto_scaling_group,
        HOOK.hook_name,
        HOOK.action_token,
        HOOK.instance_id,
    )


NO_ACTIVE = "No active Lifecycle Action found with instance ID i-0a1b2c3d4e5f60006"


@pytest.mark.parametrize(
    "operation", ["complete_lifecycle_action", "record_lifecycle_action_heartbeat"]
)
def test_no_active_lifecycle_action_is_already_done(
    autoscaling: tuple[AutoScalingLifecycle, Stubber], operation: str
) -> None:
    lifecycle, stub = autoscaling
    stub.add_client_error(
        operation,
        service_error_code="ValidationError",
        service_message=NO_ACTIVE,
        http_status_code=400,
    )
    if operation == "complete_lifecycle_action":
        lifecycle.complete(HOOK)
    else:
        lifecycle.heartbeat(HOOK)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ValidationError", "1 validation error detected: LifecycleHookName"),
        ("Throttling", "Rate exceeded"),
        ("AccessDenied", "not authorized to perform autoscaling:CompleteLifecycleAction"),
    ],
)
def test_other_auto_scaling_errors_are_raised(
    autoscaling: tuple[AutoScalingLifecycle, Stubber], code: str, message: str
) -> None:
    lifecycle, stub = autoscaling
    stub.add_client_error(
        "complete_lifecycle_action",
        service_error_code=code,
        service_message=message,
        http_status_code=400,
    )
    stub.add_client_error(
        "record_lifecycle_action_heartbeat",
        service_error_code=code,
        service_message=message,
        http_status_code=400,
    )
    with pytest.raises(ClientError, match=code):
        lifecycle.complete(HOOK)
    with pytest.raises(ClientError, match=code):
        lifecycle.heartbeat(HOOK)


# --- EC2 instance directory -----------------------------------------------------------------


def test_directory_describes_a_batch_in_one_call_and_skips_unknown_ids(aws: None) -> None:
    ec2 = boto3.client("ec2")
    image = ANY_AMI
    tags = {
        "eks:cluster-name": "prod",
        "karpenter.sh/nodeclaim": "general-7xkqz",
        "karpenter.sh/nodepool": "general",
    }
    launched = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType="m5.large",
        Placement={"AvailabilityZone": "us-east-1b"},
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ],
    )["Instances"][0]
    other = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": "kubernetes.io/cluster/staging", "Value": "owned"},
                    {"Key": "aws:autoscaling:groupName", "Value": "eks-system-1"},
                ],
            }
        ],
    )["Instances"][0]
    calls: list[dict[str, Any]] = []
    ec2.meta.events.register(
        "provide-client-params.ec2.DescribeInstances",
        lambda params, **_: calls.append(dict(params)),
    )
    unknown = "i-0123456789abcdef0"
    directory = Ec2InstanceDirectory(ec2)

    found = directory.describe([launched["InstanceId"], unknown, other["InstanceId"]])

    assert len(calls) == 1
    assert set(found) == {launched["InstanceId"], other["InstanceId"]}
    info = found[launched["InstanceId"]]
    assert info.node_name == launched["PrivateDnsName"] and info.node_name
    assert (info.cluster, info.nodeclaim, info.nodepool) == ("prod", "general-7xkqz", "general")
    assert (info.zone, info.instance_type) == ("us-east-1b", "m5.large")
    assert info.image_id == image  # what a rotation selecting nodes by AMI compares
    assert info.tags == tags
    assert info.auto_scaling_group is None
    staging = found[other["InstanceId"]]
    assert (staging.cluster, staging.auto_scaling_group, staging.nodeclaim) == (
        "staging",
        "eks-system-1",
        None,
    )

    assert directory.describe([unknown]) == {}
    assert directory.describe([]) == {}
    assert len(calls) == 2  # the empty batch asked nothing


# --- build_service --------------------------------------------------------------------------


def full_env() -> dict[str, str]:
    return {
        "LIFEBOAT_CLUSTERS": "prod,staging",
        "LIFEBOAT_DRY_RUN": "false",
        "LIFEBOAT_TAINT_EFFECT": "NoSchedule",
        "LIFEBOAT_SCHEDULED_CHANGE_LEAD_SECONDS": "1800",
        "LIFEBOAT_KIND_ACTIONS": "",
        "LIFEBOAT_MANAGED_TAG": "",
        "LIFEBOAT_UNKNOWN_INSTANCE_GRACE_SECONDS": "0",
        "LIFEBOAT_LEASE_NAMESPACE": "lifeboat",
        "LIFEBOAT_ACCOUNT_ID": "123456789012",
        "LIFEBOAT_REGION": "eu-west-1",
        "LIFEBOAT_IDEMPOTENCY_TABLE": "idempotency",
        "LIFEBOAT_SCHEDULE_GROUP": GROUP,
        "LIFEBOAT_SCHEDULER_ROLE_ARN": ROLE_ARN,
        "LIFEBOAT_QUEUE_ARN": QUEUE_ARN,
        "LIFEBOAT_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/lifeboat-queue",
        "LIFEBOAT_DEAD_LETTER_QUEUE_ARN": "arn:aws:sqs:eu-west-1:123456789012:lifeboat-dlq",
        "LIFEBOAT_NOTIFICATION_BUS": "default",
        "AWS_LAMBDA_FUNCTION_NAME": "lifeboat-fn",
    }


def test_build_service_assembles_the_aws_pipeline(aws: None) -> None:
    from lifeboat.aws.scheduler import SchedulerWakeups as Wakeups

    service = build_service(full_env())
    pipeline = service.pipeline
    assert service.settings.clusters == ("prod", "staging")
    assert isinstance(pipeline.ledger, PowertoolsLedger)
    assert isinstance(pipeline.wakeups, Wakeups)
    assert isinstance(pipeline.directory, Ec2InstanceDirectory)
    assert isinstance(pipeline.lifecycle, AutoScalingLifecycle)
    assert pipeline.workers == BATCH_WORKERS and pipeline.holder == "lifeboat-fn"
    # A Health event naming hundreds of instances is split (lifeboat.flow.split).
    assert pipeline.notices_per_message == NOTICES_PER_MESSAGE
    assert pipeline.clock().tzinfo is not None
    # Clients go to the stack's region (LIFEBOAT_REGION), not merely the session's.
    assert pipeline.directory._ec2.meta.region_name == "eu-west-1"
    assert isinstance(service.notifier, EventBridgeNotifier)
    assert isinstance(service.redelivery, SqsRedelivery)
    assert build_service(full_env() | {"LIFEBOAT_NOTIFICATION_BUS": ""}).notifier is None


def test_an_empty_cluster_list_is_refused_at_start_up(aws: None) -> None:
    env = full_env() | {"LIFEBOAT_CLUSTERS": " , "}
    with pytest.raises(SettingsError, match="LIFEBOAT_CLUSTERS"):
        build_service(env)


@pytest.mark.parametrize(
    "name",
    [
        "LIFEBOAT_IDEMPOTENCY_TABLE",
        "LIFEBOAT_SCHEDULE_GROUP",
        "LIFEBOAT_SCHEDULER_ROLE_ARN",
        "LIFEBOAT_QUEUE_ARN",
        "LIFEBOAT_QUEUE_URL",
        "LIFEBOAT_DEAD_LETTER_QUEUE_ARN",
    ],
)
@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_required_variable_is_named(aws: None, name: str, value: str | None) -> None:
    env = full_env()
    if value is None:
        del env[name]
    else:
        env[name] = value
    with pytest.raises(SettingsError, match=name):
        build_service(env)


def test_an_invalid_setting_is_named(aws: None) -> None:
    with pytest.raises(SettingsError, match="LIFEBOAT_TAINT_EFFECT"):
        build_service(full_env() | {"LIFEBOAT_TAINT_EFFECT": "NoWay"})


def test_no_region_anywhere_is_a_settings_error(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    env = full_env()
    del env["LIFEBOAT_REGION"]
    with pytest.raises(SettingsError, match="LIFEBOAT_REGION"):
        build_service(env)


# --- notifications: EventBridge PutEvents ---------------------------------------------------


def _notification_rule_pattern() -> dict[str, Any]:
    """The pattern of template.yaml's optional notification rule."""
    from cfnlint.decode import decode_str  # type: ignore[import-untyped]

    template, errors = decode_str(TEMPLATE.read_text())
    assert not errors, errors
    pattern: dict[str, Any] = json.loads(
        json.dumps(template["Resources"]["NotificationRule"]["Properties"]["EventPattern"])
    )
    return pattern


def _reports(count: int, **fields: Any) -> list[Report]:
    return [
        Report(
            f"e-{i}",
            "spot-interruption",
            Outcome.ACTED,
            "replacing",
            instance_id=f"i-{i:017x}",
            node=f"node-{i}",
            nodepool="general",
            cluster="prod",
            actions=({"type": "taint", "key": "k", "effect": "NoSchedule"},),
            **fields,
        )
        for i in range(count)
    ]


def _routed_queue(events: Any, sqs: Any, name: str, pattern: dict[str, Any]) -> str:
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(Name=name, EventPattern=json.dumps(pattern))
    events.put_targets(Rule=name, Targets=[{"Id": "q", "Arn": arn}])
    return str(url)


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    received = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        received += [json.loads(m["Body"]) for m in batch]
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
            ],
        )
    return received


def test_actions_forced_actions_and_give_ups_reach_rule_routed_queues(aws: None) -> None:
    """What operators' rules receive: EventBridge (moto) routes Lifeboat's events on the
    default bus. A rule on the source alone gets all four detail-types (one per kind of
    outcome, and a rotation's checkpoint; nothing for deferrals, ignores or rejections);
    template.yaml's notification rule gets the forced actions, give-ups and rotation
    changes. The detail is the decision."""
    events, sqs = boto3.client("events"), boto3.client("sqs")
    everything = _routed_queue(events, sqs, "all-lifeboat", {"source": ["lifeboat"]})
    topic_rule = _routed_queue(events, sqs, "template-rule", _notification_rule_pattern())
    acted = _reports(1)[0]
    forced = replace(acted, event_id="e-forced", forced=True)
    gave_up = Report("e-up", "rebalance-recommendation", Outcome.IGNORED, "giving up", gave_up=True)
    checkpoint = Report(
        "e-rot", "rotation", Outcome.ACTED, "checkpoint", rotation_change="RotationCheckpoint"
    )
    quiet = [
        Report("e-d", "rebalance-recommendation", Outcome.DEFERRED, "waiting"),
        Report("e-i", "state-change", Outcome.IGNORED, "not ours"),
        Report.rejected("detail.instance-id: field required"),
        replace(acted, event_id="e-no-action", actions=()),  # acted with nothing done
    ]
    # A node of an ending Capacity Block (issue 37): its action, and the block's ending.
    block = replace(
        acted,
        event_id="e-block",
        kind="capacity-block-expiry",
        deadline=datetime(2026, 12, 1, 14, 15, tzinfo=UTC),
        reservation_id="cr-0b1c2d3e4f5a60001",
    )
    ids = ["m-1", "m-2", "m-3", "m-4", "m-5", "m-6", "m-7", "m-8", "m-9"]
    published = [acted, *quiet, forced, gave_up, checkpoint, block]
    assert EventBridgeNotifier(events).publish(published, message_ids=ids) == 0

    received = _drain(sqs, everything)
    by_type: dict[str, Any] = {}
    for event in received:  # the first of each: the block's own action comes last
        by_type.setdefault(event["detail-type"], event)
    assert len(received) == 6 and sorted(by_type) == sorted(DETAIL_TYPES)
    ending = by_type[CAPACITY_BLOCK_ENDING]["detail"]
    assert ending["capacity_reservation_id"] == "cr-0b1c2d3e4f5a60001"
    assert ending["termination_starts"] == "2026-12-01T14:15:00+00:00"
    assert {event["source"] for event in received} == {"lifeboat"}
    action = by_type[ACTION]["detail"]
    assert action["event_id"] == acted.event_id and action["cluster"] == "prod"
    assert action["actions"] == [{"type": "taint", "key": "k", "effect": "NoSchedule"}]
    assert action["message_id"] == "m-1" and action["forced"] is False
    assert by_type[FORCED_ACTION]["detail"]["forced"] is True
    assert by_type[GIVE_UP]["detail"]["reason"] == "giving up"
    assert by_type[ROTATION_CHANGE]["detail"]["rotation_change"] == "RotationCheckpoint"
    routed = sorted(event["detail-type"] for event in _drain(sqs, topic_rule))
    assert routed == sorted([FORCED_ACTION, GIVE_UP, ROTATION_CHANGE, CAPACITY_BLOCK_ENDING])


def test_notifications_go_ten_to_a_put_events_call(aws: None) -> None:
    events = boto3.client("events")
    calls: list[int] = []
    events.meta.events.register(
        "before-parameter-build.events.PutEvents",
        lambda params, **_: calls.append(len(params["Entries"])),
    )
    assert EventBridgeNotifier(events).publish(_reports(23)) == 0
    assert calls == [10, 10, 3]


def test_a_refused_or_failed_notification_is_counted_never_raised() -> None:
    client = boto3.client(
        "events", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    notifier = EventBridgeNotifier(client)
    with Stubber(client) as stub:
        stub.add_response(
            "put_events",
            {
                "FailedEntryCount": 1,
                "Entries": [
                    {"EventId": "1"},
                    {"ErrorCode": "ThrottlingException", "ErrorMessage": "x"},
                ],
            },
        )
        assert notifier.publish(_reports(2)) == 1
        stub.add_client_error("put_events", service_error_code="AccessDeniedException")
        assert notifier.publish(_reports(3)) == 3


# --- redelivery: sqs:ChangeMessageVisibility ----------------------------------------------------


def test_redelivery_changes_the_visibility_of_the_received_message(aws: None) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "380"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="{}")
    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    assert sqs.receive_message(QueueUrl=url).get("Messages") is None  # in flight for 380 s
    assert SqsRedelivery(sqs, url).redeliver_in(message["ReceiptHandle"], 0) is True
    assert [m["MessageId"] for m in sqs.receive_message(QueueUrl=url)["Messages"]] == [
        message["MessageId"]
    ]
    # A stale receipt handle is reported, not raised: the queue's own timeout still applies.
    assert SqsRedelivery(sqs, url).redeliver_in("not-a-receipt-handle", 0) is False


def test_with_the_sweep_off_a_sweep_request_on_the_queue_sweeps_nothing(aws: None) -> None:
    """Review of issue 33.2: with ``InstanceStatusSweepMinutes=0`` (maintenance given back to
    Karpenter) the function's ``LIFEBOAT_SWEEP_SCHEDULE_ARN`` is empty, which the pipeline
    read as "any schedule": a sweep request left on the queue, or sent by anyone, made
    Lifeboat ask EC2 and act beside Karpenter's poller. Off now means no EC2 status reader."""
    from lifeboat.aws.sweep import Ec2InstanceStatuses, sweep_request

    off = build_service(full_env()).pipeline
    assert off.statuses is None
    [result] = off.process([json.dumps(sweep_request("left-over", "2026-12-01T18:00:00Z"))])
    [report] = result.reports
    assert report.outcome == "ignored" and "sweep is off" in report.reason
    arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule/lifeboat-group/sweep"
    on = build_service(full_env() | {"LIFEBOAT_SWEEP_SCHEDULE_ARN": arn}).pipeline
    assert isinstance(on.statuses, Ec2InstanceStatuses) and on.sweep_schedule == arn

"""The AWS seams of the Lambda, each on moto (or a botocore Stubber where moto has no API):
EventBridge Scheduler wake-ups, the Powertools idempotency ledger on DynamoDB, Auto Scaling
lifecycle actions, the EC2 instance directory, and ``build_service``'s start-up checks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
)
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from lifeboat.events import parse_message
from lifeboat.events.notice import LifecycleHook, Notice
from lifeboat.idempotency import RECORD_TTL, PowertoolsLedger
from lifeboat.instances import Ec2InstanceDirectory
from lifeboat.lifecycle import AutoScalingLifecycle
from lifeboat.report import Outcome, Report
from lifeboat.scheduler import SchedulerWakeups, schedule_name
from lifeboat.service import BATCH_WORKERS, build_service
from lifeboat.settings import SettingsError
from lifeboat.wakeup import Task, Wakeup, decode

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
REGION = "us-east-1"
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
GROUP = "lifeboat-schedules"
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:lifeboat-queue"
ROLE_ARN = "arn:aws:iam::123456789012:role/lifeboat-scheduler"

pytestmark = pytest.mark.filterwarnings(
    # Outside a Lambda, Powertools cannot tell how long an in-progress record may live.
    "ignore:Couldn't determine the remaining time left:UserWarning"
)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        # Nothing of the developer's own AWS configuration leaks in.
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield


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
        client, group=GROUP, role_arn=ROLE_ARN, queue_arn=QUEUE_ARN, clock=lambda: now
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
    dynamodb.create_table(
        TableName="idempotency",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
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
    image = "ami-12c6146b"  # one of moto's built-in images (listing them all is slow)
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
        "LIFEBOAT_REPLACEMENT_TIMEOUT_SECONDS": "900",
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
        "AWS_LAMBDA_FUNCTION_NAME": "lifeboat-fn",
    }


def test_build_service_assembles_the_aws_pipeline(aws: None) -> None:
    from lifeboat.scheduler import SchedulerWakeups as Wakeups

    service = build_service(full_env())
    pipeline = service.pipeline
    assert service.settings.clusters == ("prod", "staging")
    assert isinstance(pipeline.ledger, PowertoolsLedger)
    assert isinstance(pipeline.wakeups, Wakeups)
    assert isinstance(pipeline.directory, Ec2InstanceDirectory)
    assert isinstance(pipeline.lifecycle, AutoScalingLifecycle)
    assert pipeline.workers == BATCH_WORKERS and pipeline.holder == "lifeboat-fn"
    assert pipeline.clock().tzinfo is not None
    # Clients go to the stack's region (LIFEBOAT_REGION), not merely the session's.
    assert pipeline.directory._ec2.meta.region_name == "eu-west-1"


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

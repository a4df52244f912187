"""Structural promises of template.yaml (and deploy/rbac.yaml), checked without AWS.

cfn-lint validates the template against the CloudFormation and SAM schemas; the tests below
check what a schema cannot: that every rule feeds the queue, that the queue only trusts those
rules, that no Allow statement uses a wildcard action, that each rule's pattern matches the
sample event of its kind (and only that one), and that every setting the code reads is set.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from cfnlint.api import lint_file  # type: ignore[import-untyped]  # cfn-lint is untyped
from cfnlint.decode import decode_str  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
EVENTS = ROOT / "events"
SETTINGS = ROOT / "layers" / "lifeboat" / "lifeboat" / "settings.py"

# Rule logical id -> sample event of its kind.
RULE_SAMPLES = {
    "SpotInterruptionRule": "spot-interruption.json",
    "RebalanceRecommendationRule": "rebalance-recommendation.json",
    "StateChangeRule": "state-change.json",
    "ScheduledChangeRule": "scheduled-change.json",
    "AsgTerminationRule": "asg-termination.json",
    "CapacityReservationInterruptionRule": "capacity-reservation-interruption.json",
}

# Actions whose only valid Resource is "*" (no resource-level permissions).
STAR_RESOURCE_ACTIONS = {
    "ec2:DescribeInstances",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
}

# Infrastructure the function needs to find; not operator settings, so not in settings.py.
INFRA_ENV = {
    "LIFEBOAT_IDEMPOTENCY_TABLE",
    "LIFEBOAT_SCHEDULE_GROUP",
    "LIFEBOAT_SCHEDULER_ROLE_ARN",
    "LIFEBOAT_QUEUE_ARN",
    "LIFEBOAT_QUEUE_URL",
}


@cache
def _template() -> dict[str, Any]:
    template, errors = decode_str(TEMPLATE.read_text())
    assert not errors, errors
    assert template is not None
    return dict(template)


def _resources() -> dict[str, Any]:
    """Top-level resources plus those inside Fn::ForEach loops (by their templated ids)."""
    resources: dict[str, Any] = {}
    for logical_id, resource in _template()["Resources"].items():
        if logical_id.startswith("Fn::ForEach::"):
            resources.update(resource[2])
        else:
            resources[logical_id] = resource
    return resources


def _of_type(kind: str) -> dict[str, Any]:
    return {k: v for k, v in _resources().items() if v["Type"] == kind}


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _policy_documents() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every IAM policy document in the template, named by where it sits."""

    def walk(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("PolicyDocument", "AssumeRolePolicyDocument") and isinstance(
                    value, dict
                ):
                    yield f"{where}.{key}", value
                else:
                    yield from walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for index, item in enumerate(node):
                yield from walk(item, f"{where}[{index}]")

    yield from walk(_template()["Resources"], "Resources")


def _statements() -> Iterator[tuple[str, dict[str, Any]]]:
    for where, document in _policy_documents():
        for statement in _as_list(document["Statement"]):
            yield where, statement


def _rule_arns() -> list[dict[str, Any]]:
    return [{"Fn::GetAtt": [rule, "Arn"]} for rule in RULE_SAMPLES]


# --- lint -----------------------------------------------------------------------------------


def test_cfn_lint_reports_no_errors_or_warnings() -> None:
    matches = lint_file(TEMPLATE)
    assert [f"{m.rule.id} line {m.linenumber}: {m.message}" for m in matches] == []


# --- rules and queue ------------------------------------------------------------------------


def test_there_is_one_rule_per_kind() -> None:
    assert set(_of_type("AWS::Events::Rule")) == set(RULE_SAMPLES)


@pytest.mark.parametrize("rule", sorted(RULE_SAMPLES))
def test_every_rule_targets_the_queue(rule: str) -> None:
    properties = _resources()[rule]["Properties"]
    assert properties["State"] == "ENABLED"
    targets = properties["Targets"]
    assert len(targets) == 1
    assert targets[0]["Arn"] == {"Fn::GetAtt": ["Queue", "Arn"]}
    # Failed deliveries land in the DLQ (and raise its alarm) instead of vanishing.
    assert targets[0]["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}


@pytest.mark.parametrize(
    ("policy", "queue"), [("QueuePolicy", "Queue"), ("DeadLetterQueuePolicy", "DeadLetterQueue")]
)
def test_queue_policy_trusts_only_the_rules_and_denies_plain_http(policy: str, queue: str) -> None:
    properties = _resources()[policy]["Properties"]
    assert properties["Queues"] == [{"Ref": queue}]
    statements = _as_list(properties["PolicyDocument"]["Statement"])

    allows = [s for s in statements if s["Effect"] == "Allow"]
    assert len(allows) == 1
    allow = allows[0]
    assert allow["Principal"] == {"Service": "events.amazonaws.com"}
    assert _as_list(allow["Action"]) == ["sqs:SendMessage"]
    assert allow["Resource"] == {"Fn::GetAtt": [queue, "Arn"]}
    source_arns = allow["Condition"]["ArnEquals"]["aws:SourceArn"]
    assert sorted(map(json.dumps, source_arns)) == sorted(map(json.dumps, _rule_arns()))

    denies = [s for s in statements if s["Effect"] == "Deny"]
    assert len(denies) == 1
    assert denies[0]["Principal"] == "*"
    assert denies[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_queues_are_encrypted_and_redrive_to_the_dlq() -> None:
    resources = _resources()
    queue = resources["Queue"]["Properties"]
    dlq = resources["DeadLetterQueue"]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert dlq["SqsManagedSseEnabled"] is True
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
        "maxReceiveCount": {"Ref": "MaxReceiveCount"},
    }
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    # Expiry counts from the original enqueue time: the DLQ must keep messages longer.
    assert dlq["MessageRetentionPeriod"] > queue["MessageRetentionPeriod"]


def test_visibility_timeout_covers_six_function_timeouts_plus_batching_window() -> None:
    function = _resources()["InterruptionFunction"]["Properties"]
    window = _template()["Parameters"]["MaximumBatchingWindowInSeconds"]["MaxValue"]
    visibility = _resources()["Queue"]["Properties"]["VisibilityTimeout"]
    assert visibility >= 6 * function["Timeout"] + window


# --- function ----------------------------------------------------------------------------------


def test_function_shape() -> None:
    function = _resources()["InterruptionFunction"]
    properties = function["Properties"]
    assert function["Type"] == "AWS::Serverless::Function"
    assert properties["CodeUri"] == "functions/interruption/"
    assert properties["Handler"] == "app.lambda_handler"
    assert properties["Runtime"] == "python3.13"
    assert properties["Architectures"] == ["arm64"]
    assert properties["Layers"] == [{"Ref": "LifeboatLayer"}]
    assert properties["Tracing"] == "Active"
    assert function["Metadata"]["BuildMethod"] == "makefile"
    event = properties["Events"]["Queue"]
    assert event["Type"] == "SQS"
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["Queue", "Arn"]}
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert event["Properties"]["ScalingConfig"] == {
        "MaximumConcurrency": {"Ref": "MaximumConcurrency"}
    }

    layer = _resources()["LifeboatLayer"]
    assert layer["Properties"]["ContentUri"] == "layers/lifeboat/"
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"


def test_every_setting_the_code_reads_is_set_by_the_template() -> None:
    read = set(re.findall(r"\"(LIFEBOAT_[A-Z_]+)\"", SETTINGS.read_text()))
    assert read, "settings.py no longer names its variables; update this test"
    variables = _resources()["InterruptionFunction"]["Properties"]["Environment"]["Variables"]
    set_by_template = {name for name in variables if name.startswith("LIFEBOAT_")}
    assert read - set_by_template == set(), "settings read but never set by the template"
    assert set_by_template - read - INFRA_ENV == set(), "template sets variables nothing reads"
    assert set_by_template >= INFRA_ENV
    assert variables["POWERTOOLS_SERVICE_NAME"] == "lifeboat"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "Lifeboat"


# --- IAM ----------------------------------------------------------------------------------------


def test_no_allow_statement_has_a_wildcard_action() -> None:
    offenders = [
        (where, action)
        for where, statement in _statements()
        if statement["Effect"] == "Allow"
        for action in _as_list(statement.get("Action", []))
        if "*" in action
    ]
    assert offenders == []
    # The only wildcards at all are the transport-security denies on the queues.
    denied = [
        action
        for _, statement in _statements()
        if statement["Effect"] == "Deny"
        for action in _as_list(statement["Action"])
    ]
    assert denied == ["sqs:*", "sqs:*"]


def test_star_resources_only_where_iam_offers_nothing_narrower() -> None:
    for where, statement in _statements():
        if statement["Effect"] == "Allow" and statement.get("Resource") == "*":
            assert set(_as_list(statement["Action"])) <= STAR_RESOURCE_ACTIONS, where


def test_no_managed_policies_are_attached() -> None:
    for logical_id, role in _of_type("AWS::IAM::Role").items():
        assert "ManagedPolicyArns" not in role["Properties"], logical_id
    assert "Policies" not in _resources()["InterruptionFunction"]["Properties"]


def _function_statements() -> dict[str, dict[str, Any]]:
    role = _resources()["InterruptionFunctionRole"]["Properties"]
    return {
        statement["Sid"]: statement
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    }


def test_scheduler_permissions_are_confined_to_the_group_and_role() -> None:
    statements = _function_statements()
    deferred = statements["DeferredWork"]
    assert sorted(deferred["Action"]) == [
        "scheduler:CreateSchedule",
        "scheduler:DeleteSchedule",
        "scheduler:GetSchedule",
    ]
    assert deferred["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}"
        ":schedule/${ScheduleGroup}/*"
    }
    pass_role = statements["PassSchedulerRole"]
    assert pass_role["Action"] == "iam:PassRole"
    assert pass_role["Resource"] == {"Fn::GetAtt": ["SchedulerRole", "Arn"]}
    assert pass_role["Condition"] == {
        "StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}
    }

    scheduler_role = _resources()["SchedulerRole"]["Properties"]
    trust = scheduler_role["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    (send,) = scheduler_role["Policies"][0]["PolicyDocument"]["Statement"]
    assert send["Action"] == "sqs:SendMessage"
    assert send["Resource"] == {"Fn::GetAtt": ["Queue", "Arn"]}


def test_describe_cluster_and_access_entries_are_per_managed_cluster() -> None:
    loop = _template()["Resources"]["Fn::ForEach::ManagedClusters"]
    assert loop[:2] == ["Cluster", {"Ref": "ClusterNames"}]
    body = loop[2]
    (describe,) = body["DescribeClusterPolicy&{Cluster}"]["Properties"]["PolicyDocument"][
        "Statement"
    ]
    assert describe["Action"] == "eks:DescribeCluster"
    assert describe["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${Cluster}"
    }
    entry = body["AccessEntry&{Cluster}"]
    assert entry["Condition"] == "CreateAccessEntries"
    assert entry["Properties"]["Type"] == "STANDARD"
    assert entry["Properties"]["KubernetesGroups"] == ["lifeboat"]
    assert entry["Properties"]["PrincipalArn"] == {
        "Fn::GetAtt": ["InterruptionFunctionRole", "Arn"]
    }


# --- event patterns against the sample events ---------------------------------------------------


def _matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
    """EventBridge matching for exact-value lists and nested objects (all this template uses).

    A list matches when the event's value (or any element, if the event holds a list) is in it;
    a nested object matches the event's object at that key; a missing key never matches.
    """
    for key, expected in pattern.items():
        if key not in event:
            return False
        actual = event[key]
        if isinstance(expected, dict):
            if not isinstance(actual, dict) or not _matches(expected, actual):
                return False
        else:
            assert isinstance(expected, list), f"unsupported pattern at {key!r}: {expected!r}"
            assert all(not isinstance(v, dict) for v in expected), "content filters unsupported"
            values = actual if isinstance(actual, list) else [actual]
            if not any(value in expected for value in values):
                return False
    return True


def _sample(name: str) -> dict[str, Any]:
    path = EVENTS / name
    if not path.exists():
        pytest.skip(f"sample event {path.name} not written yet")
    event: dict[str, Any] = json.loads(path.read_text())
    return event


def _pattern(rule: str) -> dict[str, Any]:
    pattern: dict[str, Any] = json.loads(
        json.dumps(_resources()[rule]["Properties"]["EventPattern"])
    )
    return pattern


@pytest.mark.parametrize(("rule", "sample"), sorted(RULE_SAMPLES.items()))
def test_rule_matches_its_sample_and_no_other(rule: str, sample: str) -> None:
    assert _matches(_pattern(rule), _sample(sample))
    for other_rule in RULE_SAMPLES:
        if other_rule != rule:
            assert not _matches(_pattern(other_rule), _sample(sample)), other_rule


@pytest.mark.parametrize(
    "state", ["pending", "running", "stopping", "stopped", "shutting-down", "terminated"]
)
def test_state_change_rule_only_takes_instances_going_away(state: str) -> None:
    event = copy.deepcopy(_sample("state-change.json"))
    event["detail"]["state"] = state
    going_away = state in ("stopping", "stopped", "shutting-down", "terminated")
    assert _matches(_pattern("StateChangeRule"), event) is going_away


@pytest.mark.parametrize(("field", "value"), [("service", "RDS"), ("eventTypeCategory", "issue")])
def test_health_rule_only_takes_scheduled_ec2_changes(field: str, value: str) -> None:
    event = copy.deepcopy(_sample("scheduled-change.json"))
    event["detail"][field] = value
    assert not _matches(_pattern("ScheduledChangeRule"), event)


def test_matcher_agrees_with_eventbridge_on_basics() -> None:
    pattern = {"source": ["aws.ec2"], "detail": {"state": ["stopped"]}}
    assert _matches(pattern, {"source": "aws.ec2", "detail": {"state": "stopped", "x": 1}})
    assert not _matches(pattern, {"source": "aws.ec2", "detail": {}})
    assert not _matches(pattern, {"source": "aws.ec2"})
    assert _matches({"resources": ["a"]}, {"resources": ["b", "a"]})


# --- alarms, parameters, outputs ------------------------------------------------------------------


def test_alarms_watch_dlq_errors_and_queue_age() -> None:
    alarms = _of_type("AWS::CloudWatch::Alarm")
    watched = {
        (a["Properties"]["Namespace"], a["Properties"]["MetricName"]): a["Properties"]
        for a in alarms.values()
    }
    dlq = watched[("AWS/SQS", "ApproximateNumberOfMessagesVisible")]
    assert dlq["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["DeadLetterQueue", "QueueName"]}
    assert dlq["Threshold"] == 0
    assert watched[("AWS/Lambda", "Errors")]["Threshold"] == 0
    age = watched[("AWS/SQS", "ApproximateAgeOfOldestMessage")]
    assert age["Threshold"] == {"Ref": "QueueAgeAlarmThresholdSeconds"}
    assert _template()["Parameters"]["QueueAgeAlarmThresholdSeconds"]["Default"] == 60
    for alarm in watched.values():
        assert alarm["AlarmActions"] == {
            "Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]
        }


def test_dashboard_shows_lifeboat_metrics() -> None:
    (dashboard,) = _of_type("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    for metric in ("NoticesReceived", "Outcomes", "Actions", "ReactionLatency", "Throttles"):
        assert metric in body
    # The body must stay valid JSON once CloudFormation substitutes ${...}.
    substituted = re.sub(r"\$\{[^}]+\}", "1", body)
    json.loads(substituted)


def test_outputs() -> None:
    assert {
        "QueueUrl",
        "QueueArn",
        "DeadLetterQueueUrl",
        "FunctionRoleArn",
        "FunctionName",
        "IdempotencyTableName",
        "ScheduleGroupName",
    } <= set(_template()["Outputs"])


def test_idempotency_table() -> None:
    table = _resources()["IdempotencyTable"]["Properties"]
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}


# --- RBAC --------------------------------------------------------------------------------------


def test_rbac_grants_exactly_what_lifeboat_uses() -> None:
    documents = list(yaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text()))
    by_kind = {d["kind"]: d for d in documents}
    granted = {
        (group, resource): sorted(rule["verbs"])
        for rule in by_kind["ClusterRole"]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert granted == {
        ("", "nodes"): ["get", "list", "patch"],
        ("", "pods"): ["list"],
        ("", "pods/eviction"): ["create"],
        ("", "events"): ["create"],
        ("policy", "poddisruptionbudgets"): ["list"],
        ("karpenter.sh", "nodepools"): ["get"],
        ("karpenter.sh", "nodeclaims"): ["create", "delete", "get", "list"],
    }
    role = by_kind["Role"]
    assert role["metadata"]["namespace"] == "lifeboat"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
        }
    ]
    for binding in (by_kind["ClusterRoleBinding"], by_kind["RoleBinding"]):
        assert binding["subjects"] == [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "lifeboat"}
        ]
    lease_namespace = _resources()["InterruptionFunction"]["Properties"]["Environment"][
        "Variables"
    ]["LIFEBOAT_LEASE_NAMESPACE"]
    assert lease_namespace == role["metadata"]["namespace"]

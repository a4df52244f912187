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
from typing import Any

import pytest
from cfnlint.decode import decode_str  # type: ignore[import-untyped]

from tests.support import cyaml
from tests.support.cfn_lint import lint
from tests.support.events import sample as _sample
from tests.support.paths import ROOT, TEMPLATE

LAYER = ROOT / "layers" / "lifeboat" / "lifeboat"
SETTINGS = LAYER / "model/settings.py"
SERVICE = LAYER / "runtime/service.py"
SECURITY_PAGE = ROOT / "docs" / "design" / "security.md"

# Rule logical id -> sample event of its kind.
RULE_SAMPLES = {
    "SpotInterruptionRule": "spot-interruption.json",
    "RebalanceRecommendationRule": "rebalance-recommendation.json",
    "StateChangeRule": "state-change.json",
    "ScheduledChangeRule": "scheduled-change.json",
    "AsgTerminationRule": "asg-termination.json",
    "CapacityReservationInterruptionRule": "capacity-reservation-interruption.json",
    "CapacityBlockRule": "capacity-block-expiry.json",
    "RotationRule": "rotation/legacy-to-karpenter.json",
}

# Actions whose only valid Resource is "*" (no resource-level permissions).
STAR_RESOURCE_ACTIONS = {
    "ec2:DescribeInstances",
    # Only with SubnetIds (the function in a VPC): Lambda looks up its network interfaces.
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DescribeInstanceStatus",
    # The sweep's look at ending Capacity Blocks (lifeboat.aws.capacity_blocks).
    "ec2:DescribeCapacityReservations",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    # Discovering the clusters tagged ClusterTagKey (lifeboat.aws.discovery).
    "eks:ListClusters",
}

# Infrastructure the function needs to find; not operator settings, so not in settings.py
# (service.py reads them).
INFRA_ENV = {
    "LIFEBOAT_IDEMPOTENCY_TABLE",
    "LIFEBOAT_SCHEDULE_GROUP",
    "LIFEBOAT_SCHEDULER_ROLE_ARN",
    "LIFEBOAT_QUEUE_ARN",
    "LIFEBOAT_QUEUE_URL",
    "LIFEBOAT_DEAD_LETTER_QUEUE_ARN",
    "LIFEBOAT_NOTIFICATION_BUS",
    "LIFEBOAT_SWEEP_SCHEDULE_ARN",
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


def _branches(statement: Any) -> list[dict[str, Any]]:
    """A statement, or both branches of a conditional one (``!If [cond, stmt, NoValue]``)."""
    if isinstance(statement, dict) and "Fn::If" in statement:
        _condition, *branches = statement["Fn::If"]
        return [b for branch in branches for b in _branches(branch)]
    if statement == {"Ref": "AWS::NoValue"}:
        return []
    return [statement]


def _statements() -> Iterator[tuple[str, dict[str, Any]]]:
    for where, document in _policy_documents():
        for statement in _as_list(document["Statement"]):
            for branch in _branches(statement):
                yield where, branch


def _conditional(statement: Any) -> tuple[str | None, dict[str, Any]]:
    """(condition, statement) of ``!If [condition, statement, NoValue]``; (None, s) for s."""
    if isinstance(statement, dict) and "Fn::If" in statement:
        condition, then, otherwise = statement["Fn::If"]
        assert otherwise == {"Ref": "AWS::NoValue"}
        return str(condition), then
    return None, statement


def _rule_arns() -> list[dict[str, Any]]:
    # The launch lifecycle rule exists only with CompleteLaunchHooks (its entry is conditional,
    # like each kind's switch: the callers look through the conditions).
    launch = {"Fn::GetAtt": ["AsgLaunchRule", "Arn"]}
    return [{"Fn::GetAtt": [rule, "Arn"]} for rule in RULE_SAMPLES] + [launch]


# --- lint -----------------------------------------------------------------------------------


def test_cfn_lint_and_the_serverless_rules_report_nothing() -> None:
    """cfn-lint's own rules and awslabs serverless-rules (the cfn-lint-serverless plugin,
    appended to the default rules: one lint covers both)."""
    matches = lint(TEMPLATE.read_text(), serverless=True)
    assert [f"{m.rule.id} line {m.linenumber}: {m.message}" for m in matches] == []


def test_every_serverless_rule_suppression_says_why() -> None:
    """A serverless rule that does not apply is switched off on its resource with a comment
    giving the reason."""
    lines = TEMPLATE.read_text().splitlines()
    suppressed = [index for index, line in enumerate(lines) if re.match(r"\s+- [EW]S\d{4}\b", line)]
    assert suppressed, "the serverless rules no longer need suppressions: drop this check"
    for index in suppressed:
        context = lines[index] + lines[index - 1] + lines[index - 2]
        assert "#" in context, f"suppression without a reason: {lines[index].strip()}"


# --- rules and queue ------------------------------------------------------------------------


def test_there_is_one_rule_per_kind() -> None:
    # ... and the optional rule that routes Lifeboat's own notifications to its topic, the
    # one that forwards them to the fleet's central bus (issue 26), and the launch lifecycle
    # actions' rule, only with CompleteLaunchHooks (issue 22).
    assert set(_of_type("AWS::Events::Rule")) == set(RULE_SAMPLES) | {
        "NotificationRule",
        "FleetForwardRule",
        "AsgLaunchRule",
    }
    launch = _resources()["AsgLaunchRule"]
    assert launch["Condition"] == "LaunchHooks"
    assert launch["Properties"]["EventPattern"]["detail-type"] == [
        "EC2 Instance-launch Lifecycle Action"
    ]


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
    conditional = [_conditional(s) for s in properties["PolicyDocument"]["Statement"]]
    statements = [s for condition, s in conditional if condition is None]

    allows = [s for s in statements if s["Effect"] == "Allow"]
    assert len(allows) == 1
    allow = allows[0]
    assert allow["Principal"] == {"Service": "events.amazonaws.com"}
    assert _as_list(allow["Action"]) == ["sqs:SendMessage"]
    assert allow["Resource"] == {"Fn::GetAtt": [queue, "Arn"]}
    # Each rule's entry is conditional on its kind's switch
    # (tests/unit/template/test_template_switches.py).
    entries = allow["Condition"]["ArnEquals"]["aws:SourceArn"]
    source_arns = [arn for entry in entries for arn in _branches(entry)]
    assert sorted(map(json.dumps, source_arns)) == sorted(map(json.dumps, _rule_arns()))

    denies = [s for s in statements if s["Effect"] == "Deny"]
    transport = [d for d in denies if "Bool" in d["Condition"]]
    assert len(transport) == 1
    assert transport[0]["Principal"] == "*"
    assert transport[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # Both queues also refuse every other sender
    # (tests/unit/template/test_template_queue_policy.py).
    assert len(denies) == 2

    # The only conditional grant: the optional notification rule may park undeliverable
    # notifications in the DLQ, and only it.
    extra = [(condition, s) for condition, s in conditional if condition is not None]
    if queue == "Queue":
        assert extra == []
    else:
        # ... and the optional rule forwarding to the fleet's bus, and only it.
        rules = {"NotificationTopic": "NotificationRule", "ForwardToFleet": "FleetForwardRule"}
        assert sorted(condition for condition, _ in extra) == sorted(rules)
        for condition, notification in extra:
            assert notification["Principal"] == {"Service": "events.amazonaws.com"}
            assert notification["Action"] == "sqs:SendMessage"
            assert notification["Condition"] == {
                "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": [rules[condition], "Arn"]}}
            }


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
    # lifeboat.model.deadline decides what is "near" a deadline by the same timeout.
    from lifeboat.model.deadline import QUEUE_VISIBILITY_TIMEOUT

    assert visibility == QUEUE_VISIBILITY_TIMEOUT.total_seconds()


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
    assert properties["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert properties["AutoPublishAlias"] == "live"
    assert properties["DeploymentPreference"] == {
        "Type": {"Ref": "DeploymentType"},
        "Alarms": [{"Ref": "FunctionErrorsAlarm"}, {"Ref": "DeadLetterQueueAlarm"}],
        "Role": {"Fn::GetAtt": ["DeploymentRole", "Arn"]},
    }
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
    read |= set(re.findall(r"\"(LIFEBOAT_[A-Z_]+)\"", SERVICE.read_text()))
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
    assert [action for action in denied if "*" in action] == ["sqs:*", "sqs:*"]


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
        branch["Sid"]: branch
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        for branch in _branches(statement)
    }


def _function_conditions() -> dict[str, str | None]:
    """Sid -> the condition a statement of the function's role is granted under."""
    role = _resources()["InterruptionFunctionRole"]["Properties"]
    conditional = [
        _conditional(statement)
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]
    return {statement["Sid"]: condition for condition, statement in conditional}


def test_scheduler_permissions_are_confined_to_the_group_and_role() -> None:
    statements = _function_statements()
    deferred = statements["DeferredWork"]
    # Regression (least privilege): DeleteSchedule and GetSchedule were granted and never
    # used; schedules delete themselves after firing (ActionAfterCompletion=DELETE).
    assert _as_list(deferred["Action"]) == ["scheduler:CreateSchedule"]
    used = {
        call
        for path in LAYER.rglob("*.py")
        for call in re.findall(r"\.(\w+_schedule)\(", path.read_text())
    }
    assert used == {"create_schedule"}
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
    # Only Lifeboat's own schedule group
    # (tests/unit/template/test_template_command_bus.py evaluates it).
    assert trust["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["ScheduleGroup", "Arn"]}},
    }
    send, dead_letters = scheduler_role["Policies"][0]["PolicyDocument"]["Statement"]
    assert send["Action"] == "sqs:SendMessage"
    assert send["Resource"] == {"Fn::GetAtt": ["Queue", "Arn"]}
    # Regression: schedules had no dead-letter queue. The role Scheduler assumes delivers an
    # undeliverable wake-up to the schedule's DeadLetterConfig, Lifeboat's DLQ.
    assert dead_letters["Action"] == "sqs:SendMessage"
    assert dead_letters["Resource"] == {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}
    variables = _resources()["InterruptionFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["LIFEBOAT_DEAD_LETTER_QUEUE_ARN"] == {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}


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
    # ... when ClusterNames names some (it may be empty: clusters found by their tag).
    assert entry["Condition"] == "AccessEntriesForNamedClusters"
    assert _template()["Conditions"]["AccessEntriesForNamedClusters"] == {
        "Fn::And": [{"Condition": "CreateAccessEntries"}, {"Condition": "HasClusterNames"}]
    }
    assert body["DescribeClusterPolicy&{Cluster}"]["Condition"] == "HasClusterNames"
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


def test_dashboard_body_is_json_once_substituted() -> None:
    (dashboard,) = _of_type("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    assert "Throttles" in body and "ApproximateAgeOfOldestMessage" in body
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
        "FunctionLogGroupName",
        "FunctionAliasArn",
    } <= set(_template()["Outputs"])
    assert _template()["Outputs"]["FunctionLogGroupName"]["Value"] == {"Ref": "FunctionLogGroup"}


def test_idempotency_table() -> None:
    table = _resources()["IdempotencyTable"]["Properties"]
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True}


# --- RBAC --------------------------------------------------------------------------------------


def test_rbac_grants_exactly_what_lifeboat_uses() -> None:
    documents = list(cyaml.safe_load_all((ROOT / "deploy" / "rbac.yaml").read_text()))
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for document in documents:
        by_kind.setdefault(document["kind"], []).append(document)
    [cluster_role] = by_kind["ClusterRole"]
    granted = {
        (group, resource): sorted(rule["verbs"])
        for rule in cluster_role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert granted == {
        ("", "nodes"): ["get", "list", "patch"],
        ("", "pods"): ["list"],
        ("", "pods/eviction"): ["create"],
        ("policy", "poddisruptionbudgets"): ["list"],
        ("karpenter.sh", "nodepools"): ["get"],
        # patch: the when-ready hand-over removes do-not-disrupt from the replacement.
        ("karpenter.sh", "nodeclaims"): ["create", "delete", "get", "list", "patch"],
    }
    roles = {role["metadata"]["namespace"]: role["rules"] for role in by_kind["Role"]}
    assert roles == {
        "lifeboat": [
            {
                "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"],
                "verbs": ["get", "create", "update"],
            },
            # A rotation's state (lifeboat.rotation.store), in Lifeboat's namespace only.
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "update"]},
            # Events about a rotation, on its ConfigMap.
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        ],
        # Regression (least privilege): `events: create` was a ClusterRole rule, the right
        # to write Events in every namespace; Node events only ever go to "default".
        "default": [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}],
    }
    from lifeboat.telemetry.recorder import EVENT_NAMESPACE

    assert EVENT_NAMESPACE == "default"
    bindings = by_kind["ClusterRoleBinding"] + by_kind["RoleBinding"]
    assert len(bindings) == 3
    for binding in bindings:
        assert binding["subjects"] == [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "lifeboat"}
        ]
    bound = {(b["metadata"].get("namespace"), b["roleRef"]["name"]) for b in by_kind["RoleBinding"]}
    assert bound == {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in by_kind["Role"]}
    lease_namespace = _resources()["InterruptionFunction"]["Properties"]["Environment"][
        "Variables"
    ]["LIFEBOAT_LEASE_NAMESPACE"]
    assert lease_namespace == "lifeboat"


# --- least privilege, notifications, deployment ---------------------------------------------


def _layer_source() -> str:
    return "\n".join(path.read_text() for path in sorted(LAYER.rglob("*.py")))


def test_every_queue_action_granted_is_one_the_function_or_its_trigger_uses() -> None:
    """ChangeMessageVisibility stays because lifeboat/aws/redelivery.py calls it (a failed
    message with a near deadline comes back within seconds); the rest is what the SQS event
    source mapping needs."""
    consume = _function_statements()["ConsumeQueue"]
    assert sorted(consume["Action"]) == [
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:ReceiveMessage",
    ]
    assert consume["Resource"] == {"Fn::GetAtt": ["Queue", "Arn"]}
    assert ".change_message_visibility(" in _layer_source()


def test_lifecycle_actions_are_scoped_to_the_managed_clusters_groups_by_default() -> None:
    """Regression (least privilege): CompleteLifecycleAction was allowed on every Auto
    Scaling group of the account unless an operator opted in to scoping. By default it is
    now allowed only on groups tagged with a managed cluster (EKS managed node groups:
    eks:cluster-name; eksctl: alpha.eksctl.io/cluster-name); every group only on request."""
    parameter = _template()["Parameters"]["ScopeLifecycleActionsByClusterTag"]
    assert parameter["Default"] == "true"
    conditions = _function_conditions()
    statements = _function_statements()
    scoped = {
        "LifecycleActionsManagedNodeGroups": "eks:cluster-name",
        "LifecycleActionsEksctlNodeGroups": "alpha.eksctl.io/cluster-name",
    }
    for sid, tag in scoped.items():
        assert conditions[sid] == "ScopeLifecycleByTag"
        assert statements[sid]["Condition"] == {
            "StringEquals": {f"aws:ResourceTag/{tag}": {"Ref": "ClusterNames"}}
        }
    assert conditions["LifecycleActionsAnyGroup"] == "AnyLifecycleGroup"
    assert _template()["Conditions"]["AnyLifecycleGroup"] == {
        "Fn::Not": [{"Condition": "ScopeLifecycleByTag"}]
    }
    granting = {
        sid
        for sid, statement in statements.items()
        if "autoscaling:CompleteLifecycleAction" in _as_list(statement["Action"])
    }
    # With ClusterTagKey the clusters' names are unknown: groups of any EKS cluster (their
    # tag present), never a group of no cluster (tests/unit/test_template_discovery.py).
    discovered = {
        "LifecycleActionsTaggedClustersManagedNodeGroups": "eks:cluster-name",
        "LifecycleActionsTaggedClustersEksctlNodeGroups": "alpha.eksctl.io/cluster-name",
    }
    for sid, tag in discovered.items():
        assert conditions[sid] == "ScopeLifecycleByDiscovery"
        assert statements[sid]["Condition"] == {"Null": {f"aws:ResourceTag/{tag}": "false"}}
    assert granting == set(scoped) | set(discovered) | {"LifecycleActionsAnyGroup"}


def test_notifications_may_only_be_put_on_the_default_bus_as_lifeboat() -> None:
    assert _function_conditions()["Notifications"] == "Notify"
    statement = _function_statements()["Notifications"]
    assert statement["Action"] == "events:PutEvents"
    assert statement["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default"
    }
    from lifeboat.aws.notify import DETAIL_TYPES

    # Only its own detail-types (tests/unit/template/test_template_command_bus.py evaluates it).
    assert statement["Condition"] == {
        "StringEquals": {"events:source": "lifeboat", "events:detail-type": list(DETAIL_TYPES)}
    }
    variables = _resources()["InterruptionFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["LIFEBOAT_NOTIFICATION_BUS"] == {"Fn::If": ["Notify", "default", ""]}


def test_the_optional_topic_gets_forced_actions_and_give_ups_from_one_rule() -> None:
    from lifeboat.aws.notify import (
        CAPACITY_BLOCK_ENDING,
        FORCED_ACTION,
        GIVE_UP,
        ROTATION_CHANGE,
        SOURCE,
    )

    resources = _resources()
    for name in ("NotificationTopic", "NotificationTopicPolicy", "NotificationRule"):
        assert resources[name]["Condition"] == "NotificationTopic", name
    rule = resources["NotificationRule"]["Properties"]
    assert rule["EventPattern"] == {
        "source": [SOURCE],
        "detail-type": [FORCED_ACTION, GIVE_UP, ROTATION_CHANGE, CAPACITY_BLOCK_ENDING],
    }
    [target] = rule["Targets"]
    assert target["Arn"] == {"Ref": "NotificationTopic"}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}}
    [publish] = resources["NotificationTopicPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert publish["Principal"] == {"Service": "events.amazonaws.com"}
    assert publish["Condition"] == {
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["NotificationRule", "Arn"]}}
    }
    assert resources["NotificationTopic"]["Properties"]["KmsMasterKeyId"] == "alias/aws/sns"
    assert _template()["Outputs"]["NotificationTopicArn"]["Condition"] == "NotificationTopic"


def test_the_deployment_role_may_only_move_this_functions_alias_and_read_its_alarms() -> None:
    role = _resources()["DeploymentRole"]["Properties"]
    trust = role["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "codedeploy.amazonaws.com"}
    statements = {
        s["Sid"]: s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]
    }
    assert statements["Alias"]["Resource"] == [
        {"Fn::GetAtt": ["InterruptionFunction", "Arn"]},
        {"Fn::Sub": "${InterruptionFunction.Arn}:*"},
    ]
    assert statements["RollbackAlarms"]["Resource"] == [
        {"Fn::GetAtt": ["FunctionErrorsAlarm", "Arn"]},
        {"Fn::GetAtt": ["DeadLetterQueueAlarm", "Arn"]},
    ]
    assert "ManagedPolicyArns" not in role


def _star_resource_actions() -> set[str]:
    return {
        action
        for _, statement in _statements()
        if statement["Effect"] == "Allow" and statement.get("Resource") == "*"
        for action in _as_list(statement["Action"])
    }


def _security_page() -> str:
    text = SECURITY_PAGE.read_text()
    assert text.startswith("# Security\n")
    return text


def test_the_readme_names_every_wildcard_the_template_uses() -> None:
    """Regression: the Security section (docs/design/security.md) said "X-Ray writes" and
    missed actions; every action granted on Resource "*", and every wildcard action (the
    TLS-only denies), is named."""
    security = _security_page()
    named = set(re.findall(r"`([a-z0-9-]+:[A-Za-z*]+)`", security))
    assert _star_resource_actions() <= named
    wildcard_actions = {
        action
        for _, statement in _statements()
        for action in _as_list(statement.get("Action", []))
        if "*" in action
    }
    assert wildcard_actions == {"sqs:*"} and wildcard_actions <= named


# --- the transformed template: what SAM makes of the function ---------------------------------


@cache
def _transformed() -> dict[str, Any]:
    """template.yaml as CloudFormation receives it: Fn::ForEach expanded (one cluster) by
    cfn-lint's language-extensions transform, then the SAM transform (aws-sam-translator)."""
    import os

    # cfn-lint and aws-sam-translator ship no type information.
    from cfnlint.template import Template  # type: ignore[import-untyped]
    from cfnlint.template.transforms._language_extensions import (  # type: ignore[import-untyped]
        language_extension,
    )
    from samtranslator.translator.transform import transform  # type: ignore[import-untyped]

    class NoManagedPolicies:
        def load(self) -> dict[str, str]:
            return {}

    _, expanded = language_extension(Template(str(TEMPLATE), copy.deepcopy(_template())))
    expanded = json.loads(json.dumps(expanded, default=str))
    expanded["Transform"] = "AWS::Serverless-2016-10-31"
    # Code locations are local folders until `sam deploy` uploads them.
    expanded["Resources"]["InterruptionFunction"]["Properties"]["CodeUri"] = "s3://b/fn.zip"
    expanded["Resources"]["LifeboatLayer"]["Properties"]["ContentUri"] = "s3://b/layer.zip"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    result: dict[str, Any] = transform(expanded, {"ClusterNames": ["prod"]}, NoManagedPolicies())
    return result


def _transformed_of_type(kind: str) -> dict[str, Any]:
    return {k: v for k, v in _transformed()["Resources"].items() if v["Type"] == kind}


def test_the_queue_invokes_the_live_alias_of_a_snapstart_version() -> None:
    """SnapStart applies to published versions only: the event source mapping must invoke
    the alias AutoPublishAlias keeps on the newest version, never $LATEST."""
    [(alias_id, alias)] = _transformed_of_type("AWS::Lambda::Alias").items()
    assert alias["Properties"]["Name"] == "live"
    [mapping] = _transformed_of_type("AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["FunctionName"] == {"Ref": alias_id}
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    [function] = _transformed_of_type("AWS::Lambda::Function").values()
    assert function["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert function["Properties"]["Runtime"] in ("python3.12", "python3.13")


def test_a_new_version_is_rolled_out_as_a_canary_that_rolls_back_on_the_alarms() -> None:
    [alias] = _transformed_of_type("AWS::Lambda::Alias").values()
    assert "CodeDeployLambdaAliasUpdate" in alias["UpdatePolicy"]
    [group] = _transformed_of_type("AWS::CodeDeploy::DeploymentGroup").values()
    properties = group["Properties"]
    assert properties["AlarmConfiguration"] == {
        "Enabled": True,
        "Alarms": [
            {"Name": {"Ref": "FunctionErrorsAlarm"}},
            {"Name": {"Ref": "DeadLetterQueueAlarm"}},
        ],
    }
    assert "DEPLOYMENT_STOP_ON_ALARM" in properties["AutoRollbackConfiguration"]["Events"]
    assert properties["ServiceRoleArn"] == {"Fn::GetAtt": ["DeploymentRole", "Arn"]}
    assert _template()["Parameters"]["DeploymentType"]["Default"] == "Canary10Percent5Minutes"
    # SAM adds no role of its own (with an AWS managed policy) for CodeDeploy.
    assert set(_transformed_of_type("AWS::IAM::Role")) == set(_of_type("AWS::IAM::Role"))


# --- metrics, alarms and the dashboard --------------------------------------------------------


def test_the_rejected_messages_alarm_watches_lifeboats_own_metric() -> None:
    from lifeboat.telemetry.observability import DIMENSION_SETS

    alarm = _resources()["RejectedMessagesAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("Lifeboat", "Outcomes")
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    assert dimensions == {"service": "lifeboat", "outcome": "rejected"}
    # An alarm matches one exact dimension set: the one observability publishes for it.
    assert ("outcome",) in DIMENSION_SETS
    assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"


def test_the_dashboard_reads_the_metrics_the_function_writes() -> None:
    from lifeboat.telemetry.observability import ACTION_METRICS, DIMENSION_SETS

    body = _resources()["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    written = {"Outcomes", "ReactionLatency", "ForcedActions", "GiveUps", "RecordFailures"}
    written |= {"NotificationFailures", "ColdStart"} | set(ACTION_METRICS.values())
    missing = {name for name in written if f'\\"{name}\\"' not in body and f'"{name}"' not in body}
    assert missing == set()
    # Every SEARCH names a dimension set the function publishes (with "service").
    schemas = re.findall(r"\{Lifeboat,([a-z,]+)\}", body)
    published = {tuple(sorted({*names, "service"})) for names in DIMENSION_SETS}
    assert schemas and {tuple(sorted(s.split(","))) for s in schemas} <= published


@pytest.mark.parametrize("name", ["legacy-to-karpenter", "pause", "resume", "cancel"])
def test_the_rotation_rule_takes_every_rotation_command(name: str) -> None:
    assert _matches(_pattern("RotationRule"), _sample(f"rotation/{name}.json"))


def test_the_rotation_rule_takes_exactly_the_commands_the_parser_knows() -> None:
    """Lifeboat publishes what it did with source lifeboat too: only the commands may loop
    back into the queue, and every command the parser reads must reach it."""
    from lifeboat.rotation.request import DETAIL_TYPES, SOURCE

    pattern = _pattern("RotationRule")
    assert pattern["source"] == [SOURCE]
    assert sorted(pattern["detail-type"]) == sorted(DETAIL_TYPES)
    notification = copy.deepcopy(_sample("rotation/legacy-to-karpenter.json"))
    notification["detail-type"] = "Lifeboat Action Taken"
    assert not _matches(pattern, notification)


def test_a_when_ready_hand_over_needs_the_sweep_that_owns_its_hold() -> None:
    """Issue 33.3: the sweep finishes or gives up a hand-over whose wake-ups broke; a stack
    with HandOver when-ready and no sweep is refused before anything is created."""
    rule = _template()["Rules"]["WhenReadyHandOverNeedsTheSweep"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "HandOver"}, "when-ready"]}
    [assertion] = rule["Assertions"]
    assert assertion["Assert"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "InstanceStatusSweepMinutes"}, "0"]}]
    }

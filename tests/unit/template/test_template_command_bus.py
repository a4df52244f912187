"""Who may command Lifeboat (issue 23.1): rotation requests, pauses, resumes and cancels are
read only from the stack's own command bus, on which only the principals the operator names
(``RotationOperatorArns``; when empty, the account's root user alone) may put events, not
even an administrator of the account whose own IAM policy allows ``events:PutEvents`` on
``*``. Lifeboat's function may publish only its own notifications' detail-types, and
EventBridge Scheduler may assume Lifeboat's scheduler role only for Lifeboat's schedule
group.

Requests are judged with the evaluator of ``tests.support.iam_policy`` (IAM's documented
evaluation logic), on the policies read from template.yaml.
"""

from __future__ import annotations

from typing import Any

import pytest

from lifeboat.aws.notify import DETAIL_TYPES as NOTIFICATION_DETAIL_TYPES
from lifeboat.aws.notify import SOURCE
from lifeboat.rotation.messages import DETAIL_TYPES as COMMAND_DETAIL_TYPES
from tests.support import iam_policy
from tests.support.cfn_resolve import evaluate_conditions
from tests.support.iam_policy import ACCOUNT, REGION, Request
from tests.unit.template.test_template import _resources, _template

BUS_NAME = "lifeboat-commands"
COMMAND_BUS = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{BUS_NAME}"
DEFAULT_BUS = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"
GROUP = f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/lifeboat-ScheduleGroup"
OPERATORS = f"arn:aws:iam::{ACCOUNT}:role/rotation-operators"
CROSS_ACCOUNT_OPERATORS = "arn:aws:iam::210987654321:role/platform-ci"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/Admin"
ROOT = f"arn:aws:iam::{ACCOUNT}:root"
FUNCTION_ROLE = f"arn:aws:iam::{ACCOUNT}:role/lifeboat-InterruptionFunctionRole"


def _arn(logical_id: str) -> str:
    if logical_id == "ScheduleGroup":
        return GROUP
    # Other resources' ARNs (queues, tables, roles): none of them is an event bus.
    return f"arn:aws:lifeboat-test:{REGION}:{ACCOUNT}:{logical_id}"


def _bus_statements(operators: list[str]) -> list[dict[str, Any]]:
    bus = _resources()["CommandEventBus"]
    assert bus["Type"] == "AWS::Events::EventBus"
    parameters: dict[str, str | list[str]] = {
        "CommandEventBusName": BUS_NAME,
        "RotationOperatorArns": operators,
    }
    conditions = {"HasRotationOperators": bool(operators)}
    statements = iam_policy.resolve(
        bus["Properties"]["Policy"]["Statement"], parameters, conditions, _arn
    )
    return list(statements)


def _put(principal_arn: str, *, identity_allows: bool, bus: str = COMMAND_BUS) -> Request:
    """PutEvents of a rotation request by a role (aws:PrincipalArn is the role's ARN)."""
    return Request(
        "events:PutEvents",
        bus,
        {"AWS": principal_arn},
        {
            "aws:PrincipalArn": principal_arn,
            "events:source": SOURCE,
            "events:detail-type": "Lifeboat Rotation Requested",
        },
        identity_allows,
    )


def test_the_bus_is_named_by_the_parameter_the_cli_defaults_to() -> None:
    from lifeboat_local.rotate import DEFAULT_EVENT_BUS

    template = _template()
    assert template["Parameters"]["CommandEventBusName"]["Default"] == DEFAULT_EVENT_BUS == BUS_NAME
    bus = _resources()["CommandEventBus"]["Properties"]
    assert bus["Name"] == {"Ref": "CommandEventBusName"}
    assert template["Outputs"]["CommandEventBusName"]["Value"] == {"Ref": "CommandEventBus"}


def test_commands_are_read_only_from_the_command_bus() -> None:
    """Regression: the rotation rule listened on the default bus, where anyone of the account
    allowed events:PutEvents could rotate nodes. No other rule takes source lifeboat."""
    rules = {
        n: r["Properties"] for n, r in _resources().items() if r["Type"] == "AWS::Events::Rule"
    }
    assert rules["RotationRule"]["EventBusName"] == {"Ref": "CommandEventBus"}
    assert sorted(rules["RotationRule"]["EventPattern"]["detail-type"]) == sorted(
        COMMAND_DETAIL_TYPES
    )
    for name, rule in rules.items():
        if name != "RotationRule":
            assert rule.get("EventBusName") in (None, "default"), name
            # Lifeboat's own notifications: to its topic, and forwarded to the fleet's bus.
            notifications = ("NotificationRule", "FleetForwardRule")
            assert rule["EventPattern"]["source"] != [SOURCE] or name in notifications
            assert not set(rule["EventPattern"]["detail-type"]) & set(COMMAND_DETAIL_TYPES)


@pytest.mark.parametrize(
    ("who", "identity_allows"),
    [
        (ADMIN, True),  # an administrator, allowed events:PutEvents on "*"
        (FUNCTION_ROLE, True),  # Lifeboat's own function
        (OPERATORS, True),  # a role the stack does not name
        ("arn:aws:iam::999999999999:role/attacker", False),
    ],
    ids=["account-admin", "function-role", "unnamed-role", "other-account"],
)
def test_by_default_no_one_but_the_root_user_may_put_commands(
    who: str, identity_allows: bool
) -> None:
    statements = _bus_statements([])
    assert not iam_policy.allowed(_put(who, identity_allows=identity_allows), statements)
    assert iam_policy.allowed(_put(ROOT, identity_allows=True), statements)


def test_the_named_operators_may_put_commands_and_no_one_else() -> None:
    statements = _bus_statements([OPERATORS, CROSS_ACCOUNT_OPERATORS])
    assert iam_policy.allowed(_put(OPERATORS, identity_allows=True), statements)
    # Another account needs the bus policy's Allow (its own IAM policy is not enough).
    assert iam_policy.allowed(_put(CROSS_ACCOUNT_OPERATORS, identity_allows=False), statements)
    for other in (ADMIN, FUNCTION_ROLE, ROOT, "arn:aws:iam::999999999999:role/attacker"):
        assert not iam_policy.allowed(_put(other, identity_allows=True), statements), other


def _function_statements(notify: bool) -> list[dict[str, Any]]:
    role = _resources()["InterruptionFunctionRole"]["Properties"]
    # Every other condition as a default stack with one named cluster has it (its VPC,
    # discovery and other switches off).
    conditions = {
        **evaluate_conditions(_template(), {"ClusterNames": "prod-a"}),
        "Notify": notify,
        "ScopeLifecycleByTag": True,
        "AnyLifecycleGroup": False,
    }
    parameters: dict[str, str | list[str]] = {"ClusterNames": ["prod-a"]}
    return [
        statement
        for policy in role["Policies"]
        for statement in iam_policy.resolve(
            policy["PolicyDocument"]["Statement"], parameters, conditions, _arn
        )
    ]


def _publish(detail_type: str, bus: str = DEFAULT_BUS, source: str = SOURCE) -> Request:
    return Request(
        "events:PutEvents",
        bus,
        {"AWS": FUNCTION_ROLE},
        {"events:source": source, "events:detail-type": detail_type},
    )


@pytest.mark.parametrize("detail_type", NOTIFICATION_DETAIL_TYPES)
def test_the_function_may_publish_its_own_notifications(detail_type: str) -> None:
    assert iam_policy.allowed(_publish(detail_type), _function_statements(notify=True))
    assert not iam_policy.allowed(_publish(detail_type), _function_statements(notify=False))


@pytest.mark.parametrize("detail_type", sorted(COMMAND_DETAIL_TYPES))
def test_the_function_may_not_put_a_command_anywhere(detail_type: str) -> None:
    """Regression: its PutEvents was limited by source only, so the function's role (or code
    running as it) could put a rotation request on the default bus."""
    statements = _function_statements(notify=True)
    for bus in (DEFAULT_BUS, COMMAND_BUS):
        assert not iam_policy.allowed(_publish(detail_type, bus), statements)
    assert not iam_policy.allowed(_publish(NOTIFICATION_DETAIL_TYPES[0], COMMAND_BUS), statements)
    assert not iam_policy.allowed(
        _publish(NOTIFICATION_DETAIL_TYPES[0], source="aws.ec2"), statements
    )


def _assume(source_arn: str | None, account: str = ACCOUNT) -> Request:
    context = {"aws:SourceAccount": account}
    if source_arn is not None:
        context["aws:SourceArn"] = source_arn
    return Request(
        "sts:AssumeRole",
        f"arn:aws:iam::{ACCOUNT}:role/lifeboat-SchedulerRole",
        {"Service": "scheduler.amazonaws.com"},
        context,
    )


def test_scheduler_may_assume_the_role_only_for_lifeboats_schedule_group() -> None:
    """Regression: the trust named the account only, so any schedule group of the account
    could send to Lifeboat's queue with the role. Scheduler sets aws:SourceArn to the
    schedule's group (the confused-deputy condition of its execution role)."""
    trust = _resources()["SchedulerRole"]["Properties"]["AssumeRolePolicyDocument"]
    statements = iam_policy.resolve(trust["Statement"], {}, {}, _arn)
    assert iam_policy.allowed(_assume(GROUP), statements)
    other_group = f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule-group/default"
    assert not iam_policy.allowed(_assume(other_group), statements)
    assert not iam_policy.allowed(_assume(None), statements)
    assert not iam_policy.allowed(_assume(GROUP, account="999999999999"), statements)

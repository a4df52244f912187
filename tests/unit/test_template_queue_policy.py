"""Who may send to Lifeboat's queue (issue 10.2): EventBridge from Lifeboat's own rules and
Lifeboat's scheduler role (and an operator's redrive role, when the stack names one), no one
else, not even a principal of the account whose own IAM policy allows ``sqs:SendMessage``.

The rules are read from template.yaml, not listed here: a rule added with the queue as its
target and forgotten in the policy fails these tests. Requests are judged by a small
evaluator of the queue policy that follows IAM's documented logic for the operators the
policy uses (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html,
``reference_policies_elements_condition_operators.html``): an explicit Deny wins; keys of
one operator are ANDed and the values of one key ORed; a key missing from the request
satisfies a negated operator (``ArnNotEquals``) and fails a positive one; within one
account, an Allow in either the queue policy or the caller's identity policy suffices.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import iam_policy
from tests.support.cfn_resolve import evaluate_conditions
from tests.support.iam_policy import ACCOUNT, REGION
from tests.unit.test_template import _resources, _template

QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lifeboat-Queue"
SCHEDULER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/lifeboat-SchedulerRole"
REDRIVE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/operators"


def _arn(logical_id: str) -> str:
    """What ``!GetAtt X.Arn`` resolves to in this model of the stack."""
    if logical_id == "Queue":
        return QUEUE
    if logical_id == "SchedulerRole":
        return SCHEDULER_ROLE
    return f"arn:aws:events:{REGION}:{ACCOUNT}:rule/lifeboat-{logical_id}"


def _queue_statements(
    redrive_role: str = "", overrides: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The queue policy of a stack deployed with ``overrides`` (and the redrive role)."""
    template = _template()
    policy = template["Resources"]["QueuePolicy"]["Properties"]
    assert policy["Queues"] == [{"Ref": "Queue"}]
    # With CompleteLaunchHooks on, so the launch rule (created only then) is checked too.
    overrides = {
        "CompleteLaunchHooks": "true",
        **(overrides or {}),
        "QueueRedriveRoleArn": redrive_role,
    }
    parameters = {name: overrides.get(name, "") for name in template["Parameters"]}
    conditions = evaluate_conditions(template, overrides)
    statements = iam_policy.resolve(
        policy["PolicyDocument"]["Statement"], parameters, conditions, _arn
    )
    return list(statements)


def _rules_targeting_the_queue() -> set[str]:
    resources = _resources()
    return {
        name
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Events::Rule"
        and any(
            target["Arn"] == {"Fn::GetAtt": ["Queue", "Arn"]}
            for target in resource["Properties"]["Targets"]
        )
    }


def _send(
    principal: dict[str, str], context: dict[str, str], identity_allows: bool = False
) -> iam_policy.Request:
    """``sqs:SendMessage`` to the queue, as IAM sees it."""
    return iam_policy.Request("sqs:SendMessage", QUEUE, principal, context, identity_allows)


def _may_send(request: iam_policy.Request, statements: list[dict[str, Any]]) -> bool:
    return iam_policy.allowed(request, statements)


SECURE = {"aws:SecureTransport": "true"}


def _from_rule(rule_arn: str) -> iam_policy.Request:
    return _send({"Service": "events.amazonaws.com"}, {**SECURE, "aws:SourceArn": rule_arn})


def _as_role(role_arn: str, identity_allows: bool = True) -> iam_policy.Request:
    # For a role session, aws:PrincipalArn is the role's ARN.
    return _send({"AWS": role_arn}, {**SECURE, "aws:PrincipalArn": role_arn}, identity_allows)


def test_every_rule_that_targets_the_queue_may_send_to_it() -> None:
    rules = _rules_targeting_the_queue()
    # Every kind's rule and the rotation rule; not the notification rule (it feeds a topic).
    assert "RotationRule" in rules and "NotificationRule" not in rules
    statements = _queue_statements()
    for rule in sorted(rules):
        assert _may_send(_from_rule(_arn(rule)), statements), rule


def test_the_policy_names_exactly_the_rules_that_target_the_queue() -> None:
    """Both the Allow and the Deny: a rule the Deny forgot could not deliver; a rule named
    that no longer targets the queue is a grant nobody needs."""
    expected = sorted(_arn(rule) for rule in _rules_targeting_the_queue())
    for statement in _queue_statements():
        for operator in ("ArnEquals", "ArnNotEquals"):
            named = statement.get("Condition", {}).get(operator, {}).get("aws:SourceArn")
            if named is not None:
                assert sorted(iam_policy.values(named)) == expected, statement.get("Sid")


def test_the_scheduler_role_may_send() -> None:
    assert _may_send(_as_role(SCHEDULER_ROLE), _queue_statements())


@pytest.mark.parametrize(
    "request_",
    [
        # An administrator or CI role of the account, allowed sqs:SendMessage on "*".
        _as_role(f"arn:aws:iam::{ACCOUNT}:role/admin"),
        # An IAM user of the account.
        _send(
            {"AWS": f"arn:aws:iam::{ACCOUNT}:user/alice"},
            {**SECURE, "aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:user/alice"},
            identity_allows=True,
        ),
        # Another account.
        _as_role("arn:aws:iam::999999999999:role/attacker", identity_allows=False),
        # Somebody else's EventBridge rule, in this account or another.
        _from_rule(f"arn:aws:events:{REGION}:{ACCOUNT}:rule/someone-elses-rule"),
        _from_rule(f"arn:aws:events:{REGION}:999999999999:rule/lifeboat-SpotInterruptionRule"),
        # The operator's role while the stack names no redrive role.
        _as_role(REDRIVE_ROLE),
        # One of Lifeboat's rules, but over plain HTTP.
        _send(
            {"Service": "events.amazonaws.com"},
            {"aws:SecureTransport": "false", "aws:SourceArn": _arn("SpotInterruptionRule")},
        ),
    ],
    ids=[
        "account-role",
        "account-user",
        "other-account",
        "foreign-rule",
        "rule-of-another-account",
        "redrive-role-not-named",
        "plain-http",
    ],
)
def test_no_one_else_may_send(request_: iam_policy.Request) -> None:
    assert not _may_send(request_, _queue_statements())


def test_the_redrive_role_may_send_only_when_the_stack_names_it() -> None:
    """start-message-move-task sends to the queue as its caller: the runbook's redrive."""
    assert _may_send(_as_role(REDRIVE_ROLE), _queue_statements(redrive_role=REDRIVE_ROLE))
    named = _queue_statements(redrive_role=REDRIVE_ROLE)
    assert not _may_send(_as_role(f"arn:aws:iam::{ACCOUNT}:role/admin"), named)


def test_the_scheduler_roles_own_grant_is_only_the_queue_and_the_dlq() -> None:
    role = _template()["Resources"]["SchedulerRole"]["Properties"]
    [policy] = role["Policies"]
    grants = {(str(s["Action"]), str(s["Resource"])) for s in policy["PolicyDocument"]["Statement"]}
    assert grants == {
        ("sqs:SendMessage", str({"Fn::GetAtt": ["Queue", "Arn"]})),
        ("sqs:SendMessage", str({"Fn::GetAtt": ["DeadLetterQueue", "Arn"]})),
    }

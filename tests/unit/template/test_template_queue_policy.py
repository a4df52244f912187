"""Who may send to Lifeboat's queue (issue 10.2) and to its dead-letter queue (issue 33.1):
EventBridge from Lifeboat's own rules and Lifeboat's scheduler role (and an operator's redrive
role, when the stack names one), no one else, not even a principal of the account whose own
IAM policy allows ``sqs:SendMessage`` (such as the function's own role). The DLQ takes, besides,
what the queue's redrive moves there; a message planted in it would raise the alarm and be
redriven into the queue by the runbook.

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
from tests.unit.template.test_template import _resources, _template

QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lifeboat-Queue"
DLQ = f"arn:aws:sqs:{REGION}:{ACCOUNT}:lifeboat-DeadLetterQueue"
SCHEDULER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/lifeboat-SchedulerRole"
REDRIVE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/operators"


def _arn(logical_id: str) -> str:
    """What ``!GetAtt X.Arn`` resolves to in this model of the stack."""
    if logical_id == "Queue":
        return QUEUE
    if logical_id == "DeadLetterQueue":
        return DLQ
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


# -- the dead-letter queue (issue 33.1) ------------------------------------------------------

# Every optional sender switched on, so each rule that can dead-letter here is checked.
ALL_ON = {"PublishNotifications": "true", "CreateNotificationTopic": "true"}
ALL_ON |= {"FleetEventBusArn": f"arn:aws:events:{REGION}:999999999999:event-bus/fleet"}


def _dlq_statements(redrive_role: str = "", overrides: dict[str, str] | None = None) -> Any:
    """The DLQ's policy of a stack deployed with ``overrides`` (and the redrive role)."""
    template = _template()
    policy = template["Resources"]["DeadLetterQueuePolicy"]["Properties"]
    assert policy["Queues"] == [{"Ref": "DeadLetterQueue"}]
    overrides = {"CompleteLaunchHooks": "true", **(overrides or {})}
    overrides["QueueRedriveRoleArn"] = redrive_role
    parameters = {name: overrides.get(name, "") for name in template["Parameters"]}
    conditions = evaluate_conditions(template, overrides)
    return iam_policy.resolve(policy["PolicyDocument"]["Statement"], parameters, conditions, _arn)


def _rules_dead_lettering_here() -> set[str]:
    """Rules whose target's DeadLetterConfig is the DLQ: EventBridge puts there what it
    could not deliver, as the rule (aws:SourceArn)."""
    dlq = {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}
    return {
        name
        for name, resource in _resources().items()
        if resource["Type"] == "AWS::Events::Rule"
        and any(
            (target.get("DeadLetterConfig") or {}).get("Arn") == dlq
            for target in resource["Properties"]["Targets"]
        )
    }


def _to_dlq(request: iam_policy.Request) -> iam_policy.Request:
    return iam_policy.Request(
        request.action, DLQ, request.principal, request.context, request.identity_allows
    )


def test_every_rule_that_dead_letters_here_may_send_to_the_dlq() -> None:
    rules = _rules_dead_lettering_here()
    assert {"RotationRule", "NotificationRule", "FleetForwardRule"} <= rules
    statements = _dlq_statements(overrides=ALL_ON)
    for rule in sorted(rules):
        assert _may_send(_to_dlq(_from_rule(_arn(rule))), statements), rule


def test_the_dlq_names_exactly_the_rules_that_dead_letter_there_and_the_queue() -> None:
    """The Deny's list of sources is every such rule plus the queue whose redrive it is."""
    expected = sorted([*(_arn(rule) for rule in _rules_dead_lettering_here()), QUEUE])
    [deny] = [s for s in _dlq_statements(overrides=ALL_ON) if s["Sid"] == "DenyEveryOtherSender"]
    assert sorted(iam_policy.values(deny["Condition"]["ArnNotEquals"]["aws:SourceArn"])) == expected


def test_the_scheduler_role_may_dead_letter() -> None:
    """The sweep's schedule and every wake-up name the DLQ in their DeadLetterConfig, which
    Scheduler sends to with the schedule's role."""
    assert _may_send(_to_dlq(_as_role(SCHEDULER_ROLE)), _dlq_statements())


def test_the_queues_redrive_is_not_denied() -> None:
    """SQS moves a message received ``maxReceiveCount`` times itself; were that ever a request
    judged by the DLQ's policy, it would come from the queue (aws:SourceArn), which no caller
    can set."""
    moved = _send({"Service": "sqs.amazonaws.com"}, {**SECURE, "aws:SourceArn": QUEUE})
    statements = _dlq_statements()
    assert not any(
        s["Effect"] == "Deny" and iam_policy.applies(s, _to_dlq(moved)) for s in statements
    )


FUNCTION_ROLE = f"arn:aws:iam::{ACCOUNT}:role/lifeboat-InterruptionFunctionRole"


@pytest.mark.parametrize("queue", [QUEUE, DLQ], ids=["queue", "dlq"])
@pytest.mark.parametrize(
    "request_",
    [
        # The function's own role, or any role of the account allowed sqs:SendMessage on "*".
        _as_role(FUNCTION_ROLE),
        _as_role(f"arn:aws:iam::{ACCOUNT}:role/admin"),
        _send(
            {"AWS": f"arn:aws:iam::{ACCOUNT}:user/alice"},
            {**SECURE, "aws:PrincipalArn": f"arn:aws:iam::{ACCOUNT}:user/alice"},
            identity_allows=True,
        ),
        _as_role("arn:aws:iam::999999999999:role/attacker", identity_allows=False),
        _from_rule(f"arn:aws:events:{REGION}:{ACCOUNT}:rule/someone-elses-rule"),
        _from_rule(f"arn:aws:events:{REGION}:999999999999:rule/lifeboat-SpotInterruptionRule"),
        # Another queue's redrive, or an SNS topic dead-lettering here.
        _send(
            {"Service": "sqs.amazonaws.com"},
            {**SECURE, "aws:SourceArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:another"},
        ),
        _send(
            {"Service": "sns.amazonaws.com"},
            {**SECURE, "aws:SourceArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:topic"},
            identity_allows=True,
        ),
        _as_role(REDRIVE_ROLE),
        _send(
            {"Service": "events.amazonaws.com"},
            {"aws:SecureTransport": "false", "aws:SourceArn": _arn("SpotInterruptionRule")},
        ),
    ],
    ids=[
        "function-role",
        "account-role",
        "account-user",
        "other-account",
        "foreign-rule",
        "rule-of-another-account",
        "another-queues-redrive",
        "a-topic",
        "redrive-role-not-named",
        "plain-http",
    ],
)
def test_no_one_else_may_send_to_the_queue_or_the_dlq(
    queue: str, request_: iam_policy.Request
) -> None:
    statements = _queue_statements(overrides=ALL_ON) if queue == QUEUE else None
    if queue == DLQ:
        statements = _dlq_statements(overrides=ALL_ON)
        request_ = _to_dlq(request_)
    assert statements is not None
    assert not _may_send(request_, statements)


def test_the_redrive_role_may_send_to_the_dlq_only_when_the_stack_names_it() -> None:
    """Moving messages back (start-message-move-task sends as its caller)."""
    named = _dlq_statements(redrive_role=REDRIVE_ROLE)
    assert _may_send(_to_dlq(_as_role(REDRIVE_ROLE)), named)
    assert not _may_send(_to_dlq(_as_role(FUNCTION_ROLE)), named)

"""Parameters that change what the stack holds: kinds switched off, the lifecycle hooks' role,
the function in a VPC (issue 25).

Each test resolves template.yaml for one set of parameter values, as CloudFormation would
(tests/support/cfn_resolve.py: conditions evaluated, ``Fn::If`` branches picked, resources
whose condition is false removed), and checks what is left; cfn-lint with the serverless
rules runs on each resolved combination, so a ``!GetAtt`` of a rule that is switched off, or
a property left empty, fails here and not in CloudFormation.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.cfn_lint import lint
from tests.support.cfn_resolve import resolve, resources
from tests.support.iam_policy import ACCOUNT, Request
from tests.unit.template.test_template import RULE_SAMPLES, _template
from tests.unit.template.test_template_queue_policy import (
    REDRIVE_ROLE,
    _arn,
    _as_role,
    _from_rule,
    _may_send,
)
from tests.unit.template.test_template_queue_policy import _queue_statements as _policy_statements

# Kind switch -> the rule it removes. RotationRule (operators' requests) has no switch.
KIND_SWITCHES = {
    "HandleSpotInterruptions": "SpotInterruptionRule",
    "HandleRebalanceRecommendations": "RebalanceRecommendationRule",
    "HandleStateChanges": "StateChangeRule",
    "HandleScheduledChanges": "ScheduledChangeRule",
    "HandleAsgTerminations": "AsgTerminationRule",
    "HandleCapacityReservationInterruptions": "CapacityReservationInterruptionRule",
    "HandleCapacityBlockExpiries": "CapacityBlockRule",
}
HOOK_ROLE = f"arn:aws:iam::{ACCOUNT}:role/asg-lifecycle-hooks"
POLICIES = ("QueuePolicy", "DeadLetterQueuePolicy")


def _source_arns(template: dict[str, Any], policy: str) -> dict[str, list[str]]:
    """Each statement's aws:SourceArn list (ArnEquals or ArnNotEquals), by Sid."""
    statements = resources(template)[policy]["Properties"]["PolicyDocument"]["Statement"]
    named: dict[str, list[str]] = {}
    for statement in statements:
        for operator in ("ArnEquals", "ArnNotEquals"):
            arns = statement.get("Condition", {}).get(operator, {}).get("aws:SourceArn")
            if arns is not None:
                values = arns if isinstance(arns, list) else [arns]
                named[statement["Sid"]] = sorted(json.dumps(v) for v in values)
    return named


def _rules(template: dict[str, Any]) -> set[str]:
    return {k for k, v in resources(template).items() if v["Type"] == "AWS::Events::Rule"}


def _getatt(rule: str) -> str:
    return json.dumps({"Fn::GetAtt": [rule, "Arn"]})


def test_every_kind_has_a_switch_and_all_default_on() -> None:
    parameters = _template()["Parameters"]
    assert set(KIND_SWITCHES.values()) == set(RULE_SAMPLES) - {"RotationRule"}
    for switch in KIND_SWITCHES:
        assert parameters[switch]["Default"] == "true"
        assert parameters[switch]["AllowedValues"] == ["true", "false"]
    assert _rules(resolve(_template(), {})) == set(RULE_SAMPLES)


@pytest.mark.parametrize("switch", sorted(KIND_SWITCHES))
def test_a_switched_off_kind_loses_exactly_its_rule_and_its_policy_entries(switch: str) -> None:
    rule = KIND_SWITCHES[switch]
    on = resolve(_template(), {})
    off = resolve(_template(), {switch: "false"})
    assert set(resources(on)) - set(resources(off)) == {rule}
    assert set(resources(off)) - set(resources(on)) == set()
    for policy in POLICIES:
        before, after = _source_arns(on, policy), _source_arns(off, policy)
        # The same statements (the notification rule's own entry is conditional on other
        # parameters), each naming one rule less: this one.
        assert set(before) == set(after), policy
        for sid in before:
            assert _getatt(rule) in before[sid], (policy, sid)
            assert sorted(set(before[sid]) - {_getatt(rule)}) == after[sid], (policy, sid)


def test_all_kinds_off_leaves_the_rotation_rule_alone_in_the_policies() -> None:
    off = resolve(_template(), dict.fromkeys(KIND_SWITCHES, "false"))
    assert _rules(off) == {"RotationRule"}
    for policy in POLICIES:
        for sid, arns in _source_arns(off, policy).items():
            # The DLQ's Deny also excepts the queue's own redrive (issue 33.1).
            queue = [_getatt("Queue")] if sid == "DenyEveryOtherSender" else []
            if policy != "DeadLetterQueuePolicy":
                queue = []
            assert arns == [*queue, _getatt("RotationRule")], (policy, sid)


def _queue_statements(overrides: dict[str, str]) -> list[dict[str, Any]]:
    """The queue policy with ``overrides``, its intrinsics resolved to ARNs
    (test_template_queue_policy's model of the stack)."""
    redrive = overrides.get("QueueRedriveRoleArn", "")
    return _policy_statements(redrive, overrides)


@pytest.mark.parametrize("switch", sorted(KIND_SWITCHES))
def test_the_queue_refuses_a_switched_off_kinds_rule(switch: str) -> None:
    """IAM's view (test_template_queue_policy's evaluator): a rule of that name (re-created
    by hand, say) can no longer deliver, the others still can."""
    rule = KIND_SWITCHES[switch]
    statements = _queue_statements({switch: "false"})
    assert not _may_send(_from_rule(_arn(rule)), statements)
    for other in sorted(set(RULE_SAMPLES) - {rule}):
        assert _may_send(_from_rule(_arn(other)), statements), other


def _from_hooks(role: str) -> Request:
    # Auto Scaling sends a lifecycle hook's message with the hook's role: aws:PrincipalArn
    # is the role, and there is no aws:SourceArn.
    return _as_role(role)


def test_lifecycle_hooks_may_notify_the_queue_only_with_their_role_named() -> None:
    """docs/deploying.md: a lifecycle hook with NotificationTargetARN = QueueArn and RoleARN =
    LifecycleHookRoleArn reaches Lifeboat without EventBridge."""
    assert not _may_send(_from_hooks(HOOK_ROLE), _queue_statements({}))
    named = _queue_statements({"LifecycleHookRoleArn": HOOK_ROLE})
    assert _may_send(_from_hooks(HOOK_ROLE), named)
    # Naming it opens the queue to that role only.
    assert not _may_send(_as_role(f"arn:aws:iam::{ACCOUNT}:role/admin"), named)
    assert not _may_send(_as_role(REDRIVE_ROLE), named)
    both = _queue_statements(
        {"LifecycleHookRoleArn": HOOK_ROLE, "QueueRedriveRoleArn": REDRIVE_ROLE}
    )
    assert _may_send(_from_hooks(HOOK_ROLE), both) and _may_send(_as_role(REDRIVE_ROLE), both)


def test_the_hook_role_parameter_accepts_what_the_redrive_role_does() -> None:
    parameters = _template()["Parameters"]
    hook, redrive = parameters["LifecycleHookRoleArn"], parameters["QueueRedriveRoleArn"]
    assert hook["Default"] == "" and hook["AllowedPattern"] == redrive["AllowedPattern"]


# --- cfn-lint on each combination ----------------------------------------------------------

SUBNETS = "subnet-0123456789abcdef0,subnet-0fedcba9876543210"
SECURITY_GROUPS = "sg-0123456789abcdef0"
VPC = {"SubnetIds": SUBNETS, "SecurityGroupIds": SECURITY_GROUPS}
ENDPOINTS = {
    **VPC,
    "VpcId": "vpc-0123456789abcdef0",
    "VpcEndpoints": "ec2,eks,sqs,scheduler,events,autoscaling,xray,dynamodb",
    "VpcEndpointRouteTableIds": "rtb-0123456789abcdef0",
}
COMBINATIONS = {
    "defaults": {},
    "all-kinds-off-and-hook-role": {
        **dict.fromkeys(KIND_SWITCHES, "false"),
        "LifecycleHookRoleArn": HOOK_ROLE,
    },
    "karpenter-keeps-spot": {
        "HandleSpotInterruptions": "false",
        "HandleStateChanges": "false",
        "HandleCapacityReservationInterruptions": "false",
    },
    "vpc": VPC,
    "vpc-with-every-endpoint": ENDPOINTS,
    "vpc-with-some-endpoints": {**ENDPOINTS, "VpcEndpoints": "eks,scheduler"},
}
# Each kind alone switched off: marked bench (make bench-check). make test lints the template
# with every kind on and with every kind off; what lies between differs from both only by
# the one rule and its policy entries, which the tests above check resource by resource.
EACH_KIND_OFF = {f"{switch}-off": {switch: "false"} for switch in KIND_SWITCHES}


@pytest.mark.parametrize(
    "combination",
    [*sorted(COMBINATIONS), *(pytest.param(c, marks=pytest.mark.bench) for c in EACH_KIND_OFF)],
)
def test_cfn_lint_is_clean_for_the_combination(combination: str) -> None:
    resolved = resolve(_template(), (COMBINATIONS | EACH_KIND_OFF)[combination])
    matches = lint(json.dumps(resolved), serverless=True)
    assert [f"{m.rule.id}: {m.message} ({m.path})" for m in matches] == []

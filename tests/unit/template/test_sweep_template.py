"""The instance status sweep in template.yaml: a recurring EventBridge Scheduler schedule
that sends the sweep request (``lifeboat.aws.sweep``) to the queue with the scheduler role the
queue policy already admits, at the ``InstanceStatusSweepMinutes`` rate; and the function's
least-privilege grant of ``ec2:DescribeInstanceStatus`` (on ``*``: EC2's Describe actions
support no resource-level permissions)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from lifeboat.aws.sweep import is_sweep_request
from lifeboat.model.settings import load_settings
from tests.unit.template.test_template import _resources, _statements, _template


def schedule() -> dict[str, Any]:
    resource: dict[str, Any] = _resources()["InstanceStatusSweepSchedule"]
    assert resource["Type"] == "AWS::Scheduler::Schedule"
    return resource


def test_the_schedule_sends_a_sweep_request_to_the_queue_with_the_scheduler_role() -> None:
    target = schedule()["Properties"]["Target"]
    assert target["Arn"] == {"Fn::GetAtt": ["Queue", "Arn"]}
    assert target["RoleArn"] == {"Fn::GetAtt": ["SchedulerRole", "Arn"]}
    request = json.loads(target["Input"])
    assert is_sweep_request(request)
    # Scheduler's context attributes give each request its own id and time.
    assert request["id"] == "<aws.scheduler.execution-id>"
    assert request["time"] == "<aws.scheduler.scheduled-time>"
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}}


def test_the_rate_is_a_parameter_defaulting_to_every_minute_and_zero_turns_it_off() -> None:
    parameter = _template()["Parameters"]["InstanceStatusSweepMinutes"]
    assert parameter["Default"] == 1 and parameter["MinValue"] == 0
    resource = schedule()
    assert resource["Condition"] == "Sweep"
    every = resource["Properties"]["ScheduleExpression"]["Fn::If"]
    # "rate(1 minute)" is singular: "rate(1 minutes)" is refused by Scheduler.
    assert every == [
        "SweepEveryMinute",
        "rate(1 minute)",
        {"Fn::Sub": "rate(${InstanceStatusSweepMinutes} minutes)"},
    ]
    conditions = _template()["Conditions"]
    assert conditions["Sweep"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "InstanceStatusSweepMinutes"}, "0"]}]
    }


def test_describe_instance_status_is_granted_alone_and_only_to_the_function() -> None:
    granted = [
        (role, statement)
        for role, statement in _statements()
        if "ec2:DescribeInstanceStatus" in str(statement.get("Action"))
    ]
    assert len(granted) == 1
    role, statement = granted[0]
    assert role.startswith("Resources.InterruptionFunctionRole.")
    assert statement["Effect"] == "Allow"
    assert statement["Action"] == "ec2:DescribeInstanceStatus"
    assert statement["Resource"] == "*"


def test_the_threshold_parameter_reaches_the_setting() -> None:
    function = _resources()["InterruptionFunction"]["Properties"]
    variables = function["Environment"]["Variables"]
    assert variables["LIFEBOAT_IMPAIRED_THRESHOLD_SECONDS"] == {"Ref": "ImpairedThresholdSeconds"}
    assert _template()["Parameters"]["ImpairedThresholdSeconds"]["Default"] == 120
    assert load_settings({}).impaired_threshold == timedelta(seconds=120)
    read = load_settings({"LIFEBOAT_IMPAIRED_THRESHOLD_SECONDS": "300"})
    assert read.impaired_threshold == timedelta(seconds=300)


def _function_statements(parameters: dict[str, str]) -> list[dict[str, Any]]:
    from tests.support.cfn_resolve import resolve, resources

    role = resources(resolve(_template(), parameters))["InterruptionFunctionRole"]
    return [
        statement
        for policy in role["Properties"]["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def _function_env(parameters: dict[str, str]) -> dict[str, Any]:
    from tests.support.cfn_resolve import resolve, resources

    function = resources(resolve(_template(), parameters))["InterruptionFunction"]
    variables: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return variables


def test_describe_capacity_reservations_only_with_the_sweep_and_the_capacity_block_kind() -> None:
    """Least privilege (issue 37): the sweep's look at ending Capacity Blocks is the only
    caller of DescribeCapacityReservations; with the sweep off, or the kind left to
    Karpenter's expiration controller, the grant is gone and the setting says so."""
    on = [s for s in _function_statements({}) if s.get("Sid") == "DescribeCapacityReservations"]
    assert on == [
        {
            "Sid": "DescribeCapacityReservations",
            "Effect": "Allow",
            "Action": "ec2:DescribeCapacityReservations",
            "Resource": "*",
        }
    ]
    assert _function_env({})["LIFEBOAT_SWEEP_CAPACITY_BLOCKS"] == "true"
    for off in ({"InstanceStatusSweepMinutes": "0"}, {"HandleCapacityBlockExpiries": "false"}):
        granted = [str(s.get("Action")) for s in _function_statements(off)]
        assert not any("DescribeCapacityReservations" in action for action in granted), off
        assert _function_env(off)["LIFEBOAT_SWEEP_CAPACITY_BLOCKS"] == "false"
        assert (
            load_settings({"LIFEBOAT_SWEEP_CAPACITY_BLOCKS": "false"}).sweep_capacity_blocks
            is False
        )

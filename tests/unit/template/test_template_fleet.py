"""An organisation's Lifeboat stacks and their one view of the fleet, checked without AWS:
clusters found by their tag (ClusterTagKey), the rule forwarding Lifeboat's events to the
fleet's central bus in another account (with the role EventBridge assumes for it), and
deploy/fleet-bus.yaml (that bus, its policy, archive, CloudWatch sink and dashboard).

Cross-account ``events:PutEvents`` is judged as IAM does
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic-cross-account.html):
the caller's identity policy must allow it *and* the bus's resource policy must; an explicit
Deny in either wins. Conditions go through the operator evaluator of
tests/unit/template/test_template_queue_policy.py.
"""

from __future__ import annotations

import fnmatch
import json
from functools import cache
from typing import Any

import pytest
from cfnlint.decode import decode_str  # type: ignore[import-untyped]

from tests.support import iam_policy
from tests.support.cfn_lint import lint
from tests.support.iam_policy import operator_holds as _operator_holds
from tests.support.iam_policy import values as _values
from tests.support.paths import ROOT
from tests.unit.template.test_template import _matches, _resources, _template
from tests.unit.template.test_template_queue_policy import _arn


def _resolve(value: Any, parameters: dict[str, str], conditions: dict[str, bool]) -> Any:
    return iam_policy.resolve(value, parameters, conditions, _arn)


FLEET_TEMPLATE = ROOT / "deploy" / "fleet-bus.yaml"
ORG = "o-a1b2c3d4e5"
MONITORING = "999999999999"
MEMBER = "123456789012"
FLEET_BUS = f"arn:aws:events:us-east-1:{MONITORING}:event-bus/lifeboat-fleet"
FORWARD_ROLE = f"arn:aws:iam::{MEMBER}:role/lifeboat-FleetForwardRole"


@cache
def _fleet_template() -> dict[str, Any]:
    template, errors = decode_str(FLEET_TEMPLATE.read_text())
    assert not errors, errors
    return dict(template)


def test_the_fleet_template_is_cfn_lint_clean() -> None:
    problems = lint(FLEET_TEMPLATE.read_text())
    assert [str(p) for p in problems] == []


def test_the_fleet_template_has_no_transform() -> None:
    """It is deployed as it is (and could be by a StackSet): no macro."""
    assert "Transform" not in _fleet_template()


# --- who may put events on the central bus ------------------------------------------------


def _bus_statement() -> dict[str, Any]:
    policy = _fleet_template()["Resources"]["FleetBusPolicy"]["Properties"]
    assert policy["EventBusName"] == {"Ref": "FleetBus"}
    statement = _resolve(policy["Statement"], {"OrganizationId": ORG}, {})
    assert isinstance(statement, dict)
    statement["Resource"] = FLEET_BUS  # !GetAtt FleetBus.Arn
    return statement


def _forward_role_statements(bus: str = FLEET_BUS) -> list[dict[str, Any]]:
    role = _resources()["FleetForwardRole"]["Properties"]
    statements = [s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]]
    resolved = _resolve(statements, {"FleetEventBusArn": bus}, {})
    assert isinstance(resolved, list)
    return resolved


def _allows(statements: list[dict[str, Any]], context: dict[str, str], resource: str) -> bool:
    applying = [
        s
        for s in statements
        if any(fnmatch.fnmatchcase("events:PutEvents", a) for a in _values(s["Action"]))
        and any(fnmatch.fnmatchcase(resource, r) for r in _values(s["Resource"]))
        and all(_operator_holds(op, keys, context) for op, keys in s.get("Condition", {}).items())
    ]
    if any(s["Effect"] == "Deny" for s in applying):
        return False
    return any(s["Effect"] == "Allow" for s in applying)


def _may_put(
    context: dict[str, str], identity: list[dict[str, Any]], resource: str = FLEET_BUS
) -> bool:
    """Cross-account: the caller's identity policy and the bus policy must both allow."""
    return _allows(identity, context, resource) and _allows([_bus_statement()], context, resource)


def _lifeboat_put(org: str = ORG, source: str = "lifeboat") -> dict[str, str]:
    return {"aws:PrincipalOrgID": org, "events:source": source, "aws:PrincipalArn": FORWARD_ROLE}


def test_a_member_accounts_forwarding_role_may_put_lifeboats_events() -> None:
    assert _may_put(_lifeboat_put(), _forward_role_statements())


@pytest.mark.parametrize(
    ("why", "context"),
    [
        ("another organisation", _lifeboat_put(org="o-zzzzzzzzzz")),
        ("no organisation (a principal outside Organizations)", _lifeboat_put(org="")),
        ("another source than Lifeboat", _lifeboat_put(source="aws.ec2")),
    ],
)
def test_the_bus_refuses_others(why: str, context: dict[str, str]) -> None:
    context = {k: v for k, v in context.items() if v}
    allow_everything = [{"Effect": "Allow", "Action": "events:*", "Resource": "*"}]
    assert not _may_put(context, allow_everything), why


def test_the_forwarding_role_may_put_on_the_fleet_bus_only() -> None:
    other_bus = f"arn:aws:events:us-east-1:{MONITORING}:event-bus/default"
    assert not _allows(_forward_role_statements(), _lifeboat_put(), other_bus)
    role = _resources()["FleetForwardRole"]["Properties"]
    [trust] = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "events.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


# --- the forwarding rule ------------------------------------------------------------------


def test_the_forwarding_rule_sends_every_lifeboat_event_to_the_bus_with_its_role() -> None:
    rule = _resources()["FleetForwardRule"]
    assert rule["Condition"] == "ForwardToFleet"
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Ref": "FleetEventBusArn"}
    assert target["RoleArn"] == {"Fn::GetAtt": ["FleetForwardRole", "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}}
    pattern = rule["Properties"]["EventPattern"]
    for detail_type in ("Lifeboat Node Action", "Lifeboat Notice Given Up"):
        assert _matches(pattern, {"source": "lifeboat", "detail-type": detail_type})
    assert not _matches(pattern, {"source": "aws.ec2", "detail-type": "EC2 Spot Instance"})
    # Forwarded only what is published: without PublishNotifications there is nothing.
    assert _template()["Conditions"]["ForwardToFleet"]["Fn::And"][0] == {"Condition": "Notify"}
    assert _resources()["FleetForwardRole"]["Condition"] == "ForwardToFleet"


def test_the_fleet_bus_parameter_accepts_only_an_event_bus_arn() -> None:
    pattern = _template()["Parameters"]["FleetEventBusArn"]["AllowedPattern"]
    import re

    assert re.fullmatch(pattern, FLEET_BUS)
    assert re.fullmatch(pattern, "")
    assert not re.fullmatch(pattern, f"arn:aws:sqs:us-east-1:{MONITORING}:queue")


def test_metrics_are_linked_to_the_monitoring_sink_only_on_request() -> None:
    link = _resources()["FleetMonitoringLink"]
    assert link["Condition"] == "LinkToFleet"
    assert link["Properties"]["ResourceTypes"] == ["AWS::CloudWatch::Metric"]
    sink = _fleet_template()["Resources"]["FleetSink"]["Properties"]["Policy"]["Statement"]
    [grant] = sink
    assert grant["Condition"]["StringEquals"] == {"aws:PrincipalOrgID": {"Ref": "OrganizationId"}}
    assert grant["Condition"]["ForAllValues:StringEquals"] == {
        "oam:ResourceTypes": ["AWS::CloudWatch::Metric"]
    }


def test_the_fleet_dashboard_shows_outcomes_and_dead_letters_per_account() -> None:
    body = _fleet_template()["Resources"]["FleetDashboard"]["Properties"]["DashboardBody"]
    text = body["Fn::Sub"].replace("${!", "${").replace("${AWS::Region}", "us-east-1")
    widgets = json.loads(text)["widgets"]
    titles = " | ".join(w["properties"]["title"] for w in widgets)
    for shown in ("Warnings", "Acted on", "Deferred", "Rejected", "Dead-letter"):
        assert shown in titles
    labels = [m[0]["label"] for w in widgets for m in w["properties"]["metrics"]]
    assert all("PROP('AccountId')" in label for label in labels)
    assert any("Dim.nodepool" in label for label in labels)


# --- clusters found by their tag ------------------------------------------------------------


def _discovery_statements() -> dict[str, tuple[str | None, dict[str, Any]]]:
    role = _resources()["InterruptionFunctionRole"]["Properties"]
    found: dict[str, tuple[str | None, dict[str, Any]]] = {}
    for policy in role["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            if "Fn::If" in statement:
                condition, then, _ = statement["Fn::If"]
                found[then["Sid"]] = (condition, then)
            else:
                found[statement["Sid"]] = (None, statement)
    return found


def test_discovery_is_granted_only_with_a_tag_key() -> None:
    statements = _discovery_statements()
    condition, listing = statements["DiscoverTaggedClusters"]
    assert condition == "DiscoverClusters"
    assert listing["Action"] == "eks:ListClusters" and listing["Resource"] == "*"
    condition, describe = statements["DescribeTaggedClusters"]
    assert condition == "DiscoverClusters"
    assert describe["Action"] == "eks:DescribeCluster"
    assert describe["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/*"
    }
    assert _template()["Conditions"]["DiscoverClusters"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "ClusterTagKey"}, ""]}]
    }


def test_a_stack_without_names_or_a_tag_key_is_refused_by_a_rule() -> None:
    [assertion] = _template()["Rules"]["ClustersNamedOrTagged"]["Assertions"]
    assert assertion["Assert"] == {
        "Fn::Or": [
            {"Fn::Not": [{"Fn::EachMemberEquals": [{"Ref": "ClusterNames"}, ""]}]},
            {"Fn::Not": [{"Fn::Equals": [{"Ref": "ClusterTagKey"}, ""]}]},
        ]
    }


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("lifeboat.dev/managed", True),
        ("", True),
        ("aws:cloudformation:stack-name", False),
        ("AWS:x", False),
        ("a=b", False),
        ("x" * 129, False),
    ],
)
def test_the_tag_key_parameter_takes_what_eks_and_the_function_take(key: str, valid: bool) -> None:
    import re

    from lifeboat.model.settings import SettingsError, load_settings

    pattern = _template()["Parameters"]["ClusterTagKey"]["AllowedPattern"]
    assert bool(re.fullmatch(pattern, key)) is valid
    if valid:
        load_settings({"LIFEBOAT_CLUSTER_TAG_KEY": key})
    else:
        with pytest.raises(SettingsError):
            load_settings({"LIFEBOAT_CLUSTER_TAG_KEY": key})

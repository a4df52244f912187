"""The function in a VPC, for clusters whose API endpoint is private or limited to some CIDRs
(issue 25): SubnetIds / SecurityGroupIds, the network-interface permissions Lambda needs, and
the VPC endpoints VpcEndpoints asks for, one per AWS API the code calls.

The template is resolved for each mode as CloudFormation would (tests/support/cfn_resolve.py);
tests/unit/template/test_template_switches.py
lints each mode with cfn-lint and the serverless rules.
"""

from __future__ import annotations

import re
from typing import Any

from tests.support.cfn_resolve import resolve, resources
from tests.support.paths import ROOT
from tests.unit.template.test_template import _template

LAYER = ROOT / "layers" / "lifeboat" / "lifeboat"
SUBNETS = ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]
SECURITY_GROUPS = ["sg-0123456789abcdef0", "sg-0fedcba9876543210"]
VPC = {"SubnetIds": ",".join(SUBNETS), "SecurityGroupIds": ",".join(SECURITY_GROUPS)}
ROUTE_TABLES = ["rtb-0123456789abcdef0"]
ENDPOINT_SERVICES = ["ec2", "eks", "sqs", "scheduler", "events", "autoscaling", "xray", "dynamodb"]
WITH_ENDPOINTS = {
    **VPC,
    "VpcId": "vpc-0123456789abcdef0",
    "VpcEndpoints": ",".join(ENDPOINT_SERVICES),
    "VpcEndpointRouteTableIds": ",".join(ROUTE_TABLES),
}
VPC_SIDS = {
    "VpcNetworkInterfaces",
    "VpcNetworkInterfacesSubnets",
    "VpcNetworkInterfacesSecurityGroups",
    "VpcDescribe",
}
# The AWS managed AWSLambdaVPCAccessExecutionRole, less its CloudWatch Logs actions (the
# role's Logs statement covers the function's log group).
LAMBDA_VPC_ACTIONS = {
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
}


def _function(template: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = resources(template)["InterruptionFunction"]["Properties"]
    return properties


def _role_statements(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    role = resources(template)["InterruptionFunctionRole"]["Properties"]
    return {
        statement["Sid"]: statement
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    }


def _endpoints(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Service name suffix (``ec2``...) -> the endpoint's properties."""
    found: dict[str, dict[str, Any]] = {}
    for resource in resources(template).values():
        if resource["Type"] == "AWS::EC2::VPCEndpoint":
            properties = resource["Properties"]
            service_name = properties["ServiceName"]["Fn::Sub"]
            prefix = "com.amazonaws.${AWS::Region}."
            assert service_name.startswith(prefix)
            found[service_name.removeprefix(prefix)] = properties
    return found


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return set(action) if isinstance(action, list) else {action}


def test_by_default_the_function_is_outside_any_vpc() -> None:
    template = resolve(_template(), {})
    assert "VpcConfig" not in _function(template)
    assert not VPC_SIDS & set(_role_statements(template))
    assert not {
        r["Type"] for r in resources(template).values() if r["Type"].startswith("AWS::EC2::")
    }


def test_subnets_and_security_groups_put_the_function_in_the_vpc() -> None:
    template = resolve(_template(), VPC)
    assert _function(template)["VpcConfig"] == {
        "SubnetIds": {"Ref": "SubnetIds"},
        "SecurityGroupIds": {"Ref": "SecurityGroupIds"},
    }
    # No endpoint unless VpcEndpoints asks: a VPC with a NAT, or endpoints of its own.
    assert _endpoints(template) == {}
    assert "VpcEndpointSecurityGroup" not in resources(template)


def test_in_a_vpc_the_role_has_lambdas_network_interface_actions_scoped() -> None:
    statements = _role_statements(resolve(_template(), VPC))
    granted = set().union(*(_actions(statements[sid]) for sid in VPC_SIDS))
    assert granted == LAMBDA_VPC_ACTIONS
    # CreateNetworkInterface is authorised on the interface, the subnet and each security
    # group: the subnet and the groups must be the stack's.
    subnets = statements["VpcNetworkInterfacesSubnets"]
    assert subnets["Condition"] == {"StringEquals": {"ec2:SubnetID": {"Ref": "SubnetIds"}}}
    groups = statements["VpcNetworkInterfacesSecurityGroups"]
    assert groups["Condition"] == {
        "StringEquals": {"ec2:SecurityGroupID": {"Ref": "SecurityGroupIds"}}
    }
    account = "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}"
    interfaces = statements["VpcNetworkInterfaces"]["Resource"]
    assert interfaces == {"Fn::Sub": f"{account}:network-interface/*"}
    assert statements["VpcDescribe"]["Resource"] == "*"
    assert _actions(statements["VpcDescribe"]) == {
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
    }


def test_every_endpoint_asked_for_is_created_and_reachable_from_the_function() -> None:
    template = resolve(_template(), WITH_ENDPOINTS)
    endpoints = _endpoints(template)
    assert set(endpoints) == set(ENDPOINT_SERVICES)
    for service, properties in endpoints.items():
        assert properties["VpcId"] == {"Ref": "VpcId"}, service
        if service == "dynamodb":
            # A gateway endpoint: free, routed in the subnets' route tables.
            assert properties["VpcEndpointType"] == "Gateway"
            assert properties["RouteTableIds"] == {"Ref": "VpcEndpointRouteTableIds"}
            continue
        assert properties["VpcEndpointType"] == "Interface", service
        # Private DNS: the SDK's default endpoint names resolve to the endpoint.
        assert properties["PrivateDnsEnabled"] is True, service
        assert properties["SubnetIds"] == {"Ref": "SubnetIds"}, service
        assert properties["SecurityGroupIds"] == [{"Ref": "VpcEndpointSecurityGroup"}], service
    group = resources(template)["VpcEndpointSecurityGroup"]["Properties"]
    assert group["VpcId"] == {"Ref": "VpcId"}
    [ingress] = group["SecurityGroupIngress"]
    assert (ingress["IpProtocol"], ingress["FromPort"], ingress["ToPort"]) == ("tcp", 443, 443)
    assert ingress["SourceSecurityGroupId"] == {"Fn::Select": [0, {"Ref": "SecurityGroupIds"}]}


def test_only_the_endpoints_named_are_created() -> None:
    """A VPC that already has an endpoint with private DNS for a service cannot take a
    second one: each is created only when named."""
    for named in (["eks"], ["scheduler", "sqs"], ["dynamodb"], ENDPOINT_SERVICES[:-1]):
        template = resolve(_template(), {**WITH_ENDPOINTS, "VpcEndpoints": ",".join(named)})
        assert set(_endpoints(template)) == set(named), named
        interface = set(named) - {"dynamodb"}
        assert ("VpcEndpointSecurityGroup" in resources(template)) == bool(interface), named


def test_endpoints_need_the_function_in_the_vpc() -> None:
    """Endpoints without SubnetIds would have no interfaces to live in: none is created."""
    outside = {k: v for k, v in WITH_ENDPOINTS.items() if k not in VPC}
    assert _endpoints(resolve(_template(), outside)) == {}


def test_no_endpoint_service_name_is_part_of_another() -> None:
    """The template's conditions test "VpcEndpoints names X" by splitting the joined list on
    X: exact only while no name contains another."""
    for name in ENDPOINT_SERVICES:
        assert [other for other in ENDPOINT_SERVICES if name in other] == [name]
    pattern = _template()["Parameters"]["VpcEndpoints"]["AllowedPattern"]
    allowed = re.fullmatch(r"\^\$\|\^\(([a-z0-9|]+)\)\$", pattern)
    assert allowed, pattern
    assert sorted(allowed.group(1).split("|")) == sorted(ENDPOINT_SERVICES)


def _services_the_code_calls() -> set[str]:
    """boto3 clients the function makes: ``session.client("x", ...)`` anywhere in the layer,
    and service.py's lazily made ones."""
    source = {path.name: path.read_text() for path in LAYER.rglob("*.py")}
    client = re.compile(r'\.client\(\s*"([a-z0-9-]+)"')
    # Clients made with Lifeboat's retries and timeouts (lifeboat.aws.retries.make_client).
    retried = re.compile(r'make_client\(\s*\w+,\s*"([a-z0-9-]+)"')
    called = {name for text in source.values() for name in client.findall(text)}
    called |= {name for text in source.values() for name in retried.findall(text)}
    lazy_clients = r"LazyClient\(session, name, region\)\s+for name in \(([^)]*)\)"
    lazy = re.search(lazy_clients, source["service.py"])
    assert lazy, "service.py no longer makes its lazy clients this way: update this test"
    called |= set(re.findall(r'"([a-z0-9-]+)"', lazy.group(1)))
    return called


def test_the_endpoints_cover_every_api_the_function_calls() -> None:
    """STS is the one client with no endpoint: the EKS token is a presigned URL built
    without a call (the cluster's authenticator calls STS, not the function). X-Ray gets one
    for the traces Active tracing sends. CloudWatch Logs needs none: Lambda ships the logs."""
    called = _services_the_code_calls()
    assert {"ec2", "eks", "dynamodb", "scheduler", "autoscaling", "sqs", "events"} <= called
    assert called - {"sts"} | {"xray"} == set(ENDPOINT_SERVICES)
    eks_auth = (LAYER / "kube" / "eks_auth.py").read_text()
    sts_uses = set(re.findall(r"(?:sts_client|self\._sts)\.([a-z_]+)", eks_auth))
    assert sts_uses <= {"generate_presigned_url", "meta"}, sts_uses
    # EKS Pod Identity's API (eks-auth) is not called: the function's role comes from Lambda.
    assert "eks-auth" not in called

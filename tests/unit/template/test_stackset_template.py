"""The StackSets path (docs/organisation.md): template.yaml, packaged, made into
the plain CloudFormation a service-managed StackSet deploys (lifeboat_local.stackset), then
validated as such: cfn-lint clean, no macro left (service-managed StackSets refuse AWS::Serverless
and AWS::LanguageExtensions: CreateStackSet's Capabilities documentation), no parameter
without a default (nothing per account), the code read from the stack's own region.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from lifeboat_local.stackset import StackSetTemplateError, main, processed_template
from tests.support.cfn_lint import lint
from tests.unit.template.test_template import _template

PREFIX = "lifeboat-artifacts-111111111111"


def _packaged() -> dict[str, Any]:
    """template.yaml as ``sam package`` leaves it: code and layer in S3."""
    template = copy.deepcopy(_template())
    resources = template["Resources"]
    resources["InterruptionFunction"]["Properties"]["CodeUri"] = "s3://b-us-east-1/fn.zip"
    resources["LifeboatLayer"]["Properties"]["ContentUri"] = "s3://b-us-east-1/layer.zip"
    return template


@cache
def _processed() -> dict[str, Any]:
    return processed_template(_packaged(), PREFIX)


def test_no_macro_is_left() -> None:
    processed = _processed()
    text = json.dumps(processed)
    assert "Transform" not in processed
    assert "Fn::ForEach" not in text
    assert "AWS::Serverless::" not in text
    assert "AWS::LanguageExtensions" not in text


def test_the_stackset_template_is_cfn_lint_clean() -> None:
    assert [str(problem) for problem in lint(json.dumps(_processed()))] == []


def test_nothing_is_asked_per_account() -> None:
    """Every parameter has a default: one set of StackSet parameters fits every account."""
    parameters = _processed()["Parameters"]
    assert [name for name, p in parameters.items() if "Default" not in p] == []


def test_what_the_sam_transform_resolves_is_chosen_when_processing() -> None:
    """SAM writes DeploymentType into the CodeDeploy group: a StackSet parameter could not
    change it, so it is given to the processing and leaves the parameters."""
    assert "DeploymentType" not in _processed()["Parameters"]

    def configuration(processed: dict[str, Any]) -> Any:
        [group] = [
            r
            for r in processed["Resources"].values()
            if r["Type"] == "AWS::CodeDeploy::DeploymentGroup"
        ]
        return group["Properties"]["DeploymentConfigName"]

    assert "Canary10Percent5Minutes" in json.dumps(configuration(_processed()))
    linear = processed_template(_packaged(), PREFIX, {"DeploymentType": "AllAtOnce"})
    assert "AllAtOnce" in json.dumps(configuration(linear))


def test_the_code_is_read_from_the_stacks_own_region() -> None:
    resources = _processed()["Resources"]
    bucket = {"Fn::Sub": f"{PREFIX}-${{AWS::Region}}"}
    [function] = [r for r in resources.values() if r["Type"] == "AWS::Lambda::Function"]
    assert function["Properties"]["Code"] == {"S3Bucket": bucket, "S3Key": "fn.zip"}
    [layer] = [r for r in resources.values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    assert layer["Properties"]["Content"] == {"S3Bucket": bucket, "S3Key": "layer.zip"}


def test_no_cluster_is_named_and_the_tagged_ones_may_be_found() -> None:
    # What only named clusters' access entries used is gone: it would do nothing here.
    assert "CreateAccessEntry" not in _processed()["Parameters"]
    assert "AccessEntriesForNamedClusters" not in _processed()["Conditions"]
    assert "ClusterTagKey" in _processed()["Parameters"]
    resources = _processed()["Resources"]
    assert not any(r["Type"] == "AWS::EKS::AccessEntry" for r in resources.values())
    assert not any(name.startswith("DescribeClusterPolicy") for name in resources)
    role = resources["InterruptionFunctionRole"]["Properties"]
    statements = json.dumps(role["Policies"])
    assert '"DiscoverTaggedClusters"' in statements
    env = next(r for r in resources.values() if r["Type"] == "AWS::Lambda::Function")
    variables = env["Properties"]["Environment"]["Variables"]
    assert variables["LIFEBOAT_CLUSTER_TAG_KEY"] == {"Ref": "ClusterTagKey"}


def _assert(rule: Any, parameters: dict[str, Any]) -> Any:
    """The rule functions ClustersNamedOrTagged uses, as CloudFormation evaluates them."""
    if isinstance(rule, dict):
        [(function, argument)] = rule.items()
        if function == "Ref":
            return parameters[argument]
        values = [_assert(a, parameters) for a in argument]
        if function == "Fn::Or":
            return any(values)
        if function == "Fn::Not":
            return not values[0]
        if function == "Fn::Equals":
            return values[0] == values[1]
        if function == "Fn::EachMemberEquals":
            return all(member == values[1] for member in values[0])
        raise AssertionError(f"teach the evaluator {function}")
    return rule


@pytest.mark.parametrize(
    ("parameters", "accepted"),
    [
        ({"ClusterNames": [""], "ClusterTagKey": "lifeboat.dev/managed"}, True),  # a StackSet
        ({"ClusterNames": ["prod"], "ClusterTagKey": ""}, True),  # one stack, as before
        ({"ClusterNames": [""], "ClusterTagKey": ""}, False),  # serves nothing
    ],
)
def test_the_stackset_parameters_pass_the_templates_rule(
    parameters: dict[str, Any], accepted: bool
) -> None:
    [assertion] = _processed()["Rules"]["ClustersNamedOrTagged"]["Assertions"]
    assert _assert(assertion["Assert"], parameters) is accepted


def test_a_template_not_packaged_is_refused_naming_the_property() -> None:
    with pytest.raises(StackSetTemplateError, match=r"Properties\.(CodeUri|ContentUri) is '"):
        processed_template(copy.deepcopy(_template()))


def test_the_command_writes_the_template_and_says_how_to_pass_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packaged = tmp_path / "packaged.json"
    packaged.write_text(json.dumps(_packaged()))
    out = tmp_path / "stackset.json"
    assert main([str(packaged), "--out", str(out), "--artifact-bucket-prefix", PREFIX]) == 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(_processed()))
    said = capsys.readouterr().out
    assert "bytes" in said and "--template-" in said
    assert main([str(tmp_path / "missing.yaml"), "--out", str(out)]) == 1
    assert "missing.yaml" in capsys.readouterr().err


def test_a_missing_packaged_template_names_the_step_that_comes_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make stackset-template` before `sam package`: one line saying to package first (and
    how), not a bare "No such file or directory"."""
    missing = tmp_path / ".aws-sam" / "packaged.yaml"
    assert main([str(missing), "--out", str(tmp_path / "out.json")]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("stackset: error: no packaged template: package first")
    assert f"sam package --s3-bucket BUCKET --output-template-file {missing}" in line
    assert not (tmp_path / "out.json").exists()

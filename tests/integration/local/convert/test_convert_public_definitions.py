"""`lifeboat convert` of public node-group definitions (issue 34, "Done when"): the AWS CLI's
examples, terraform-aws-eks' test stack and eksctl's examples, turned into the AWS answers
they produce (tests/fixtures/convert, each file naming its source). Each converts to a pool
and class that the API server with Karpenter's CRDs accepts (kubemu's validation, as
`kubectl apply` would meet it) and that launch what the group launched: its instance types,
capacity type, architectures, zones, AMI, root volume and instance metadata options; or
convert refuses it, naming why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from kubemu import Emulator
from tests.conftest import CliRun
from tests.integration.local.convert.test_convert import apply_all, by_kind, requirement
from tests.support import cyaml
from tests.support.paths import ROOT
from tests.support.saved_aws import SavedAws

FIXTURES = ROOT / "tests" / "fixtures" / "convert"
DEFINITIONS = sorted(p for p in FIXTURES.glob("*.yaml") if p.name != "instance-types.yaml")


def _answers(definition: dict[str, Any]) -> dict[str, Any]:
    answers = dict(definition["answers"])
    answers.setdefault(
        "DescribeInstanceTypes", cyaml.safe_load((FIXTURES / "instance-types.yaml").read_text())
    )
    return answers


def _convert(
    path: Path, cli: Callable[..., CliRun], monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], CliRun]:
    definition = cyaml.safe_load(path.read_text())
    saved = SavedAws(_answers(definition))
    monkeypatch.setattr(boto3, "Session", lambda **_: saved)
    run = cli(
        "convert", "--node-group", definition["group"], "--cluster-name", definition["cluster"],
        *definition.get("args", []),
    )  # fmt: skip
    return definition, run


def _check_pool(pool: dict[str, Any], expect: dict[str, Any]) -> None:
    assert (
        requirement(pool, "node.kubernetes.io/instance-type")["values"] == expect["instance_types"]
    )
    assert requirement(pool, "karpenter.sh/capacity-type")["values"] == [expect["capacity_type"]]
    assert requirement(pool, "kubernetes.io/arch")["values"] == expect["arch"]
    if expect.get("zones"):
        assert requirement(pool, "topology.kubernetes.io/zone")["values"] == expect["zones"]
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert pool["spec"]["limits"] == expect["limits"]
    template = pool["spec"]["template"]
    assert (template.get("metadata") or {}).get("labels", {}) == expect.get("labels", {})
    assert template["spec"].get("taints", []) == expect.get("taints", [])


def _check_class(spec: dict[str, Any], expect: dict[str, Any]) -> None:
    assert spec["amiSelectorTerms"] == expect["ami"]
    if "ami_family" in expect:
        assert spec["amiFamily"] == expect["ami_family"]
    if "volume" in expect:
        assert spec["blockDeviceMappings"] == [expect["volume"]]
    assert spec.get("metadataOptions") == expect.get("metadata")
    assert spec.get("role", spec.get("instanceProfile")) == expect["role"]


@pytest.mark.parametrize("path", DEFINITIONS, ids=[p.stem for p in DEFINITIONS])
def test_a_public_definition_converts_to_what_the_group_launched(
    path: Path, cli: Callable[..., CliRun], emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition, run = _convert(path, cli, monkeypatch)
    expect = definition["expect"]
    if "refused" in expect:
        assert run.code == 2
        assert expect["refused"] in run.err
        assert by_kind(run.out) == {}
        return
    assert run.code == 0, run.err
    objects = by_kind(run.out)
    pool = objects[("NodePool", expect["pool"])]
    _check_pool(pool, expect)
    _check_class(objects[("EC2NodeClass", expect["pool"])]["spec"], expect)
    annotation = pool["metadata"]["annotations"]["lifeboat.dev/conversion"]
    for text in expect.get("said", []):
        assert text in annotation  # and on stderr, in other words
    apply_all(emulator, run.out)

"""`lifeboat patching` (issue 28, item 2): nodes' AMIs (EC2 DescribeInstances of their
providerID) against AWS's public SSM parameters for the recommended EKS-optimized and
Bottlerocket AMIs, ages from DescribeImages' CreationDate, the exit-3 gate, and the rotate
lines that select exactly the outdated nodes. AWS is moto, through boto3.

AWS reserves the ``/aws/service/...`` names (PutParameter answers AccessDenied, in moto as in
AWS), so the public parameters are seeded into moto's SSM backend as AWS publishes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.ssm.models import Parameter, ssm_backends

from tests.conftest import CliRun
from tests.support import cyaml

REGION = "eu-west-1"
AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
AL2023 = (
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
)
AL2023_ARM = (
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/image_id"
)
BOTTLEROCKET = "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id"


@pytest.fixture
def aws_region() -> str:
    return REGION


def publish(name: str, value: str) -> None:
    """A public parameter, as AWS publishes it."""
    backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]
    backend._parameters[name].append(
        Parameter(  # type: ignore[abstract]
            account_id=DEFAULT_ACCOUNT_ID,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=AT,
            version=1,
            data_type="aws:ec2:image",
        )
    )


def image(aws: boto3.Session, name: str, created: datetime) -> str:
    ami: str = aws.client("ec2").register_image(Name=name, RootDeviceName="/dev/xvda")["ImageId"]
    ec2_backends[DEFAULT_ACCOUNT_ID][REGION].amis[ami].creation_date = created
    return ami


def instance(aws: boto3.Session, ami: str) -> str:
    found: str = aws.client("ec2").run_instances(ImageId=ami, MinCount=1, MaxCount=1)["Instances"][
        0
    ]["InstanceId"]
    return found


def node(
    name: str,
    instance_id: str,
    labels: dict[str, str],
    os_image: str = "Amazon Linux 2023.6.20241121",
    arch: str = "amd64",
    kubelet: str = "v1.31.2-eks-94953ac",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"aws:///{REGION}a/{instance_id}"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": kubelet, "osImage": os_image, "architecture": arch},
        },
    }


@pytest.fixture
def fleet(aws: boto3.Session, tmp_path: Path) -> dict[str, str]:
    """legacy (node group): one node on an AMI 90 days old, one 20 days old, one current;
    general (NodePool): a Bottlerocket node on the recommended AMI and an arm64 AL2023 node
    whose parameter AWS does not publish here; one node whose instance EC2 does not know."""
    old = image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20240901", AT - timedelta(90))
    recent = image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20241110", AT - timedelta(20))
    latest = image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20241121", AT - timedelta(9))
    rocket = image(aws, "bottlerocket-aws-k8s-1.31-x86_64-v1.27.0", AT - timedelta(5))
    publish(AL2023, latest)
    publish(BOTTLEROCKET, rocket)
    group = {"eks.amazonaws.com/nodegroup": "legacy"}
    pool = {"karpenter.sh/nodepool": "general"}
    nodes = [
        node("n-old", instance(aws, old), group),
        node("n-recent", instance(aws, recent), group),
        node("n-latest", instance(aws, latest), group),
        node("n-rocket", instance(aws, rocket), pool, os_image="Bottlerocket OS 1.27.0"),
        node("n-arm", instance(aws, latest), pool, arch="arm64"),
        node("n-gone", "i-0123456789abcdef0", {**group, "eks.amazonaws.com/nodegroup-image": old}),
    ]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump_all(nodes))
    return {"cluster": str(cluster), "old": old, "recent": recent, "latest": latest}


def patching(cli: Callable[..., CliRun], fleet: dict[str, str], *extra: str) -> CliRun:
    return cli("patching", "--cluster", fleet["cluster"], "--at", AT.isoformat(), *extra)


def test_each_node_is_judged_against_its_recommended_ami(
    cli: Callable[..., CliRun], fleet: dict[str, str]
) -> None:
    run = patching(cli, fleet, "--json", "--cluster-name", "prod-a")
    assert run.code == 3, run.err
    document = json.loads(run.out)
    by_node = {n["node"]: n for n in document["nodes"]}
    assert {name: n["status"] for name, n in by_node.items()} == {
        "n-old": "outdated",
        "n-recent": "outdated",
        "n-latest": "current",
        "n-rocket": "current",
        "n-arm": "unknown",  # AWS publishes no arm64 parameter in this account's moto
        "n-gone": "outdated",
    }
    assert by_node["n-old"]["age_days"] == 90
    assert by_node["n-old"]["recommended"] == fleet["latest"]
    assert by_node["n-old"]["parameter"] == AL2023
    assert by_node["n-old"]["ami_source"] == "ec2"
    assert by_node["n-gone"]["ami_source"] == "label"  # EC2 does not know its instance
    assert by_node["n-rocket"]["parameter"] == BOTTLEROCKET
    assert by_node["n-arm"]["parameter"] == AL2023_ARM
    # Over 30 days (the default): the 90-day-old AMI, on two nodes; not the 20-day-old one.
    assert {n["node"] for n in document["nodes"] if n["over_max_age"]} == {"n-old", "n-gone"}
    assert document["outdated_amis"] == sorted({fleet["old"], fleet["recent"]})
    legacy = next(g for g in document["groups"] if g["group"] == "node group legacy")
    assert (legacy["nodes"], legacy["current"], legacy["outdated"], legacy["over_max_age"]) == (
        4,
        1,
        3,
        2,
    )
    assert legacy["rotate"] == (
        "lifeboat rotate patch-legacy --cluster-name prod-a --node-group legacy "
        + " ".join(f"--ami {a}" for a in sorted({fleet["old"], fleet["recent"]}))
    )
    general = next(g for g in document["groups"] if g["group"] == "NodePool general")
    assert general["rotate"] is None


def test_the_gate_follows_max_age_days(cli: Callable[..., CliRun], fleet: dict[str, str]) -> None:
    assert patching(cli, fleet, "--max-age-days", "90").code == 0
    assert patching(cli, fleet, "--max-age-days", "89").code == 3
    assert patching(cli, fleet, "--max-age-days", "19").code == 3


def test_the_rotate_line_is_a_valid_rotation_request(
    cli: Callable[..., CliRun], fleet: dict[str, str], tmp_path: Path
) -> None:
    """The printed line feeds lifeboat rotate as it is: the request it writes selects the
    outdated AMIs (checked by the Lambda's own parser)."""
    run = patching(cli, fleet, "--cluster-name", "prod-a")
    line = next(x.strip() for x in run.out.splitlines() if x.strip().startswith("lifeboat rotate"))
    event = tmp_path / "rotate.json"
    argv = [*line.split()[1:], "--out", str(event)]
    rotated = cli(*argv)
    assert rotated.code == 0, rotated.err
    selector = json.loads(event.read_text())["detail"]["selector"]
    assert sorted(selector["amis"]) == sorted({fleet["old"], fleet["recent"]})
    assert selector["labels"] == {"eks.amazonaws.com/nodegroup": "legacy"}


def test_text_output_names_each_node_and_group(
    cli: Callable[..., CliRun], fleet: dict[str, str]
) -> None:
    run = patching(cli, fleet)
    assert f"outdated  n-old  {fleet['old']} (90d) -> {fleet['latest']}  over max age" in run.out
    assert f"current   n-latest  {fleet['latest']} (9d)" in run.out
    assert f"unknown   n-arm  no recommended AMI known for {AL2023_ARM}" in run.out
    assert "node group legacy: 4 node(s), 1 current, 3 outdated (2 over max age), 0 unknown" in (
        run.out
    )

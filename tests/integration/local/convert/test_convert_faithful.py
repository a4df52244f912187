"""`lifeboat convert` gives pools and classes that behave like the groups they replace
(issue 34, item 3): expiry stated (Never by default), root volumes encrypted with the
template's KMS key, the template's instance metadata options, the AMI pinned, node group
names mapped to valid pool names, one AMI per architecture for mixed groups, architectures
as Karpenter maps them, the Spot share said. Every output is created on the emulator, whose
validation of Karpenter's CRDs decides, as a live API server's would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from kubemu import Emulator
from lifeboat_local.convert.capacity import from_describe
from lifeboat_local.convert.names import is_valid, pool_name
from tests.conftest import CliRun
from tests.integration.local.convert.test_convert import (
    ISSUE_SETTINGS,
    _eks_cluster,
    _eks_image,
    _network,
    apply_all,
    by_kind,
    requirement,
    write,
)

KMS_KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
PINNED = ("--ami-alias", "al2023@v20241121")


@pytest.fixture
def aws_region() -> str:
    return "eu-west-1"


def _settings_run(
    tmp_path: Path, cli: Callable[..., CliRun], *extra: str, text: str = ISSUE_SETTINGS
) -> CliRun:
    return cli(
        "convert", "--settings", write(tmp_path, text), "--cluster-name", "prod-a",
        "--zone", "eu-west-1b", *extra,
    )  # fmt: skip


# --- expireAfter -------------------------------------------------------------------------


def test_expire_after_is_never_by_default_and_the_annotation_says_so(
    tmp_path: Path, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """Karpenter's CRD defaults expireAfter to 720h and expiry is forceful (core
    pkg/controllers/nodeclaim/expiration: the claim is deleted, no budget, no do-not-disrupt):
    a node group's nodes never expire, so the pool says Never, and the annotation says it."""
    run = _settings_run(tmp_path, cli, *PINNED)
    assert run.code == 0, run.err
    pool = by_kind(run.out)[("NodePool", "m5.8xlarge-min-300-max-2500")]
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"
    assert "expireAfter: Never" in pool["metadata"]["annotations"]["lifeboat.dev/conversion"]
    apply_all(emulator, run.out)


def test_expire_after_chosen_is_written_and_called_forceful(
    tmp_path: Path, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    run = _settings_run(tmp_path, cli, *PINNED, "--expire-after", "720h")
    assert run.code == 0, run.err
    pool = by_kind(run.out)[("NodePool", "m5.8xlarge-min-300-max-2500")]
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "720h"
    annotation = pool["metadata"]["annotations"]["lifeboat.dev/conversion"]
    assert "expireAfter: 720h (forceful" in annotation
    apply_all(emulator, run.out)
    wrong = _settings_run(tmp_path, cli, *PINNED, "--expire-after", "30d")
    assert wrong.code == 1
    assert "--expire-after '30d'" in wrong.err


# --- the AMI ------------------------------------------------------------------------------


def test_settings_without_an_ami_are_refused_with_the_fix(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """No silent al2023@latest: Karpenter's docs advise against latest in production (every
    release drifts every node; a node group's AMI never changes by itself)."""
    run = _settings_run(tmp_path, cli)
    assert run.code == 2
    assert "names no AMI: pass --ami-alias FAMILY@VERSION" in run.err


def test_ami_alias_latest_is_followed_only_when_asked_and_warned_about(
    tmp_path: Path, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    run = _settings_run(tmp_path, cli, "--ami-alias", "latest")
    assert run.code == 0, run.err
    node_class = by_kind(run.out)[("EC2NodeClass", "m5.8xlarge-min-300-max-2500")]
    assert node_class["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert "warning:" in run.err and "every new AMI release will replace" in run.err
    apply_all(emulator, run.out)
    pinned = _settings_run(tmp_path, cli, *PINNED)
    assert "warning" not in pinned.err
    assert by_kind(pinned.out)[("EC2NodeClass", "m5.8xlarge-min-300-max-2500")]["spec"][
        "amiSelectorTerms"
    ] == [{"alias": "al2023@v20241121"}]
    bad = _settings_run(tmp_path, cli, "--ami-alias", "ubuntu@v1")
    assert bad.code == 1 and "FAMILY one of al2, al2023" in bad.err
    windows = _settings_run(tmp_path, cli, "--ami-alias", "windows2022@v20241121")
    assert windows.code == 1 and "Windows aliases take no version" in windows.err


def _managed(aws: boto3.Session, name: str = "legacy", **extra: Any) -> dict[str, str]:
    net = _network(aws)
    _eks_cluster(aws, net)
    settings: dict[str, Any] = {
        "clusterName": "prod-a",
        "nodegroupName": name,
        "subnets": [net["a"], net["b"]],
        "nodeRole": "arn:aws:iam::123456789012:role/NodeRole",
        "instanceTypes": ["m6i.large"],
        "scalingConfig": {"minSize": 0, "maxSize": 4, "desiredSize": 1},
        **extra,
    }
    aws.client("eks").create_nodegroup(**settings)
    return net


def test_a_windows_group_is_put_on_latest_only_when_asked(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """Windows aliases take no version (the EC2NodeClass CRD: "The Windows families do not
    support version pinning"): no pin is possible, so latest only with --ami-alias latest."""
    _managed(aws, amiType="WINDOWS_CORE_2022_x86_64", releaseVersion="1.31.2-20241121")
    run = cli("convert", "--node-group", "legacy", "--cluster-name", "prod-a")
    assert run.code == 2
    assert "names no AMI" in run.err
    latest = cli("convert", "--node-group", "legacy", "--cluster-name", "prod-a",
                 "--ami-alias", "latest")  # fmt: skip
    assert latest.code == 0, latest.err
    spec = by_kind(latest.out)[("EC2NodeClass", "legacy")]["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "windows2022@latest"}]
    assert "warning:" in latest.err
    apply_all(emulator, latest.out)


def test_a_bottlerocket_group_is_pinned_to_its_release(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """EKS's Bottlerocket releaseVersion (1.20.3-5d9ac849) is the alias bottlerocket@v1.20.3."""
    _managed(aws, amiType="BOTTLEROCKET_x86_64", releaseVersion="1.20.3-5d9ac849")
    run = cli("convert", "--node-group", "legacy", "--cluster-name", "prod-a")
    assert run.code == 0, run.err
    node_class = by_kind(run.out)[("EC2NodeClass", "legacy")]
    assert node_class["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.20.3"}]
    apply_all(emulator, run.out)


# --- names --------------------------------------------------------------------------------


def test_node_group_names_map_to_valid_pool_names_deterministically() -> None:
    """EKS accepts `_` in node group names (terraform-aws-eks makes them from map keys); a
    NodePool name is a DNS subdomain and the value of the karpenter.sh/nodepool label."""
    assert pool_name("legacy") == "legacy"
    mapped = pool_name("default_node_group")
    assert mapped.startswith("default-node-group-") and is_valid(mapped)
    assert pool_name("default_node_group") == mapped
    assert len({pool_name("ng_1"), pool_name("ng-1"), pool_name("NG-1")}) == 3
    long = pool_name("x_" * 100)
    assert is_valid(long) and len(long) <= 63
    assert is_valid(pool_name("___"))


def test_a_group_named_with_an_underscore_converts_and_keeps_its_name(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    _managed(
        aws,
        "default_node_group",
        amiType="AL2023_x86_64_STANDARD",
        releaseVersion="1.31.2-20241121",
    )
    run = cli("convert", "--node-group", "default_node_group", "--cluster-name", "prod-a")
    assert run.code == 0, run.err
    pools = [o for (kind, _), o in by_kind(run.out).items() if kind == "NodePool"]
    assert len(pools) == 1
    pool = pools[0]
    assert pool["metadata"]["name"] == pool_name("default_node_group")
    assert pool["metadata"]["annotations"]["lifeboat.dev/node-group"] == "default_node_group"
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == pool["metadata"]["name"]
    apply_all(emulator, run.out)
    named = cli(
        "convert", "--node-group", "default_node_group", "--cluster-name", "prod-a",
        "--name", "general",
    )  # fmt: skip
    assert named.code == 0, named.err
    assert ("NodePool", "general") in by_kind(named.out)
    invalid = cli(
        "convert", "--node-group", "default_node_group", "--cluster-name", "prod-a",
        "--name", "General_Pool",
    )  # fmt: skip
    assert invalid.code == 2 and "--name 'General_Pool' is not a valid NodePool name" in invalid.err


def test_name_is_refused_for_more_than_one_group(cli: Callable[..., CliRun]) -> None:
    run = cli("convert", "--cluster", Path("events/cluster.yaml"), *PINNED, "--name", "general")
    assert run.code == 1
    assert "--name names one pool, and there are 2 groups" in run.err


# --- the launch template: encryption, KMS key, metadata options ---------------------------


def _template(aws: boto3.Session, net: dict[str, str], image: str, name: str, **data: Any) -> str:
    template: str = aws.client("ec2").create_launch_template(
        LaunchTemplateName=name,
        LaunchTemplateData={
            "ImageId": image,
            "SecurityGroupIds": [net["sg"]],
            "IamInstanceProfile": {"Name": "legacy-workers"},
            **data,
        },
    )["LaunchTemplate"]["LaunchTemplateId"]
    return template


def _asg(aws: boto3.Session, net: dict[str, str], **policy: Any) -> None:
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName="legacy-workers",
        MinSize=0,
        MaxSize=6,
        VPCZoneIdentifier=net["a"],
        **policy,
    )


def test_the_root_volume_is_encrypted_with_the_templates_kms_key_and_imds_options_carried(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """Listing a block device drops Karpenter's encrypted default, so encrypted and kmsKeyID
    are written; the template's MetadataOptions become metadataOptions (else Karpenter's
    hop limit 1, ec2nodeclass.go MetadataOptions, cuts pods off IMDS)."""
    net = _network(aws)
    image = _eks_image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20241121")
    template = _template(
        aws, net, image, "legacy-workers",
        InstanceType="m5.large",
        BlockDeviceMappings=[
            {
                "DeviceName": "/dev/xvda",
                "Ebs": {"VolumeSize": 80, "VolumeType": "gp3", "Encrypted": True,
                        "KmsKeyId": KMS_KEY},
            }
        ],
        MetadataOptions={"HttpTokens": "required", "HttpPutResponseHopLimit": 2,
                         "HttpEndpoint": "enabled"},
    )  # fmt: skip
    _asg(aws, net, LaunchTemplate={"LaunchTemplateId": template, "Version": "1"})
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert run.code == 0, run.err
    spec = by_kind(run.out)[("EC2NodeClass", "legacy-workers")]["spec"]
    assert spec["blockDeviceMappings"][0]["ebs"] == {
        "volumeSize": "80Gi",
        "volumeType": "gp3",
        "encrypted": True,
        "kmsKeyID": KMS_KEY,
    }
    assert spec["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
    }
    apply_all(emulator, run.out)


def test_settings_root_volumes_are_encrypted(tmp_path: Path, cli: Callable[..., CliRun]) -> None:
    run = _settings_run(tmp_path, cli, *PINNED)
    node_class = by_kind(run.out)[("EC2NodeClass", "m5.8xlarge-min-300-max-2500")]
    assert node_class["spec"]["blockDeviceMappings"][0]["ebs"]["encrypted"] is True


# --- mixed instances: one AMI per architecture, the Spot share ---------------------------


def _mixed(aws: boto3.Session, overrides: list[dict[str, Any]], **distribution: Any) -> str:
    net = _network(aws)
    x86 = _eks_image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20241121")
    arm = _eks_image(aws, "amazon-eks-node-al2023-arm64-standard-1.31-v20241121", "arm64")
    template = _template(aws, net, x86, "legacy-workers")
    arm_template = _template(aws, net, arm, "legacy-workers-arm")
    for override in overrides:
        if override.pop("arm", False):
            override["LaunchTemplateSpecification"] = {
                "LaunchTemplateId": arm_template,
                "Version": "1",
            }
    _asg(
        aws,
        net,
        MixedInstancesPolicy={
            "LaunchTemplate": {
                "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": "1"},
                "Overrides": overrides,
            },
            "InstancesDistribution": distribution,
        },
    )
    return f"{x86} {arm}"


def test_an_arm64_override_with_its_own_template_gets_its_ami_in_the_class(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """Karpenter picks, per instance type, an AMI of its architecture among the class's
    amiSelectorTerms (karpenter-provider-aws amifamily MapToInstanceTypes)."""
    images = _mixed(
        aws,
        [{"InstanceType": "m5.large"}, {"InstanceType": "c6g.large", "arm": True}],
        OnDemandPercentageAboveBaseCapacity=100,
    ).split()
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert run.code == 0, run.err
    objects = by_kind(run.out)
    pool = objects[("NodePool", "legacy-workers")]
    spec = objects[("EC2NodeClass", "legacy-workers")]["spec"]
    assert requirement(pool, "kubernetes.io/arch")["values"] == ["amd64", "arm64"]
    assert sorted(term["id"] for term in spec["amiSelectorTerms"]) == sorted(images)
    apply_all(emulator, run.out)


def test_an_alias_chosen_for_a_mixed_group_covers_every_architecture(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """--ami-alias replaces the group's AMI ids: an alias resolves an AMI per architecture
    (Karpenter's alias families publish amd64 and arm64 images), so nothing is refused."""
    _mixed(
        aws,
        [{"InstanceType": "m5.large"}, {"InstanceType": "c6g.large"}],
        OnDemandPercentageAboveBaseCapacity=100,
    )
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a", *PINNED)
    assert run.code == 0, run.err
    spec = by_kind(run.out)[("EC2NodeClass", "legacy-workers")]["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@v20241121"}]
    assert "amiFamily" not in spec
    assert "replaces the group's own AMI" in run.err
    apply_all(emulator, run.out)


def test_ami_alias_latest_follows_the_family_of_the_groups_ami(
    aws: boto3.Session, cli: Callable[..., CliRun]
) -> None:
    """An AL2 AMI (amazon-eks-arm64-node-..., the AL2 arm64 name) follows al2@latest."""
    net = _network(aws)
    image = _eks_image(aws, "amazon-eks-arm64-node-1.29-v20240213", "arm64")
    template = _template(aws, net, image, "legacy-workers", InstanceType="c6g.large")
    _asg(aws, net, LaunchTemplate={"LaunchTemplateId": template, "Version": "1"})
    pinned = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert pinned.code == 0, pinned.err
    spec = by_kind(pinned.out)[("EC2NodeClass", "legacy-workers")]["spec"]
    assert (spec["amiFamily"], spec["amiSelectorTerms"]) == ("AL2", [{"id": image}])
    latest = cli(
        "convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a",
        "--ami-alias", "latest",
    )  # fmt: skip
    spec = by_kind(latest.out)[("EC2NodeClass", "legacy-workers")]["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2@latest"}]


def test_a_type_no_template_has_an_ami_for_is_refused_by_name(
    aws: boto3.Session, cli: Callable[..., CliRun]
) -> None:
    """c6g.large (arm64) with only the group's x86_64 AMI: Karpenter could never launch it;
    the pool is not written (issue 34: never a pool allowing types its class cannot boot)."""
    _mixed(
        aws,
        [{"InstanceType": "m5.large"}, {"InstanceType": "c6g.large"}],
        OnDemandPercentageAboveBaseCapacity=100,
    )
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert run.code == 2
    assert "no AMI for c6g.large" in run.err
    assert "NodePool" not in run.out


def test_a_spot_share_is_kept_on_demand_and_said(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    _mixed(
        aws,
        [{"InstanceType": "m5.large"}, {"InstanceType": "m5.xlarge"}],
        OnDemandBaseCapacity=1,
        OnDemandPercentageAboveBaseCapacity=50,
    )
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert run.code == 0, run.err
    pool = by_kind(run.out)[("NodePool", "legacy-workers")]
    assert requirement(pool, "karpenter.sh/capacity-type")["values"] == ["on-demand"]
    annotation = pool["metadata"]["annotations"]["lifeboat.dev/conversion"]
    assert "Spot share (1 on-demand, then 50% Spot above them) not kept" in annotation
    assert "On-Demand/Spot Ratio Split" in run.err
    apply_all(emulator, run.out)


# --- architectures ------------------------------------------------------------------------


def test_i386_and_x86_64_is_amd64_as_karpenter_maps_it() -> None:
    """t2.micro's SupportedArchitectures as `aws ec2 describe-instance-types` gives them;
    karpenter-provider-aws getArchitecture takes the first it knows: amd64."""
    answer = {
        "InstanceTypes": [
            {
                "InstanceType": "t2.micro",
                "ProcessorInfo": {"SupportedArchitectures": ["i386", "x86_64"]},
                "VCpuInfo": {"DefaultVCpus": 1},
                "MemoryInfo": {"SizeInMiB": 1024},
            }
        ]
    }
    assert from_describe(answer)["t2.micro"].arch == "amd64"

"""`lifeboat convert`: node groups to NodePools and EC2NodeClasses (issue 28, item 1).

Groups are read through boto3 from moto (EKS managed node groups, Auto Scaling groups with
their launch template versions, DescribeInstanceTypes) or from the settings ConfigMaps; every
output is created on the emulator through the real client, so the API server's checks of
Karpenter's CRDs (kubemu.karpenter, kubemu.ec2nodeclass) accept it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

from kubemu import Emulator
from tests.conftest import CliRun
from tests.support import cyaml

ISSUE_SETTINGS = """\
metadata: {name: m5.8xlarge-min-300-max-2500}
data:
  k8s_instance_type: m6i.8xlarge
  k8s_root_volume_size: '100'
  k8s_root_volume_iops: '3000'
  k8s_root_volume_type: 'gp3'
  k8s_root_volume_throughput: '125'
  k8s_min_node_number: '300'
  k8s_max_node_number: '2500'
  multi_az_provisioned_workers: 'false'
  asg_launch_type: 'launch_template'
  gpu_enabled: 'false'
"""
GPU_SETTINGS = """\
metadata: {name: gpu-inference}
data:
  k8s_instance_type: g4dn.xlarge
  k8s_root_volume_size: '200'
  k8s_root_volume_type: 'gp2'
  k8s_root_volume_iops: '3000'
  k8s_max_node_number: '10'
  multi_az_provisioned_workers: 'true'
  gpu_enabled: 'true'
"""


# The settings name no AMI: the pools are pinned to a release (issue 34).
PINNED = ("--ami-alias", "al2023@v20241121")


@pytest.fixture
def aws_region() -> str:
    return "eu-west-1"


def by_kind(out: str) -> dict[tuple[str, str], dict[str, Any]]:
    listed = cyaml.safe_load(out)
    assert listed["kind"] == "List"
    return {(o["kind"], o["metadata"]["name"]): o for o in listed["items"]}


def requirement(pool: dict[str, Any], key: str) -> dict[str, Any]:
    found = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    assert len(found) == 1, key
    found_one: dict[str, Any] = found[0]
    return found_one


def apply_all(emu: Emulator, out: str) -> None:
    """Creates every object as `kubectl apply` would: the API server's checks decide."""
    api = client.CustomObjectsApi(emu.api_client())
    for obj in cyaml.safe_load(out)["items"]:
        group, version = obj["apiVersion"].split("/")
        plural = {"NodePool": "nodepools", "EC2NodeClass": "ec2nodeclasses"}[obj["kind"]]
        api.create_cluster_custom_object(group, version, plural, obj)


def write(tmp_path: Path, text: str, name: str = "settings.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the settings form -------------------------------------------------------------------


def test_the_issues_settings_configmap_converts_to_a_pool_and_class_the_server_accepts(
    tmp_path: Path, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """limits = 2500 x m6i.8xlarge (32 vCPU, 128 GiB); single-AZ stays in its zone; the root
    volume as blockDeviceMappings; the conservative disruption choice."""
    settings = write(tmp_path, ISSUE_SETTINGS)
    run = cli("convert", "--settings", settings, "--cluster-name", "prod-a", "--zone", "eu-west-1b",
              *PINNED)  # fmt: skip
    assert run.code == 0, run.err
    objects = by_kind(run.out)
    pool = objects[("NodePool", "m5.8xlarge-min-300-max-2500")]
    node_class = objects[("EC2NodeClass", "m5.8xlarge-min-300-max-2500")]
    assert pool["spec"]["limits"] == {"cpu": "80000", "memory": "320000Gi"}
    assert requirement(pool, "node.kubernetes.io/instance-type")["values"] == ["m6i.8xlarge"]
    assert requirement(pool, "topology.kubernetes.io/zone")["values"] == ["eu-west-1b"]
    assert requirement(pool, "karpenter.sh/capacity-type")["values"] == ["on-demand"]
    assert pool["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "5m",
        "budgets": [{"nodes": "1"}],
    }
    assert node_class["spec"]["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": True,
            "ebs": {
                "volumeSize": "100Gi",
                "volumeType": "gp3",
                "iops": 3000,
                "throughput": 125,
                "encrypted": True,
            },
        }
    ]
    assert node_class["spec"]["subnetSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "prod-a"}}
    ]
    assert node_class["spec"]["role"] == "KarpenterNodeRole-prod-a"
    assert "k8s_min_node_number 300 has no NodePool equivalent" in run.err
    apply_all(emulator, run.out)


def test_many_settings_in_one_file_and_a_gpu_group_keeps_its_requirement_and_taint(
    tmp_path: Path, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    settings = write(tmp_path, ISSUE_SETTINGS + "---\n" + GPU_SETTINGS)
    out = tmp_path / "pools.yaml"
    run = cli(
        "convert", "--settings", settings, "--cluster-name", "c", "--zone", "eu-west-1a",
        "--out", out, *PINNED,
    )  # fmt: skip
    assert run.code == 0, run.err
    assert run.out == ""
    objects = by_kind(out.read_text())
    assert len(objects) == 4
    gpu = objects[("NodePool", "gpu-inference")]
    assert requirement(gpu, "karpenter.k8s.aws/instance-gpu-count") == {
        "key": "karpenter.k8s.aws/instance-gpu-count",
        "operator": "Gt",
        "values": ["0"],
    }
    assert gpu["spec"]["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    ]
    assert gpu["spec"]["limits"] == {"cpu": "40", "memory": "160Gi", "nvidia.com/gpu": "10"}
    # multi-AZ: no zone requirement; gp2 takes no iops.
    assert not [
        r
        for r in gpu["spec"]["template"]["spec"]["requirements"]
        if r["key"] == "topology.kubernetes.io/zone"
    ]
    ebs = objects[("EC2NodeClass", "gpu-inference")]["spec"]["blockDeviceMappings"][0]["ebs"]
    assert ebs == {"volumeSize": "200Gi", "volumeType": "gp2", "encrypted": True}
    apply_all(emulator, out.read_text())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("k8s_max_node_number: '10'", "k8s_max_node_number: 'ten'"),
         "data.k8s_max_node_number: 'ten' is not a whole number"),
        (("g4dn.xlarge", "x9.huge"),
         "instance type 'x9.huge' is not in the capacity table: pass --instance-types FILE"),
        (("g4dn.xlarge", "m6i.large"), "gpu_enabled but m6i.large has no GPU"),
        (("k8s_root_volume_type: 'gp2'", "k8s_root_volume_type: 'ssd'"),
         "'ssd' is not an EBS volume type"),
        (("gpu_enabled: 'true'", "gpu_enabled: 'true'\n  taints: 'dedicated=gpu'"),
         "data.taints: 'dedicated=gpu' is not KEY[=VALUE]:EFFECT"),
    ],
)  # fmt: skip
def test_a_setting_that_cannot_be_converted_is_named_with_its_fix_and_exits_2(
    tmp_path: Path, cli: Callable[..., CliRun], change: tuple[str, str], expected: str
) -> None:
    """The other groups of the file are still printed."""
    bad = GPU_SETTINGS.replace(*change)
    settings = write(tmp_path, ISSUE_SETTINGS + "---\n" + bad)
    run = cli("convert", "--settings", settings, "--zone", "eu-west-1a", "--cluster-name", "c",
              *PINNED)  # fmt: skip
    assert run.code == 2
    assert expected in run.err
    assert "document 2" in run.err
    assert set(by_kind(run.out)) == {
        ("NodePool", "m5.8xlarge-min-300-max-2500"),
        ("EC2NodeClass", "m5.8xlarge-min-300-max-2500"),
    }


def test_a_single_zone_group_without_a_zone_is_refused(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """multi_az_provisioned_workers 'false': the pool must stay in the group's zone, which
    the settings form does not name."""
    run = cli("convert", "--settings", write(tmp_path, ISSUE_SETTINGS), *PINNED)
    assert run.code == 2
    assert "'false': a single-zone group, but the settings name no zone: pass --zone" in run.err
    assert by_kind(run.out) == {}


def test_instance_types_file_gives_capacities_the_table_lacks(
    tmp_path: Path, cli: Callable[..., CliRun], aws: boto3.Session
) -> None:
    """--instance-types takes `aws ec2 describe-instance-types` output (here moto's answer)."""
    answer = aws.client("ec2").describe_instance_types(InstanceTypes=["x2idn.16xlarge"])
    types = write(tmp_path, json.dumps(answer, default=str), "types.json")
    settings = write(tmp_path, GPU_SETTINGS.replace("g4dn.xlarge", "x2idn.16xlarge").replace(
        "gpu_enabled: 'true'", "gpu_enabled: 'false'"))  # fmt: skip
    refused = cli("convert", "--settings", settings, "--cluster-name", "c", *PINNED)
    assert refused.code == 2
    run = cli("convert", "--settings", settings, "--cluster-name", "c", "--instance-types", types,
              *PINNED)  # fmt: skip
    assert run.code == 0, run.err
    pool = by_kind(run.out)[("NodePool", "gpu-inference")]
    assert pool["spec"]["limits"] == {"cpu": "640", "memory": "10240Gi"}  # 10 x (64, 1024 GiB)


def test_a_file_without_settings_is_a_clear_error(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    run = cli("convert", "--settings", write(tmp_path, "kind: Service\nmetadata: {name: x}\n"))
    assert run.code == 2
    assert "document 1: not a settings ConfigMap (no data mapping)" in run.err


# --- from AWS: EKS managed node groups and Auto Scaling groups ---------------------------


def _subnet(ec2: Any, vpc: str, cidr: str, zone: str, tags: dict[str, str]) -> str:
    spec = [{"ResourceType": "subnet", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    extra: dict[str, Any] = {"TagSpecifications": spec} if tags else {}
    subnet: str = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone, **extra)[
        "Subnet"
    ]["SubnetId"]
    return subnet


def _network(aws: boto3.Session) -> dict[str, str]:
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    discovery = {"karpenter.sh/discovery": "prod-a"}
    sg = ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)["GroupId"]
    return {
        "vpc": vpc,
        "a": _subnet(ec2, vpc, "10.0.1.0/24", "eu-west-1a", {**discovery, "Name": "private-a"}),
        "b": _subnet(ec2, vpc, "10.0.2.0/24", "eu-west-1b", {**discovery, "Name": "private-b"}),
        "untagged": _subnet(ec2, vpc, "10.0.3.0/24", "eu-west-1c", {}),
        "sg": sg,
    }


def _eks_cluster(aws: boto3.Session, net: dict[str, str]) -> None:
    aws.client("eks").create_cluster(
        name="prod-a",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": [net["a"], net["b"]], "securityGroupIds": [net["sg"]]},
    )


def test_an_eks_managed_node_group_converts_from_describe_nodegroup(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """Instance types, SPOT, labels, taints (NO_SCHEDULE -> NoSchedule), the subnets by their
    shared discovery tag, zones, the node role by name, the AMI alias pinned to the group's
    release, limits from DescribeInstanceTypes (m6i.large: 2 vCPU, 8 GiB) x maxSize."""
    net = _network(aws)
    _eks_cluster(aws, net)
    aws.client("eks").create_nodegroup(
        clusterName="prod-a",
        nodegroupName="legacy",
        subnets=[net["a"], net["b"]],
        nodeRole="arn:aws:iam::123456789012:role/NodeRole-prod-a",
        instanceTypes=["m6i.large", "m5.large"],
        scalingConfig={"minSize": 1, "maxSize": 40, "desiredSize": 3},
        labels={"team": "shop"},
        taints=[{"key": "dedicated", "value": "shop", "effect": "NO_SCHEDULE"}],
        capacityType="SPOT",
        amiType="AL2023_x86_64_STANDARD",
        releaseVersion="1.31.2-20241121",
        diskSize=50,
    )
    run = cli("convert", "--node-group", "legacy", "--cluster-name", "prod-a")
    assert run.code == 0, run.err
    objects = by_kind(run.out)
    pool, node_class = objects[("NodePool", "legacy")], objects[("EC2NodeClass", "legacy")]
    assert requirement(pool, "node.kubernetes.io/instance-type")["values"] == [
        "m6i.large",
        "m5.large",
    ]
    assert requirement(pool, "karpenter.sh/capacity-type")["values"] == ["spot"]
    assert requirement(pool, "topology.kubernetes.io/zone")["values"] == [
        "eu-west-1a",
        "eu-west-1b",
    ]
    assert pool["spec"]["template"]["metadata"] == {"labels": {"team": "shop"}}
    assert pool["spec"]["template"]["spec"]["taints"] == [
        {"key": "dedicated", "effect": "NoSchedule", "value": "shop"}
    ]
    assert pool["spec"]["limits"] == {"cpu": "80", "memory": "320Gi"}
    assert node_class["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20241121"}]
    assert node_class["spec"]["role"] == "NodeRole-prod-a"
    assert node_class["spec"]["subnetSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "prod-a"}}
    ]
    assert node_class["spec"]["securityGroupSelectorTerms"] == [{"id": net["sg"]}]
    assert node_class["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "50Gi"
    apply_all(emulator, run.out)


def test_a_node_group_label_over_kubernetes_limits_is_refused_with_the_fix(
    aws: boto3.Session, cli: Callable[..., CliRun]
) -> None:
    net = _network(aws)
    _eks_cluster(aws, net)
    aws.client("eks").create_nodegroup(
        clusterName="prod-a",
        nodegroupName="legacy",
        subnets=[net["untagged"]],
        nodeRole="arn:aws:iam::123456789012:role/NodeRole",
        instanceTypes=["m6i.large"],
        scalingConfig={"minSize": 0, "maxSize": 2, "desiredSize": 1},
        labels={"team": "payments and billing (EU)"},
    )
    run = cli("convert", "--node-group", "legacy", "--cluster-name", "prod-a")
    assert run.code == 2
    assert "label team='payments and billing (EU)'" in run.err
    assert "use 'payments-and-billing--EU'" in run.err


def _template(aws: boto3.Session, net: dict[str, str], image: str) -> str:
    ec2 = aws.client("ec2")
    template: str = ec2.create_launch_template(
        LaunchTemplateName="legacy-workers",
        LaunchTemplateData={
            "ImageId": image,
            "InstanceType": "m5.large",
            "SecurityGroupIds": [net["sg"]],
            "IamInstanceProfile": {
                "Arn": "arn:aws:iam::123456789012:instance-profile/legacy-workers"
            },
            "BlockDeviceMappings": [
                {
                    "DeviceName": "/dev/xvda",
                    "Ebs": {"VolumeSize": 80, "VolumeType": "io2", "Iops": 6000},
                }
            ],
        },
    )["LaunchTemplate"]["LaunchTemplateId"]
    return template


def _eks_image(aws: boto3.Session, name: str, architecture: str = "x86_64") -> str:
    """A registered AMI. moto's RegisterImage drops Architecture and RootDeviceName, which
    EC2 keeps and DescribeImages returns, so they are set on moto's record of the image."""
    image: str = aws.client("ec2").register_image(
        Name=name, RootDeviceName="/dev/xvda", Architecture=architecture
    )["ImageId"]
    record = ec2_backends[DEFAULT_ACCOUNT_ID][aws.region_name].amis[image]
    record.architecture, record.root_device_name = architecture, "/dev/xvda"
    return image


def test_a_self_managed_auto_scaling_group_converts_from_its_launch_template(
    aws: boto3.Session, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """A mixed-instances group (its overrides' types, OnDemand 0% -> spot), its template's
    AMI id with the family read from the image's name, root volume, security groups, the
    instance profile, and Cluster Autoscaler's node-template label and taint tags; a subnet
    with a unique Name tag is selected by it, an untagged one by id."""
    net = _network(aws)
    image = _eks_image(aws, "amazon-eks-node-al2023-x86_64-standard-1.31-v20241121")
    template = _template(aws, net, image)
    label = "k8s.io/cluster-autoscaler/node-template/label/workload"
    taint = "k8s.io/cluster-autoscaler/node-template/taint/dedicated"
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName="legacy-workers",
        MinSize=0,
        MaxSize=12,
        VPCZoneIdentifier=f"{net['a']},{net['untagged']}",
        MixedInstancesPolicy={
            "LaunchTemplate": {
                "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": "1"},
                "Overrides": [{"InstanceType": "m5.large"}, {"InstanceType": "m5.xlarge"}],
            },
            "InstancesDistribution": {"OnDemandPercentageAboveBaseCapacity": 0},
        },
        Tags=[
            {"Key": label, "Value": "batch", "PropagateAtLaunch": False},
            {"Key": taint, "Value": "batch:NoSchedule", "PropagateAtLaunch": False},
        ],
    )
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert run.code == 0, run.err
    objects = by_kind(run.out)
    pool = objects[("NodePool", "legacy-workers")]
    spec = objects[("EC2NodeClass", "legacy-workers")]["spec"]
    assert requirement(pool, "node.kubernetes.io/instance-type")["values"] == [
        "m5.large",
        "m5.xlarge",
    ]
    assert requirement(pool, "karpenter.sh/capacity-type")["values"] == ["spot"]
    assert pool["spec"]["limits"] == {"cpu": "48", "memory": "192Gi"}  # 12 x m5.xlarge
    assert pool["spec"]["template"]["metadata"]["labels"] == {"workload": "batch"}
    assert pool["spec"]["template"]["spec"]["taints"] == [
        {"key": "dedicated", "effect": "NoSchedule", "value": "batch"}
    ]
    assert spec["amiSelectorTerms"] == [{"id": image}]
    assert spec["amiFamily"] == "AL2023"
    assert spec["instanceProfile"] == "legacy-workers"
    assert "role" not in spec
    assert spec["subnetSelectorTerms"] == [{"tags": {"Name": "private-a"}}, {"id": net["untagged"]}]
    assert spec["securityGroupSelectorTerms"] == [{"id": net["sg"]}]
    assert spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": True,
            "ebs": {"volumeSize": "80Gi", "volumeType": "io2", "iops": 6000, "encrypted": True},
        }
    ]
    apply_all(emulator, run.out)


def test_an_ami_of_unknown_family_is_refused_with_the_fix(
    aws: boto3.Session, cli: Callable[..., CliRun]
) -> None:
    net = _network(aws)
    template = _template(aws, net, _eks_image(aws, "golden-image-2024"))
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName="legacy-workers",
        MinSize=0,
        MaxSize=2,
        VPCZoneIdentifier=net["a"],
        LaunchTemplate={"LaunchTemplateId": template, "Version": "$Latest"},
    )
    run = cli("convert", "--node-group", "legacy-workers", "--cluster-name", "prod-a")
    assert run.code == 2
    assert "cannot tell the AMI family" in run.err
    assert "golden-image-2024" in run.err


def test_a_group_that_does_not_exist_is_named(
    aws: boto3.Session, cli: Callable[..., CliRun]
) -> None:
    _eks_cluster(aws, _network(aws))
    run = cli("convert", "--node-group", "nope", "--cluster-name", "prod-a")
    assert run.code == 2
    assert "nope: neither an EKS managed node group of cluster prod-a nor an Auto" in run.err


def test_node_group_needs_the_cluster_name(cli: Callable[..., CliRun]) -> None:
    run = cli("convert", "--node-group", "legacy")
    assert run.code == 1
    assert "--node-group needs --cluster-name" in run.err


# --- from a cluster file's nodes ---------------------------------------------------------


def test_the_sample_clusters_node_groups_convert_from_their_nodes(
    cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """events/cluster.yaml's EKS groups (system, legacy): types, zones and the maximum from
    the nodes; Karpenter's own nodes are left out."""
    run = cli("convert", "--cluster", Path("events/cluster.yaml"), "--cluster-name", "prod-a",
              *PINNED)  # fmt: skip
    assert run.code == 0, run.err
    objects = by_kind(run.out)
    assert {name for kind, name in objects if kind == "NodePool"} == {"legacy", "system"}
    legacy = objects[("NodePool", "legacy")]
    assert requirement(legacy, "node.kubernetes.io/instance-type")["values"]
    assert "maximum taken as the current node count" in run.err
    apply_all(emulator, run.out)


def _group_node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "eks.amazonaws.com/nodegroup": "legacy",
                "node.kubernetes.io/instance-type": "m5.large",
                "topology.kubernetes.io/zone": "eu-west-1a",
                "team": "shop",
            },
        },
        "spec": {"providerID": f"aws:///eu-west-1a/i-{name}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _selecting_pod(name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "n1",
            "nodeSelector": selector,
            "containers": [{"name": "c", "image": "nginx"}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_audit_of_the_cluster_with_the_converted_pools_flags_what_holds_the_migration(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """convert, then audit the cluster file with its output: the pod selecting the group's own
    label is flagged; the one selecting a label the converted pool carries (team=shop, common
    to the group's nodes) is not."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        cyaml.safe_dump_all(
            [
                _group_node("n1"),
                _group_node("n2"),
                _selecting_pod("pinned", {"eks.amazonaws.com/nodegroup": "legacy"}),
                _selecting_pod("fits", {"team": "shop"}),
                _selecting_pod("homeless", {"team": "billing"}),
            ]
        )
    )
    pools = tmp_path / "pools.yaml"
    converted = cli("convert", "--cluster", cluster, "--cluster-name", "c", "--out", pools, *PINNED)
    assert converted.code == 0, converted.err
    assert by_kind(pools.read_text())[("NodePool", "legacy")]["spec"]["template"]["metadata"] == {
        "labels": {"team": "shop"}
    }
    combined = tmp_path / "combined.yaml"
    combined.write_text(cluster.read_text() + "---\n" + pools.read_text())
    audited = cli("audit", "--cluster", combined, "--json", "--at", "2026-12-01T14:05:00Z")
    findings = {
        (f["check"], f["object"]["name"])
        for f in json.loads(audited.out)["findings"]
        if f["check"].startswith("migration-")
    }
    assert findings == {
        ("migration-pinned-to-node-group", "pinned"),
        ("migration-no-nodepool-fits", "homeless"),
    }


def test_an_unreadable_settings_file_is_a_usage_error(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    missing = cli("convert", "--settings", tmp_path / "nope.yaml")
    assert missing.code == 1
    assert "--settings" in missing.err and "cannot read it" in missing.err
    broken = cli("convert", "--settings", write(tmp_path, "data: [unclosed\n"))
    assert broken.code == 1

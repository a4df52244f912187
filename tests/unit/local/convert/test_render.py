"""``convert.render``: a node group as a NodePool and an EC2NodeClass, without AWS or an API
server: the pool's limits (the group's maximum times its largest type), requirements,
taints, labels and expiry; the class's AMI, access and block devices. Each object is also
checked by ``convert`` as kubemu checks Karpenter's CRDs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lifeboat_local.convert.capacity import Capacities, Capacity
from lifeboat_local.convert.model import ConversionError, NodeGroup, RootVolume, SelectorTerm, Taint
from lifeboat_local.convert.render import choice, convert, node_class, node_pool

TABLE = {
    "m5.large": Capacity(2, 8192, "amd64"),
    "m5.xlarge": Capacity(4, 16384, "amd64"),
    "c6g.large": Capacity(2, 4096, "arm64"),
    "g4dn.xlarge": Capacity(4, 16384, "amd64", gpus=1),
    "g4dn.12xlarge": Capacity(48, 196608, "amd64", gpus=4),
    "t3.odd": Capacity(1, 1500, "amd64"),
}
CAPACITIES = Capacities(TABLE)


def _group(**fields: Any) -> NodeGroup:
    base: dict[str, Any] = {
        "name": "workers",
        "source": "settings.yaml: workers",
        "instance_types": ["m5.large"],
        "max_size": 10,
        "subnets": [SelectorTerm(tags=(("karpenter.sh/discovery", "demo"),))],
        "security_groups": [SelectorTerm(id="sg-0123")],
        "role": "NodeRole",
        "ami_alias": "al2023@v20241121",
    }
    base.update(fields)
    return NodeGroup(**base)


def _requirement(pool: dict[str, Any], key: str) -> dict[str, Any] | None:
    found = [r for r in pool["spec"]["template"]["spec"]["requirements"] if r["key"] == key]
    return found[0] if found else None


def test_limits_are_the_groups_maximum_times_its_largest_type() -> None:
    """A mixed group's pool never grows past what the group could: max_size x the largest
    type's vCPU and memory (whole GiB written as Gi, anything else as Mi)."""
    pool = node_pool(_group(instance_types=["m5.large", "m5.xlarge"], max_size=3), CAPACITIES)
    assert pool["spec"]["limits"] == {"cpu": "12", "memory": "48Gi"}
    odd = node_pool(_group(instance_types=["t3.odd"], max_size=3), CAPACITIES)
    assert odd["spec"]["limits"] == {"cpu": "3", "memory": "4500Mi"}


def test_limits_of_a_large_group_in_whole_gibibytes() -> None:
    """100 nodes of 192 GiB: 19200Gi, as the API server reads it (not rounded off)."""
    pool = node_pool(_group(instance_types=["g4dn.12xlarge"], max_size=100), CAPACITIES)
    assert pool["spec"]["limits"] == {"cpu": "4800", "memory": "19200Gi"}


def test_requirements_say_types_capacity_type_arches_and_sorted_zones() -> None:
    group = _group(
        instance_types=["m5.large", "c6g.large"],
        capacity_type="spot",
        zones=["eu-west-1b", "eu-west-1a"],
    )
    pool = node_pool(group, CAPACITIES)
    assert _requirement(pool, "node.kubernetes.io/instance-type") == {
        "key": "node.kubernetes.io/instance-type",
        "operator": "In",
        "values": ["m5.large", "c6g.large"],
    }
    assert _requirement(pool, "karpenter.sh/capacity-type")["values"] == ["spot"]  # type: ignore[index]
    assert _requirement(pool, "kubernetes.io/arch")["values"] == ["amd64", "arm64"]  # type: ignore[index]
    assert _requirement(pool, "topology.kubernetes.io/zone")["values"] == [  # type: ignore[index]
        "eu-west-1a",
        "eu-west-1b",
    ]
    assert _requirement(node_pool(_group(), CAPACITIES), "topology.kubernetes.io/zone") is None


def test_a_gpu_group_gets_the_gpu_requirement_taint_and_limit() -> None:
    group = _group(instance_types=["g4dn.xlarge", "g4dn.12xlarge"], max_size=2, gpu=True)
    pool = node_pool(group, CAPACITIES)
    assert _requirement(pool, "karpenter.k8s.aws/instance-gpu-count") == {
        "key": "karpenter.k8s.aws/instance-gpu-count",
        "operator": "Gt",
        "values": ["0"],
    }
    assert pool["spec"]["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    ]
    assert pool["spec"]["limits"]["nvidia.com/gpu"] == "8"  # 2 x the largest type's 4


def test_a_gpu_group_keeps_its_own_gpu_taint_and_a_group_without_a_gpu_is_refused() -> None:
    own = Taint("nvidia.com/gpu", "NoExecute")
    group = _group(instance_types=["g4dn.xlarge"], gpu=True, taints=[own])
    taints = node_pool(group, CAPACITIES)["spec"]["template"]["spec"]["taints"]
    assert taints == [{"key": "nvidia.com/gpu", "effect": "NoExecute"}]
    with pytest.raises(ConversionError, match=re.escape("gpu_enabled but m5.large has no GPU")):
        node_pool(_group(gpu=True), CAPACITIES)


def test_taints_labels_and_no_taints_key_when_there_are_none() -> None:
    group = _group(
        taints=[Taint("dedicated", "NoSchedule", "batch"), Taint("spot", "PreferNoSchedule")],
        labels={"team": "data"},
    )
    template = node_pool(group, CAPACITIES)["spec"]["template"]
    assert template["spec"]["taints"] == [
        {"key": "dedicated", "effect": "NoSchedule", "value": "batch"},
        {"key": "spot", "effect": "PreferNoSchedule"},
    ]
    assert template["metadata"] == {"labels": {"team": "data"}}
    bare = node_pool(_group(), CAPACITIES)["spec"]["template"]
    assert "taints" not in bare["spec"] and "metadata" not in bare


def test_a_label_or_taint_the_api_server_would_refuse_is_refused_before() -> None:
    with pytest.raises(
        ConversionError, match=re.escape("settings.yaml: workers: labels: label key")
    ):
        node_pool(_group(labels={"bad key": "x"}), CAPACITIES)
    with pytest.raises(ConversionError, match=re.escape("labels: label team=")):
        node_pool(_group(labels={"team": "-x-"}), CAPACITIES)
    with pytest.raises(ConversionError, match=re.escape("taints: label key")):
        node_pool(_group(taints=[Taint("bad key", "NoSchedule")]), CAPACITIES)
    with pytest.raises(ConversionError, match=re.escape("taints: label dedicated=")):
        node_pool(_group(taints=[Taint("dedicated", "NoSchedule", "a b")]), CAPACITIES)


def test_expiry_is_never_by_default_and_said_forceful_otherwise() -> None:
    """Karpenter's expiry is forceful (nodeclaim/expiration deletes the claim regardless of
    budgets): the annotation says so when asked for one."""
    pool = node_pool(_group(), CAPACITIES)
    assert pool["spec"]["template"]["spec"]["expireAfter"] == "Never"
    annotations = pool["metadata"]["annotations"]
    assert annotations["lifeboat.dev/conversion"] == choice("Never")
    assert "nodes do not expire" in choice("Never")
    timed = node_pool(_group(), CAPACITIES, expire_after="720h")
    assert timed["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert (
        "expireAfter: 720h (forceful" in timed["metadata"]["annotations"]["lifeboat.dev/conversion"]
    )


def test_the_annotations_name_the_source_the_choices_and_a_renamed_group() -> None:
    group = _group(name="ng_1", source="x" * 300, choices=["Spot share not kept"])
    annotations = node_pool(group, CAPACITIES)["metadata"]["annotations"]
    assert annotations["lifeboat.dev/converted-from"] == "x" * 253
    assert annotations["lifeboat.dev/conversion"].endswith("; Spot share not kept")
    assert annotations["lifeboat.dev/node-group"] == "ng_1"
    assert (
        "lifeboat.dev/node-group" not in node_pool(_group(), CAPACITIES)["metadata"]["annotations"]
    )


def test_the_pool_and_class_names_are_the_given_name_or_the_groups_mapped() -> None:
    assert node_pool(_group(), CAPACITIES)["metadata"]["name"] == "workers"
    assert node_pool(_group(pool_name="ours"), CAPACITIES)["metadata"]["name"] == "ours"
    assert node_class(_group(pool_name="ours"))["metadata"]["name"] == "ours"
    assert node_pool(_group(name="NG_1"), CAPACITIES)["metadata"]["name"].startswith("ng-1-")
    with pytest.raises(
        ConversionError, match=re.escape("--name 'Bad_Name' is not a valid NodePool name")
    ):
        node_pool(_group(pool_name="Bad_Name"), CAPACITIES)


def test_disruption_is_conservative_and_not_shared_between_pools() -> None:
    first = node_pool(_group(), CAPACITIES)
    assert first["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "5m",
        "budgets": [{"nodes": "1"}],
    }
    first["spec"]["disruption"]["budgets"].append({"nodes": "50%"})
    assert node_pool(_group(), CAPACITIES)["spec"]["disruption"]["budgets"] == [{"nodes": "1"}]


def test_a_type_whose_class_has_no_ami_for_its_arch_is_refused() -> None:
    group = _group(instance_types=["m5.large", "c6g.large"], ami_arches={"amd64": "ami-1"})
    with pytest.raises(ConversionError, match=re.escape("no AMI for c6g.large")):
        node_pool(group, CAPACITIES)


def test_the_class_ami_ids_with_family_or_the_alias_never_a_silent_latest() -> None:
    ids = node_class(_group(ami_id="ami-1", more_ami_ids=["ami-2"], ami_family="AL2023"))
    assert ids["spec"]["amiFamily"] == "AL2023"
    assert ids["spec"]["amiSelectorTerms"] == [{"id": "ami-1"}, {"id": "ami-2"}]
    assert node_class(_group(ami_id="ami-1"))["spec"]["amiFamily"] == "Custom"
    alias = node_class(_group())["spec"]
    assert alias["amiSelectorTerms"] == [{"alias": "al2023@v20241121"}]
    assert "amiFamily" not in alias
    with pytest.raises(ConversionError, match=re.escape("names no AMI: pass --ami-alias")):
        node_class(_group(ami_alias=None))


def test_the_class_access_role_or_profile_subnets_and_security_groups() -> None:
    spec = node_class(_group())["spec"]
    assert spec["role"] == "NodeRole" and "instanceProfile" not in spec
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo"}}]
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-0123"}]
    profile = node_class(_group(instance_profile="Profile"))["spec"]
    assert profile["instanceProfile"] == "Profile" and "role" not in profile
    for missing, why in (
        ({"role": None}, "no node role or instance profile found"),
        ({"subnets": []}, "no subnets found"),
        ({"security_groups": []}, "no security groups found"),
    ):
        with pytest.raises(ConversionError, match=re.escape(f"settings.yaml: workers: {why}")):
            node_class(_group(**missing))


def test_the_root_volume_first_encrypted_unless_the_group_said_not() -> None:
    """Listing a block device drops Karpenter's encrypted default (karpenter-provider-aws
    ``amifamily`` ``DefaultEBS``): encrypted is written, true unless the template said false,
    with the template's KMS key only when encrypted."""
    root = RootVolume(100, "gp3", iops=4000, throughput=250, kms_key_id="key-1")
    data = RootVolume(
        500,
        "io2",
        iops=8000,
        throughput=500,
        device_name="/dev/xvdb",
        encrypted=False,
        kms_key_id="key-2",
    )
    spec = node_class(_group(root_volume=root, more_volumes=[data]))["spec"]
    assert spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": True,
            "ebs": {
                "volumeSize": "100Gi",
                "volumeType": "gp3",
                "iops": 4000,
                "throughput": 250,
                "encrypted": True,
                "kmsKeyID": "key-1",
            },
        },
        {
            "deviceName": "/dev/xvdb",
            "ebs": {"volumeSize": "500Gi", "volumeType": "io2", "iops": 8000, "encrypted": False},
        },
    ]
    gp2 = node_class(_group(root_volume=RootVolume(20, "gp2", iops=100, throughput=1)))["spec"]
    assert gp2["blockDeviceMappings"][0]["ebs"] == {
        "volumeSize": "20Gi",
        "volumeType": "gp2",
        "encrypted": True,
    }
    io1 = node_class(_group(root_volume=RootVolume(20, "io1", iops=100)))["spec"]
    assert io1["blockDeviceMappings"][0]["ebs"]["iops"] == 100
    assert "blockDeviceMappings" not in node_class(_group())["spec"]


def test_the_root_volume_comes_first_and_the_data_volumes_in_the_templates_order() -> None:
    data = [RootVolume(50, device_name="/dev/xvdb"), RootVolume(60, device_name="/dev/xvdc")]
    group = _group(root_volume=RootVolume(20), more_volumes=data)
    mappings = node_class(group)["spec"]["blockDeviceMappings"]
    assert [m["deviceName"] for m in mappings] == ["/dev/xvda", "/dev/xvdb", "/dev/xvdc"]
    assert [m.get("rootVolume", False) for m in mappings] == [True, False, False]


def test_metadata_options_are_carried_when_the_template_has_them() -> None:
    options = {"httpTokens": "required", "httpPutResponseHopLimit": 1}
    assert node_class(_group(metadata_options=options))["spec"]["metadataOptions"] == options
    assert "metadataOptions" not in node_class(_group())["spec"]


def test_convert_gives_both_objects_checked_as_the_crds_check_them() -> None:
    pool, node_class_ = convert(_group(), CAPACITIES)
    assert (pool["kind"], node_class_["kind"]) == ("NodePool", "EC2NodeClass")
    too_big = _group(root_volume=RootVolume(70000))  # the CRD's volumeSize pattern: at most 64Ti
    with pytest.raises(ConversionError, match=re.escape("the EC2NodeClass is refused")):
        convert(too_big, CAPACITIES)

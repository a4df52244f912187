"""``convert.mixed`` (a mixed-instances group's Spot share and per-type AMIs) and
``convert.capacity`` (instance types' vCPU, memory, architecture and GPUs), against
karpenter-provider-aws: ``getArchitecture`` (pkg/providers/instancetype/types.go) takes the
first architecture it knows, and one EC2NodeClass boots each type from the newest AMI of its
architecture (``amifamily`` ``MapToInstanceTypes``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lifeboat_local.convert.capacity import (
    Capacities,
    Capacity,
    from_describe,
    kube_arch,
    read_file,
    shipped,
)
from lifeboat_local.convert.mixed import (
    capacity_type,
    check_bootable,
    differences,
    one_ami_per_arch,
)
from lifeboat_local.convert.model import ConversionError, NodeGroup


def _group(**fields: Any) -> NodeGroup:
    return NodeGroup("workers", "asg workers", ["m5.large"], 10, **fields)


def _distribution(**distribution: int) -> dict[str, Any]:
    return {"InstancesDistribution": distribution}


def test_no_mixed_policy_or_all_on_demand_stays_on_demand_and_says_nothing() -> None:
    for mixed in ({}, _distribution(), _distribution(OnDemandPercentageAboveBaseCapacity=100)):
        group = _group()
        capacity_type(group, mixed)
        assert (group.capacity_type, group.choices, group.notes) == ("on-demand", [], [])


def test_all_spot_converts_to_a_spot_pool() -> None:
    group = _group()
    capacity_type(
        group, _distribution(OnDemandBaseCapacity=0, OnDemandPercentageAboveBaseCapacity=0)
    )
    assert (group.capacity_type, group.choices, group.notes) == ("spot", [], [])


@pytest.mark.parametrize(
    ("distribution", "share"),
    [
        (
            {"OnDemandBaseCapacity": 2, "OnDemandPercentageAboveBaseCapacity": 0},
            "2 on-demand, then 100% Spot",
        ),
        ({"OnDemandPercentageAboveBaseCapacity": 30}, "0 on-demand, then 70% Spot"),
    ],
)
def test_a_share_is_kept_on_demand_the_safe_side_and_said(
    distribution: dict[str, int], share: str
) -> None:
    group = _group()
    capacity_type(group, {"InstancesDistribution": distribution})
    assert group.capacity_type == "on-demand"
    assert group.choices == [
        f"Spot share ({share} above them) not kept: on-demand only (Karpenter has no ratio)"
    ]
    [note] = group.notes
    assert note.startswith(f"asg workers: the group runs {share} above them; Karpenter has no")
    assert "On-Demand/Spot Ratio Split" in note


def test_differences_leave_out_the_ami_and_instance_type() -> None:
    base = {"ImageId": "ami-1", "InstanceType": "m5.large", "UserData": "a", "KeyName": "k"}
    other = {"ImageId": "ami-2", "InstanceType": "c6g.large", "UserData": "b", "EbsOptimized": True}
    assert differences(base, other) == ["EbsOptimized", "KeyName", "UserData"]
    assert differences(base, dict(base)) == []


IMAGES = {
    "ami-x86": {"Architecture": "x86_64"},
    "ami-arm": {"Architecture": "arm64"},
    "ami-x86-b": {"Architecture": "x86_64"},
    "ami-i386": {"Architecture": "i386"},
}


def test_one_ami_per_architecture() -> None:
    amis = {"ami-x86": ["m5.large", "m5.xlarge"], "ami-arm": ["c6g.large"]}
    assert one_ami_per_arch(_group(), amis, IMAGES) == {"amd64": "ami-x86", "arm64": "ami-arm"}


def test_two_amis_of_one_architecture_are_refused_naming_their_types() -> None:
    amis = {"ami-x86": ["m5.large"], "ami-arm": ["c6g.large"], "ami-x86-b": ["m5.xlarge"]}
    with pytest.raises(ConversionError) as refused:
        one_ami_per_arch(_group(), amis, IMAGES)
    assert str(refused.value).startswith(
        "asg workers: two amd64 AMIs: ami-x86 for m5.large and ami-x86-b for m5.xlarge;"
    )


def test_an_ami_of_an_architecture_karpenter_does_not_launch_is_refused() -> None:
    for ami, arch in (("ami-i386", "'i386'"), ("ami-unknown", "None")):
        with pytest.raises(ConversionError) as refused:
            one_ami_per_arch(_group(), {ami: ["t2.micro"]}, IMAGES)
        assert str(refused.value) == (
            f"asg workers: AMI {ami} (for t2.micro): its architecture {arch} is not x86_64 or arm64"
        )


def test_check_bootable_refuses_types_without_an_ami_of_their_arch() -> None:
    check_bootable(_group(), {"c6g.large": "arm64"})  # AMIs not known by id: not checked
    group = _group(ami_arches={"amd64": "ami-x86"})
    check_bootable(group, {"m5.large": "amd64"})
    with pytest.raises(ConversionError) as refused:
        check_bootable(group, {"m5.large": "amd64", "c6g.xlarge": "arm64", "c6g.large": "arm64"})
    assert str(refused.value).startswith(
        "asg workers: no AMI for c6g.large, c6g.xlarge: the group's launch templates give AMIs"
        " for amd64 (ami-x86) only;"
    )


def test_kube_arch_is_the_first_architecture_karpenter_knows() -> None:
    assert kube_arch(["i386", "x86_64"]) == "amd64"
    assert kube_arch(["arm64"]) == "arm64"
    assert kube_arch(["x86_64", "arm64"]) == "amd64"
    with pytest.raises(ConversionError, match=r"architectures \['i386'\]: none is one"):
        kube_arch(["i386"])


def _described(name: str, gpus: list[dict[str, int]] | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "InstanceType": name,
        "VCpuInfo": {"DefaultVCpus": 8},
        "MemoryInfo": {"SizeInMiB": 32768},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
    }
    if gpus is not None:
        item["GpuInfo"] = {"Gpus": gpus}
    return item


def test_from_describe_sums_every_gpu_group() -> None:
    answer = {
        "InstanceTypes": [
            _described("p3.8xlarge", [{"Count": 4}, {"Count": 2}, {}]),
            _described("m5.2xlarge"),
        ]
    }
    assert from_describe(answer) == {
        "p3.8xlarge": Capacity(8, 32768, "amd64", gpus=6),
        "m5.2xlarge": Capacity(8, 32768, "amd64", gpus=0),
    }
    assert from_describe({}) == {}


def test_the_shipped_table_knows_common_types() -> None:
    table = shipped()
    assert table["m5.large"] == Capacity(2, 8192, "amd64", 0)
    assert table["c6g.large"].arch == "arm64"
    assert table["g4dn.xlarge"].gpus == 1


def test_an_instance_types_file_read_or_refused_with_what_it_should_be(tmp_path: Path) -> None:
    good = tmp_path / "types.json"
    good.write_text(json.dumps({"InstanceTypes": [_described("x.large")]}))
    assert read_file(good) == {"x.large": Capacity(8, 32768, "amd64")}
    for text in ("not json", json.dumps({"InstanceTypes": [{"InstanceType": "x"}]}), "[1]"):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(
            ConversionError, match="not the output of `aws ec2 describe-instance-types"
        ):
            read_file(bad)
    with pytest.raises(ConversionError, match=r"\(FileNotFoundError"):
        read_file(tmp_path / "absent.json")


def test_capacities_look_in_order_and_name_a_missing_type() -> None:
    first = {"m5.large": Capacity(2, 8192, "amd64")}
    second = {"m5.large": Capacity(99, 1, "amd64"), "z.large": Capacity(1, 1, "arm64")}
    capacities = Capacities(first, second)
    assert capacities.of("m5.large", "here").vcpu == 2
    assert capacities.of("z.large", "here").arch == "arm64"
    with pytest.raises(ConversionError) as refused:
        capacities.of("q.large", "here")
    assert str(refused.value).startswith(
        "here: instance type 'q.large' is not in the capacity table"
    )
    assert "--instance-types q.large --output json" in str(refused.value)

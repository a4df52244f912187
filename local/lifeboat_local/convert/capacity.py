"""vCPU, memory, architecture and GPUs of instance types, for NodePool ``limits``.

botocore ships no instance data. Talking to AWS, ``describe_instance_types`` answers;
offline (the settings form) the numbers come from ``instance_types.json`` next to this
module (its ``source`` field says where they were recorded) or from ``--instance-types FILE``,
the output of ``aws ec2 describe-instance-types --output json``, which wins over the table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources as package_files
from pathlib import Path
from typing import Any

from lifeboat_local.convert.model import ConversionError

# karpenter-provider-aws pkg/apis/v1/labels.go AWSToKubeArchitectures.
_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


def kube_arch(supported: list[str]) -> str:
    """The ``kubernetes.io/arch`` of an instance type as Karpenter gives it: the first of its
    SupportedArchitectures that it knows (``getArchitecture`` in karpenter-provider-aws
    pkg/providers/instancetype/types.go), so t2.micro's ``[i386, x86_64]`` is amd64."""
    for architecture in supported:
        if architecture in _ARCH:
            return _ARCH[architecture]
    raise ConversionError(
        f"architectures {supported}: none is one Karpenter launches (x86_64, arm64)"
    )


@dataclass(frozen=True)
class Capacity:
    vcpu: int
    memory_mib: int
    arch: str  # kubernetes.io/arch: amd64 or arm64
    gpus: int = 0


def from_describe(answer: dict[str, Any]) -> dict[str, Capacity]:
    """``DescribeInstanceTypes``' ``InstanceTypes`` as capacities by type name."""
    found: dict[str, Capacity] = {}
    for item in answer.get("InstanceTypes") or []:
        gpus = sum(g.get("Count", 0) for g in (item.get("GpuInfo") or {}).get("Gpus") or [])
        arches = item["ProcessorInfo"]["SupportedArchitectures"]
        found[item["InstanceType"]] = Capacity(
            vcpu=int(item["VCpuInfo"]["DefaultVCpus"]),
            memory_mib=int(item["MemoryInfo"]["SizeInMiB"]),
            arch=kube_arch(arches),
            gpus=gpus,
        )
    return found


def shipped() -> dict[str, Capacity]:
    text = (package_files.files("lifeboat_local.convert") / "instance_types.json").read_text()
    return {
        name: Capacity(t["vcpu"], t["memory_mib"], kube_arch([t["arch"]]), t["gpus"])
        for name, t in json.loads(text)["instance_types"].items()
    }


def read_file(path: Path) -> dict[str, Capacity]:
    """``--instance-types FILE``: describe-instance-types output; a clear error otherwise."""
    try:
        return from_describe(json.loads(path.read_text()))
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        RecursionError,
        ConversionError,
    ) as error:
        raise ConversionError(
            f"{path}: not the output of `aws ec2 describe-instance-types --output json`"
            f" ({type(error).__name__}: {error})"
        ) from None


class Capacities:
    """Looks types up in the given tables, in order; names what is missing and how to add it."""

    def __init__(self, *tables: dict[str, Capacity]) -> None:
        self.tables = tables

    def of(self, instance_type: str, where: str) -> Capacity:
        for table in self.tables:
            if instance_type in table:
                return table[instance_type]
        raise ConversionError(
            f"{where}: instance type {instance_type!r} is not in the capacity table: pass "
            f"--instance-types FILE, the output of `aws ec2 describe-instance-types "
            f"--instance-types {instance_type} --output json`"
        )

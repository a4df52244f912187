"""What an EC2 launch gives a NodeClaim: the instance type the requirements allow, and the
labels the AWS provider puts on the claim at launch (``instanceToNodeClaim``): zone,
capacity type and the ``karpenter.k8s.aws/instance-*`` labels of the type. Without them the
simulated drift controller would find the pool's well-known requirements unmet.

The instance types: vCPUs, memory and architecture from the table ``lifeboat convert``
ships (``convert/instance_types.json``, recorded from DescribeInstanceTypes), so a pool
converted from a node group (``m5.xlarge`` and the like) launches what it names; a type the
table lacks is sized from its name."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from lifeboat.karpenter.requirements import Requirement
from lifeboat.kube import nodes
from lifeboat_local.convert.capacity import Capacity, shipped

# Types a simulated launch picks from, cheapest first; sizes as vCPUs.
CATALOG = (
    "c5.large",
    "m5.large",
    "m5a.large",
    "c6i.large",
    "m6i.large",
    "r6i.large",
    "c6i.2xlarge",
    "c6a.2xlarge",
    "c7i.2xlarge",
)
_VCPUS = {"large": 2, "xlarge": 4, "2xlarge": 8}
_GIB_PER_VCPU = {"c": 2, "m": 4, "r": 8}
# GPU types (the sample cluster's Capacity Blocks): vCPUs, memory in MiB, GPUs, GPU name.
_GPU_TYPES = {"p5.48xlarge": (192, 2097152, 8, "h100")}


@cache
def table() -> dict[str, Capacity]:
    """The shipped instance types (GPU types left out: a GPU pool names its types)."""
    return {name: c for name, c in shipped().items() if not c.gpus}


def size_of(instance_type: str) -> tuple[int, int]:
    """(vCPUs, memory MiB) of ``instance_type``: the table's, else from its name."""
    if instance_type in _GPU_TYPES:
        vcpus, memory_mib, _, _ = _GPU_TYPES[instance_type]
        return vcpus, memory_mib
    known = table().get(instance_type)
    if known is not None:
        return known.vcpu, known.memory_mib
    family, _, size = instance_type.partition(".")
    letter = family[:1] or "m"
    vcpus = _VCPUS.get(size, 2)
    return vcpus, vcpus * _GIB_PER_VCPU.get(letter, 4) * 1024


def allocatable(instance_type: str) -> tuple[float, float]:
    """(cpu cores, memory bytes) a node of ``instance_type`` offers its pods."""
    vcpus, memory_mib = size_of(instance_type)
    cpu = (vcpus * 1000 - 70 - 20 * (vcpus // 4)) / 1000
    return cpu, int(memory_mib * 0.88) * 2**20


def type_labels(instance_type: str) -> dict[str, str]:
    """The well-known labels of an instance type (AWS provider, ``instancetype.go``)."""
    family, size = instance_type.split(".", 1)
    category = re.match(r"[a-z]+", family)
    generation = re.search(r"[0-9]+", family)
    vcpus, memory_mib = size_of(instance_type)
    letter = category.group(0) if category else "m"
    if instance_type in _GPU_TYPES:
        return _gpu_type_labels(instance_type, family, size)
    known = table().get(instance_type)
    return {
        nodes.INSTANCE_TYPE_LABEL: instance_type,
        "karpenter.k8s.aws/instance-category": letter,
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-generation": generation.group(0) if generation else "5",
        "karpenter.k8s.aws/instance-size": size,
        "karpenter.k8s.aws/instance-cpu": str(vcpus),
        "karpenter.k8s.aws/instance-memory": str(memory_mib),
        "karpenter.k8s.aws/instance-hypervisor": "nitro",
        "karpenter.k8s.aws/instance-tenancy": "default",
        "kubernetes.io/arch": known.arch if known else "amd64",
        "kubernetes.io/os": "linux",
    }


def _gpu_type_labels(instance_type: str, family: str, size: str) -> dict[str, str]:
    vcpus, memory_mib, gpus, gpu_name = _GPU_TYPES[instance_type]
    return {
        nodes.INSTANCE_TYPE_LABEL: instance_type,
        "karpenter.k8s.aws/instance-category": family[0],
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-generation": family[1:],
        "karpenter.k8s.aws/instance-size": size,
        "karpenter.k8s.aws/instance-cpu": str(vcpus),
        "karpenter.k8s.aws/instance-memory": str(memory_mib),
        "karpenter.k8s.aws/instance-gpu-count": str(gpus),
        "karpenter.k8s.aws/instance-gpu-name": gpu_name,
        "karpenter.k8s.aws/instance-hypervisor": "nitro",
        "karpenter.k8s.aws/instance-tenancy": "default",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
    }


def resources(instance_type: str) -> tuple[dict[str, str], dict[str, str]]:
    """(capacity, allocatable) of an instance type, as a Node reports them."""
    labels = type_labels(instance_type)
    vcpus, memory_mib = size_of(instance_type)
    capacity = {"cpu": str(vcpus), "memory": f"{memory_mib * 1024 - 450_000}Ki", "pods": "29"}
    allocatable = {
        "cpu": f"{vcpus * 1000 - 70 - 20 * (vcpus // 4)}m",
        "memory": f"{int(memory_mib * 0.88)}Mi",
        "pods": "29",
    }
    gpus = labels.get("karpenter.k8s.aws/instance-gpu-count")
    if gpus:  # the NVIDIA device plugin's resource
        capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = gpus
    return capacity, allocatable


def _requirements(claim: dict[str, Any]) -> list[Requirement]:
    return [Requirement.parse(r) for r in claim.get("spec", {}).get("requirements") or []]


def _satisfies(requirements: list[Requirement], labels: dict[str, str]) -> bool:
    for requirement in requirements:
        value = labels.get(requirement.key)
        if value is None:
            continue  # zone, capacity type: chosen separately; custom keys: the claim's labels
        if not requirement.allows(value):
            return False
    return True


def choose(claim: dict[str, Any]) -> tuple[str, str, str]:
    """(instance type, zone, capacity type) for a launch, honouring the requirements."""
    requirements = _requirements(claim)
    by_key = {r.key: r for r in requirements}
    instance_type = next(
        (t for t in CATALOG if _satisfies(requirements, type_labels(t))), CATALOG[1]
    )
    listed = by_key.get(nodes.INSTANCE_TYPE_LABEL)
    if listed is not None and not listed.complement and listed.values:
        # The cheapest of the types listed (the provisioner lists those that hold its pods).
        instance_type = min(listed.values, key=lambda t: (size_of(t), t))
    zone = _pick(by_key.get(nodes.ZONE_LABEL), "us-east-1a")
    capacity_type = _pick(by_key.get(nodes.CAPACITY_TYPE_LABEL), "on-demand", prefer="spot")
    return instance_type, zone, capacity_type


def _pick(requirement: Requirement | None, default: str, prefer: str | None = None) -> str:
    if requirement is None:
        return default
    if prefer is not None and requirement.allows(prefer):
        return prefer
    if requirement.allows(default):
        return default
    return sorted(requirement.values)[0] if requirement.values else default

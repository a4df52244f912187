"""Which AMI a node should run, and how far behind it is. Pure: facts in, verdicts out.

A node's Kubernetes minor comes from ``status.nodeInfo.kubeletVersion``, its OS from
``osImage`` (Amazon Linux 2023, Amazon Linux 2, Bottlerocket), its architecture from
``status.nodeInfo.architecture`` (or the ``kubernetes.io/arch`` label) and its variant from
its GPU capacity (``nvidia.com/gpu``). They name the public SSM parameter AWS publishes for
the recommended AMI (``recommended_parameter``).

Its AMI is the one EC2 says the instance runs (``DescribeInstances`` ``ImageId`` of the
instance in ``spec.providerID``), as Lifeboat's rotation selects nodes by ``--ami``, so the
AMIs listed here select exactly those nodes; when EC2 does not know the instance, the
``eks.amazonaws.com/nodegroup-image`` label EKS sets on managed nodes is used and the source
says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

GROUP_LABELS = (
    "karpenter.sh/nodepool",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "kops.k8s.io/instancegroup",
)
IMAGE_LABEL = "eks.amazonaws.com/nodegroup-image"
_ARCH = {"amd64": "x86_64", "arm64": "arm64", "x86_64": "x86_64"}


@dataclass(frozen=True)
class NodeFacts:
    name: str
    instance_id: str | None
    version: str | None  # "1.31"
    os: str | None  # al2023, al2, bottlerocket
    arch: str  # x86_64 or arm64
    gpu: bool
    group: str  # "NodePool general", "node group legacy", "(no group)"
    label_image: str | None
    group_label: tuple[str, str] | None = None  # the label naming the group, and its value


def _instance_id(provider_id: str) -> str | None:
    found = re.fullmatch(r"aws:///[^/]*/(i-[0-9a-f]+)", provider_id or "")
    return found.group(1) if found else None


def facts(node: dict[str, Any]) -> NodeFacts:
    metadata, status = node.get("metadata") or {}, node.get("status") or {}
    labels = metadata.get("labels") or {}
    info = status.get("nodeInfo") or {}
    kubelet = re.match(r"v?(\d+)\.(\d+)", str(info.get("kubeletVersion") or ""))
    image = str(info.get("osImage") or "").lower()
    os = (
        "bottlerocket" if image.startswith("bottlerocket")
        else "al2023" if image.startswith("amazon linux 2023")
        else "al2" if image.startswith("amazon linux 2")
        else None
    )  # fmt: skip
    arch = str(info.get("architecture") or labels.get("kubernetes.io/arch") or "amd64")
    capacity = status.get("capacity") or {}
    group_key = next((k for k in GROUP_LABELS if labels.get(k)), None)
    group = (
        "(no group)" if group_key is None
        else f"NodePool {labels[group_key]}" if group_key == "karpenter.sh/nodepool"
        else f"node group {labels[group_key]}"
    )  # fmt: skip
    return NodeFacts(
        name=str(metadata.get("name", "")),
        instance_id=_instance_id(str((node.get("spec") or {}).get("providerID") or "")),
        version=f"{kubelet.group(1)}.{kubelet.group(2)}" if kubelet else None,
        os=os,
        arch=_ARCH.get(arch, arch),
        gpu=str(capacity.get("nvidia.com/gpu", "0")) not in ("0", ""),
        group=group,
        label_image=labels.get(IMAGE_LABEL),
        group_label=(group_key, str(labels[group_key])) if group_key else None,
    )


def recommended_parameter(node: NodeFacts) -> str | None:
    """The public SSM parameter naming the recommended AMI for the node, None if unknown."""
    if node.version is None or node.os is None:
        return None
    if node.os == "al2023":
        variant = "nvidia" if node.gpu else "standard"
        return (
            f"/aws/service/eks/optimized-ami/{node.version}/amazon-linux-2023/{node.arch}/"
            f"{variant}/recommended/image_id"
        )
    if node.os == "al2":
        flavour = (
            "amazon-linux-2-gpu"
            if node.gpu
            else ("amazon-linux-2-arm64" if node.arch == "arm64" else "amazon-linux-2")
        )
        return f"/aws/service/eks/optimized-ami/{node.version}/{flavour}/recommended/image_id"
    suffix = "-nvidia" if node.gpu else ""
    return f"/aws/service/bottlerocket/aws-k8s-{node.version}{suffix}/{node.arch}/latest/image_id"


@dataclass(frozen=True)
class Verdict:
    node: NodeFacts
    ami: str | None
    ami_source: str  # "ec2", "label", "unknown"
    parameter: str | None
    recommended: str | None
    ami_created: datetime | None
    recommended_created: datetime | None
    age_days: int | None  # of the node's AMI, at the audit's instant
    status: str  # current, outdated, unknown
    gating: bool  # outdated and older than --max-age-days

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node.name,
            "group": self.node.group,
            "instance_id": self.node.instance_id,
            "kubernetes": self.node.version,
            "os": self.node.os,
            "arch": self.node.arch,
            "ami": self.ami,
            "ami_source": self.ami_source,
            "ami_created": _iso(self.ami_created),
            "age_days": self.age_days,
            "recommended": self.recommended,
            "recommended_created": _iso(self.recommended_created),
            "parameter": self.parameter,
            "status": self.status,
            "over_max_age": self.gating,
        }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def judge(
    node: NodeFacts,
    ami: str | None,
    ami_source: str,
    recommended: dict[str, str],
    created: dict[str, datetime],
    now: datetime,
    max_age_days: int,
) -> Verdict:
    parameter = recommended_parameter(node)
    target = recommended.get(parameter) if parameter else None
    made = created.get(ami) if ami else None
    age = (now - made).days if made else None
    if ami is None or target is None:
        status = "unknown"
    else:
        status = "current" if ami == target else "outdated"
    gating = status == "outdated" and age is not None and age > max_age_days
    return Verdict(
        node=node,
        ami=ami,
        ami_source=ami_source,
        parameter=parameter,
        recommended=target,
        ami_created=made,
        recommended_created=created.get(target) if target else None,
        age_days=age,
        status=status,
        gating=gating,
    )

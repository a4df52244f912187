"""A NodeGroup as a NodePool (karpenter.sh/v1) and an EC2NodeClass (karpenter.k8s.aws/v1).

Choices, stated (also in each NodePool's ``lifeboat.dev/conversion`` annotation): disruption
is conservative, ``consolidationPolicy: WhenEmpty`` after 5 minutes and one node at a time
(``budgets: [{nodes: "1"}]``), so that a converted pool does not start repacking a fleet that
was sized by hand; loosen it once the pool has run a while. ``limits`` are the group's
maximum times one instance's vCPU and memory (the largest type's, for a mixed group), so the
pool never grows past what the group could.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from kubemu import validation
from kubemu.errors import ApiError
from kubemu.resources import EC2NODECLASSES, NODEPOOLS
from lifeboat_local.convert.capacity import Capacities, Capacity
from lifeboat_local.convert.labels import check_key, check_value
from lifeboat_local.convert.model import ConversionError, NodeGroup

DISRUPTION: dict[str, Any] = {
    "consolidationPolicy": "WhenEmpty",
    "consolidateAfter": "5m",
    "budgets": [{"nodes": "1"}],
}
CHOICE = (
    "disruption: WhenEmpty after 5m, 1 node at a time (conservative; loosen once the pool "
    "has run); limits: max nodes x instance capacity"
)
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _name(group: NodeGroup) -> str:
    if len(group.name) > 253 or not _DNS_SUBDOMAIN.match(group.name):
        fixed = re.sub(r"[^-a-z0-9.]", "-", group.name.lower()).strip("-.")[:253]
        raise ConversionError(
            f"{group.source}: name {group.name!r} is not a valid NodePool name (a DNS "
            f"subdomain: lower case, digits, '-' and '.'): rename it, e.g. {fixed!r}"
        )
    return group.name


def _quantity_mib(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def _requirements(group: NodeGroup, found: list[Capacity]) -> list[dict[str, Any]]:
    """The pool's node requirements: the group's instance types, capacity type and their
    architectures, and its zones when it has any."""
    arches = sorted({c.arch for c in found})
    requirements: list[dict[str, Any]] = [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": list(group.instance_types),
        },
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [group.capacity_type]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": arches},
    ]
    if group.zones:
        requirements.append(
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": sorted(group.zones)}
        )
    return requirements


def _add_gpu(
    group: NodeGroup,
    found: list[Capacity],
    requirements: list[dict[str, Any]],
    taints: list[dict[str, Any]],
    limits: dict[str, str],
) -> None:
    """Add what a GPU group's pool needs (in place): a GPU-count requirement, the GPU taint
    unless the group has one, and a GPU limit; an error when no instance type has a GPU."""
    if not any(c.gpus for c in found):
        raise ConversionError(
            f"{group.source}: gpu_enabled but {', '.join(group.instance_types)} has no GPU:"
            " set gpu_enabled to 'false' or name a GPU instance type"
        )
    requirements.append(
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}
    )
    if not any(t["key"] == GPU_TAINT["key"] for t in taints):
        taints.append(dict(GPU_TAINT))
    limits["nvidia.com/gpu"] = str(group.max_size * max(c.gpus for c in found))


def _check_labels_and_taints(group: NodeGroup) -> None:
    """Reject a label or taint key or value the API server would refuse."""
    for key, value in group.labels.items():
        check_key(key, f"{group.source}: labels")
        check_value(key, value, f"{group.source}: labels")
    for taint in group.taints:
        check_key(taint.key, f"{group.source}: taints")
        if taint.value is not None:
            check_value(taint.key, taint.value, f"{group.source}: taints")


def _template(
    group: NodeGroup, name: str, requirements: list[dict[str, Any]], taints: list[dict[str, Any]]
) -> dict[str, Any]:
    """The pool's ``spec.template``: its EC2NodeClass, requirements, taints and labels."""
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
        "requirements": requirements,
    }
    if taints:
        template_spec["taints"] = taints
    template: dict[str, Any] = {"spec": template_spec}
    if group.labels:
        template["metadata"] = {"labels": dict(group.labels)}
    return template


def node_pool(group: NodeGroup, capacities: Capacities) -> dict[str, Any]:
    name = _name(group)
    found = [capacities.of(t, group.source) for t in group.instance_types]
    requirements = _requirements(group, found)
    taints = [
        {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
        for t in group.taints
    ]
    limits = {
        "cpu": str(group.max_size * max(c.vcpu for c in found)),
        "memory": _quantity_mib(group.max_size * max(c.memory_mib for c in found)),
    }
    if group.gpu:
        _add_gpu(group, found, requirements, taints, limits)
    _check_labels_and_taints(group)
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {
            "name": name,
            "annotations": {
                "lifeboat.dev/converted-from": group.source[-253:],
                "lifeboat.dev/conversion": CHOICE,
            },
        },
        "spec": {
            "template": _template(group, name, requirements, taints),
            "limits": limits,
            "disruption": copy.deepcopy(DISRUPTION),
        },
    }


def node_class(group: NodeGroup) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if group.ami_id:
        spec["amiFamily"] = group.ami_family or "Custom"
        spec["amiSelectorTerms"] = [{"id": group.ami_id}]
    else:
        spec["amiSelectorTerms"] = [{"alias": group.ami_alias or "al2023@latest"}]
    if group.instance_profile:
        spec["instanceProfile"] = group.instance_profile
    elif group.role:
        spec["role"] = group.role
    else:
        raise ConversionError(f"{group.source}: no node role or instance profile found")
    if not group.subnets:
        raise ConversionError(f"{group.source}: no subnets found")
    spec["subnetSelectorTerms"] = [s.as_term() for s in group.subnets]
    if not group.security_groups:
        raise ConversionError(f"{group.source}: no security groups found")
    spec["securityGroupSelectorTerms"] = [s.as_term() for s in group.security_groups]
    volume = group.root_volume
    if volume is not None:
        ebs: dict[str, Any] = {
            "volumeSize": f"{volume.size_gib}Gi",
            "volumeType": volume.volume_type,
        }
        if volume.iops is not None and volume.volume_type in ("gp3", "io1", "io2"):
            ebs["iops"] = volume.iops
        if volume.throughput is not None and volume.volume_type == "gp3":
            ebs["throughput"] = volume.throughput
        if volume.encrypted is not None:
            ebs["encrypted"] = volume.encrypted
        spec["blockDeviceMappings"] = [
            {"deviceName": volume.device_name, "rootVolume": True, "ebs": ebs}
        ]
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": _name(group)},
        "spec": spec,
    }


def convert(group: NodeGroup, capacities: Capacities) -> list[dict[str, Any]]:
    """The pool and its class, each checked as the API server with Karpenter's CRDs would
    check it (kubemu's validation, fieldValidation=Strict) before anyone applies it."""
    objects = [node_pool(group, capacities), node_class(group)]
    for obj, resource in zip(objects, (NODEPOOLS, EC2NODECLASSES), strict=True):
        try:
            validation.check(resource, copy.deepcopy(obj), "Strict")
        except ApiError as error:
            raise ConversionError(
                f"{group.source}: the {obj['kind']} is refused: {error}"
            ) from None
    return objects

"""A NodeGroup as a NodePool (karpenter.sh/v1) and an EC2NodeClass (karpenter.k8s.aws/v1).

Choices, stated (also in each NodePool's ``lifeboat.dev/conversion`` annotation): disruption
is conservative, ``consolidationPolicy: WhenEmpty`` after 5 minutes and one node at a time
(``budgets: [{nodes: "1"}]``), so that a converted pool does not start repacking a fleet that
was sized by hand; loosen it once the pool has run a while. ``expireAfter`` is ``Never`` unless
``--expire-after`` says otherwise: a node group's nodes never expire, and Karpenter's expiry
is forceful (its CRD default is 720h; ``nodeclaim/expiration`` deletes the claim with no
budget, no do-not-disrupt and no replacement first), so a default would force-drain a group
moved in a few hours almost all at once 30 days later. ``limits`` are the group's maximum
times one instance's vCPU and memory (the largest type's, for a mixed group), so the pool
never grows past what the group could.
"""

from __future__ import annotations

import copy
from typing import Any

from kubemu import validation
from kubemu.errors import ApiError
from kubemu.resources import EC2NODECLASSES, NODEPOOLS
from lifeboat_local.convert.capacity import Capacities, Capacity
from lifeboat_local.convert.labels import check_key, check_value
from lifeboat_local.convert.mixed import check_bootable
from lifeboat_local.convert.model import ConversionError, NodeGroup, RootVolume
from lifeboat_local.convert.names import is_valid, pool_name

DISRUPTION: dict[str, Any] = {
    "consolidationPolicy": "WhenEmpty",
    "consolidateAfter": "5m",
    "budgets": [{"nodes": "1"}],
}
CHOICE = (
    "disruption: WhenEmpty after 5m, 1 node at a time (conservative; loosen once the pool "
    "has run); limits: max nodes x instance capacity"
)
NEVER = "Never"


def choice(expire_after: str) -> str:
    """The pool's ``lifeboat.dev/conversion`` annotation: what was chosen, honestly (the
    one-at-a-time budget does not hold for expiry, which is forceful)."""
    if expire_after == NEVER:
        expiry = "expireAfter: Never (as the node group: nodes do not expire)"
    else:
        expiry = (
            f"expireAfter: {expire_after} (forceful: expired nodes are drained regardless "
            "of the budget and do-not-disrupt)"
        )
    return f"{CHOICE}; {expiry}"


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def _name(group: NodeGroup) -> str:
    """The pool's (and class's) name: ``--name``, else the group's own name mapped to a valid
    one (``convert.names``)."""
    if group.pool_name is None:
        return pool_name(group.name)
    if not is_valid(group.pool_name):
        raise ConversionError(
            f"{group.source}: --name {group.pool_name!r} is not a valid NodePool name (lower "
            f"case, digits, '-' and '.', at most 63): e.g. {pool_name(group.pool_name)!r}"
        )
    return group.pool_name


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
    group: NodeGroup,
    name: str,
    requirements: list[dict[str, Any]],
    taints: list[dict[str, Any]],
    expire_after: str,
) -> dict[str, Any]:
    """The pool's ``spec.template``: its EC2NodeClass, requirements, taints, labels and
    ``expireAfter`` (always written: the CRD's default, 720h, is not a node group's)."""
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
        "expireAfter": expire_after,
        "requirements": requirements,
    }
    if taints:
        template_spec["taints"] = taints
    template: dict[str, Any] = {"spec": template_spec}
    if group.labels:
        template["metadata"] = {"labels": dict(group.labels)}
    return template


def _annotations(group: NodeGroup, name: str, expire_after: str) -> dict[str, str]:
    annotations = {
        "lifeboat.dev/converted-from": group.source[-253:],
        "lifeboat.dev/conversion": "; ".join([choice(expire_after), *group.choices]),
    }
    if name != group.name:
        annotations["lifeboat.dev/node-group"] = group.name
    return annotations


def node_pool(
    group: NodeGroup, capacities: Capacities, expire_after: str = NEVER
) -> dict[str, Any]:
    name = _name(group)
    found = [capacities.of(t, group.source) for t in group.instance_types]
    check_bootable(group, {t: c.arch for t, c in zip(group.instance_types, found, strict=True)})
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
        "metadata": {"name": name, "annotations": _annotations(group, name, expire_after)},
        "spec": {
            "template": _template(group, name, requirements, taints, expire_after),
            "limits": limits,
            "disruption": copy.deepcopy(DISRUPTION),
        },
    }


def _ami(group: NodeGroup) -> dict[str, Any]:
    """The class's AMI: the group's AMI ids (one per architecture) with their family, or its
    alias; never a silent ``latest`` (convert refuses a group whose AMI it does not know)."""
    if group.ami_id:
        ids = [group.ami_id, *group.more_ami_ids]
        return {
            "amiFamily": group.ami_family or "Custom",
            "amiSelectorTerms": [{"id": ami} for ami in ids],
        }
    if not group.ami_alias:
        raise ConversionError(
            f"{group.source}: the group names no AMI: pass --ami-alias FAMILY@VERSION (the "
            "release it runs, e.g. al2023@v20241121), or --ami-alias latest to follow every "
            "release (each one drifts every node)"
        )
    return {"amiSelectorTerms": [{"alias": group.ami_alias}]}


def _ebs(volume: RootVolume) -> dict[str, Any]:
    """The root volume's EBS settings: encrypted (with the template's KMS key) unless the
    group's template says it is not. Listing a block device drops Karpenter's own default,
    which is encrypted (karpenter-provider-aws ``amifamily`` ``DefaultEBS``), so it is
    written."""
    ebs: dict[str, Any] = {"volumeSize": f"{volume.size_gib}Gi", "volumeType": volume.volume_type}
    if volume.iops is not None and volume.volume_type in ("gp3", "io1", "io2"):
        ebs["iops"] = volume.iops
    if volume.throughput is not None and volume.volume_type == "gp3":
        ebs["throughput"] = volume.throughput
    ebs["encrypted"] = volume.encrypted is not False
    if volume.kms_key_id and ebs["encrypted"]:
        ebs["kmsKeyID"] = volume.kms_key_id
    return ebs


def _access(group: NodeGroup) -> dict[str, Any]:
    """The nodes' IAM role (or instance profile), subnets and security groups."""
    spec: dict[str, Any] = {}
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
    return spec


def node_class(group: NodeGroup) -> dict[str, Any]:
    spec: dict[str, Any] = {**_ami(group), **_access(group)}
    mappings: list[dict[str, Any]] = [
        {"deviceName": v.device_name, "ebs": _ebs(v)} for v in group.more_volumes
    ]
    volume = group.root_volume
    if volume is not None:
        root = {"deviceName": volume.device_name, "rootVolume": True, "ebs": _ebs(volume)}
        mappings.insert(0, root)
    if mappings:
        spec["blockDeviceMappings"] = mappings
    if group.metadata_options:
        spec["metadataOptions"] = dict(group.metadata_options)
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": _name(group)},
        "spec": spec,
    }


def convert(
    group: NodeGroup, capacities: Capacities, expire_after: str = NEVER
) -> list[dict[str, Any]]:
    """The pool and its class, each checked as the API server with Karpenter's CRDs would
    check it (kubemu's validation, fieldValidation=Strict) before anyone applies it."""
    objects = [node_pool(group, capacities, expire_after), node_class(group)]
    for obj, resource in zip(objects, (NODEPOOLS, EC2NODECLASSES), strict=True):
        try:
            validation.check(resource, copy.deepcopy(obj), "Strict")
        except ApiError as error:
            raise ConversionError(
                f"{group.source}: the {obj['kind']} is refused: {error}"
            ) from None
    return objects

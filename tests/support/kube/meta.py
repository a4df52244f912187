"""What every builder shares: the sample cluster's names, Karpenter's keys, metadata,
labels, conditions and the deep merge of ``overrides``."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

KARPENTER_API = "karpenter.sh/v1"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
NODE_CLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
# On the Node only: set by registration.go and initialization.go.
REGISTERED_LABEL = "karpenter.sh/registered"
INITIALIZED_LABEL = "karpenter.sh/initialized"
HASH_ANNOTATION = "karpenter.sh/nodepool-hash"
HASH_VERSION_ANNOTATION = "karpenter.sh/nodepool-hash-version"
HASH_VERSION = "v3"  # pkg/apis/v1/nodepool.go NodePoolHashVersion
TERMINATION_FINALIZER = "karpenter.sh/termination"
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
NODEGROUP_CAPACITY_LABEL = "eks.amazonaws.com/capacityType"

# The sample cluster's first Karpenter node (events/cluster.yaml).
NODEPOOL = "general"
NODEPOOL_UID = "0b7e6a1c-5d2f-4c3a-9e1b-000000000900"
NODEPOOL_HASH = "6821555240594823858"
NODECLAIM = "general-7xkqz"
NODECLAIM_UID = "0b7e6a1c-5d2f-4c3a-9e1b-000000000101"
NODE = "ip-10-0-1-11.ec2.internal"
NODE_UID = "0b7e6a1c-5d2f-4c3a-9e1b-000000000001"
INSTANCE = "i-0a1b2c3d4e5f60001"
ZONE = "us-east-1a"
INSTANCE_TYPE = "m5.large"
CREATED = "2026-11-20T08:00:00Z"

NODE_CLASS_REF: Mapping[str, str] = {
    "group": "karpenter.k8s.aws",
    "kind": "EC2NodeClass",
    "name": "default",
}
REQUIREMENTS: tuple[Mapping[str, Any], ...] = (
    {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": ["spot", "on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
)
# Karpenter's CRD default for spec.disruption.budgets.
DEFAULT_BUDGETS: tuple[Mapping[str, Any], ...] = ({"nodes": "10%"},)


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Any = _Remove()


def merge(obj: Obj, overrides: Mapping[str, Any]) -> Obj:
    """Deep-merge ``overrides`` into ``obj`` (in place, and returned): dicts merge key by
    key, any other value replaces, ``REMOVE`` deletes the key."""
    for key, value in overrides.items():
        if value is REMOVE:
            obj.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(obj.get(key), dict):
            merge(obj[key], value)
        else:
            obj[key] = copy.deepcopy(value)
    return obj


def provider_id(zone: str, instance_id: str) -> str:
    """``spec.providerID`` as the AWS cloud provider writes it."""
    return f"aws:///{zone}/{instance_id}"


def owner_reference(kind: str, name: str, uid: str | None, api_version: str) -> Obj:
    reference: Obj = {"apiVersion": api_version, "kind": kind, "name": name}
    if uid is not None:
        reference["uid"] = uid
    reference["blockOwnerDeletion"] = True
    return reference


def condition(kind: str, status: bool, at: str) -> Obj:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "lastTransitionTime": at,
        "reason": kind if status else f"Not{kind}",
        "message": "",
        "observedGeneration": 1,
    }


def metadata(
    name: str,
    uid: str | None,
    created: str | None,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    finalizers: Sequence[str],
    deleting: str | None,
    namespace: str | None = None,
) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if uid is not None:
        meta["uid"] = uid
    if created is not None:
        meta["creationTimestamp"] = created
    if deleting is not None:
        meta["deletionTimestamp"] = deleting
    if finalizers:
        meta["finalizers"] = list(finalizers)
    meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def hash_annotations(nodepool_hash: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    annotations: dict[str, str] = {}
    if nodepool_hash is not None:
        annotations = {HASH_ANNOTATION: nodepool_hash, HASH_VERSION_ANNOTATION: HASH_VERSION}
    annotations.update(extra)
    return annotations


def claim_spec(
    node_class: str,
    requirements: Sequence[Mapping[str, Any]],
    taints: Sequence[Mapping[str, Any]],
    startup_taints: Sequence[Mapping[str, Any]],
    expire_after: str | None,
    termination_grace_period: str | None,
) -> Obj:
    """A NodeClaim's spec, or a NodePool template's: the same fields, as Karpenter copies
    them from one to the other (``nodeclaimtemplate.go``)."""
    spec: Obj = {
        "nodeClassRef": {**NODE_CLASS_REF, "name": node_class},
        "requirements": copy.deepcopy(list(requirements)),
    }
    if taints:
        spec["taints"] = copy.deepcopy(list(taints))
    if startup_taints:
        spec["startupTaints"] = copy.deepcopy(list(startup_taints))
    if expire_after is not None:
        spec["expireAfter"] = expire_after
    if termination_grace_period is not None:
        spec["terminationGracePeriod"] = termination_grace_period
    return spec


@dataclass(frozen=True)
class InstanceOptions:
    """The EC2 instance behind a NodeClaim or a Node."""

    instance_id: str = INSTANCE
    zone: str = ZONE
    instance_type: str = INSTANCE_TYPE
    capacity_type: str = "spot"


def instance_labels(o: InstanceOptions) -> dict[str, str]:
    """The well-known labels of the instance's node (kubelet, AWS cloud provider)."""
    return {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": o.instance_type,
        "topology.kubernetes.io/zone": o.zone,
        "topology.kubernetes.io/region": o.zone[:-1],
    }


def karpenter_labels(o: InstanceOptions, nodepool: str, node_class: str) -> dict[str, str]:
    """A launched NodeClaim's labels: the pool and node class (at creation), the instance's
    (at launch). Registration copies them all onto the Node."""
    labels = instance_labels(o)
    labels[NODEPOOL_LABEL] = nodepool
    labels[NODE_CLASS_LABEL] = node_class
    labels[CAPACITY_TYPE_LABEL] = o.capacity_type
    return labels

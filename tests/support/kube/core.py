"""Nodes (Karpenter's and a managed node group's), Pods and PodDisruptionBudgets."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .meta import (
    CREATED,
    INITIALIZED_LABEL,
    KARPENTER_API,
    NODE,
    NODE_UID,
    NODECLAIM,
    NODECLAIM_UID,
    NODEGROUP_CAPACITY_LABEL,
    NODEGROUP_LABEL,
    NODEPOOL,
    REGISTERED_LABEL,
    TERMINATION_FINALIZER,
    InstanceOptions,
    Obj,
    condition,
    instance_labels,
    karpenter_labels,
    merge,
    metadata,
    owner_reference,
    provider_id,
)

# --- Node -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeOptions(InstanceOptions):
    name: str = NODE
    uid: str | None = NODE_UID
    # None: not Karpenter's (see NODE_GROUP_NODE).
    nodepool: str | None = NODEPOOL
    # The owning NodeClaim (ownerReference); None: none.
    nodeclaim: str | None = NODECLAIM
    nodeclaim_uid: str | None = NODECLAIM_UID
    node_class: str = "default"
    registered: bool = True
    initialized: bool = True
    # For a node without a NodePool: its managed node group.
    nodegroup: str = "system"
    # None: no Ready condition at all (the kubelet has not reported yet).
    ready: bool | None = True
    unschedulable: bool = False
    taints: Sequence[Mapping[str, Any]] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    # None: as live, Karpenter's termination finalizer on a Karpenter node, none otherwise.
    finalizers: Sequence[str] | None = None
    deleting: str | None = None
    created: str = CREATED
    allocatable: Mapping[str, str] = field(
        default_factory=lambda: {"cpu": "1930m", "memory": "7220Mi", "pods": "29"}
    )
    # None: aws:///<zone>/<instance_id>.
    provider_id: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)


def node(options: NodeOptions | None = None, /, **changes: Any) -> Obj:
    o = replace(options or NodeOptions(), **changes)
    if o.nodepool is not None:
        labels = karpenter_labels(o, o.nodepool, o.node_class)
        if o.registered:
            labels[REGISTERED_LABEL] = "true"
        if o.initialized:
            labels[INITIALIZED_LABEL] = "true"
    else:
        labels = instance_labels(o)
        labels[NODEGROUP_LABEL] = o.nodegroup
        labels[NODEGROUP_CAPACITY_LABEL] = o.capacity_type.upper().replace("-", "_")
    labels["kubernetes.io/hostname"] = o.name
    labels.update(o.labels)
    finalizers = o.finalizers
    if finalizers is None:
        finalizers = (TERMINATION_FINALIZER,) if o.nodepool is not None else ()
    meta = metadata(o.name, o.uid, o.created, labels, o.annotations, finalizers, o.deleting)
    if o.nodeclaim is not None:
        meta["ownerReferences"] = [
            owner_reference("NodeClaim", o.nodeclaim, o.nodeclaim_uid, KARPENTER_API)
        ]
    spec: Obj = {"providerID": o.provider_id or provider_id(o.zone, o.instance_id)}
    if o.unschedulable:
        spec["unschedulable"] = True
    if o.taints:
        spec["taints"] = copy.deepcopy(list(o.taints))
    status: Obj = {"allocatable": dict(o.allocatable)}
    if o.ready is not None:
        ready = condition("Ready", o.ready, o.created)
        ready["reason"] = "KubeletReady" if o.ready else "KubeletNotReady"
        status["conditions"] = [ready]
    built: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec}
    built["status"] = status
    return merge(built, o.overrides)


# A managed node group's node: no NodePool, no NodeClaim (sample: ip-10-0-3-16).
NODE_GROUP_NODE = NodeOptions(
    name="ip-10-0-3-16.ec2.internal",
    uid=None,
    instance_id="i-0a1b2c3d4e5f60006",
    zone="us-east-1c",
    capacity_type="on-demand",
    nodepool=None,
    nodeclaim=None,
    nodeclaim_uid=None,
)


# --- Pod and PodDisruptionBudget --------------------------------------------------------------


@dataclass(frozen=True)
class PodOptions:
    name: str = "web-1"
    namespace: str = "default"
    uid: str | None = None
    node_name: str | None = NODE
    labels: Mapping[str, str] = field(default_factory=lambda: {"app": "web"})
    annotations: Mapping[str, str] = field(default_factory=dict)
    phase: str = "Running"
    # None: no conditions at all (as cluster files often have it).
    ready: bool | None = True
    # The controlling owner, e.g. {"kind": "ReplicaSet", "name": "web-5d8f7c"} or
    # {"kind": "DaemonSet", "name": "node-exporter"} (apiVersion apps/v1); None: a bare pod.
    owner: Mapping[str, str] | None = None
    created: str | None = "2026-11-20T08:05:00Z"
    deleting: str | None = None
    image: str = "public.ecr.aws/nginx/nginx"
    overrides: Mapping[str, Any] = field(default_factory=dict)


def pod(options: PodOptions | None = None, /, **changes: Any) -> Obj:
    o = replace(options or PodOptions(), **changes)
    meta = metadata(
        o.name, o.uid, o.created, o.labels, o.annotations, (), o.deleting, namespace=o.namespace
    )
    if o.owner is not None:
        owner: Obj = {"apiVersion": "apps/v1", **o.owner}
        owner.setdefault("uid", f"{owner['kind'].lower()}-{owner['name']}")
        owner["controller"] = True
        meta["ownerReferences"] = [owner]
    spec: Obj = {"containers": [{"name": "app", "image": o.image}]}
    if o.node_name is not None:
        spec = {"nodeName": o.node_name, **spec}
    status: Obj = {"phase": o.phase}
    if o.ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if o.ready else "False"}]
    built: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    built["status"] = status
    return merge(built, o.overrides)


@dataclass(frozen=True)
class PdbOptions:
    name: str = "web"
    namespace: str = "default"
    match_labels: Mapping[str, str] = field(default_factory=lambda: {"app": "web"})
    # Neither given: maxUnavailable 1.
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    unhealthy_pod_eviction_policy: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)


def pdb(options: PdbOptions | None = None, /, **changes: Any) -> Obj:
    o = replace(options or PdbOptions(), **changes)
    spec: Obj = {"selector": {"matchLabels": dict(o.match_labels)}}
    if o.min_available is not None:
        spec["minAvailable"] = o.min_available
    if o.max_unavailable is not None or o.min_available is None:
        spec["maxUnavailable"] = 1 if o.max_unavailable is None else o.max_unavailable
    if o.unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = o.unhealthy_pod_eviction_policy
    built: Obj = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": o.name, "namespace": o.namespace},
        "spec": spec,
    }
    return merge(built, o.overrides)

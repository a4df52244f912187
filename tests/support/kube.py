"""Kubernetes objects shaped like those of a live Karpenter v1 cluster on EKS.

In the manner of Karpenter's ``pkg/test`` (``test.NodePool(...)``, ``test.NodeClaim(...)``,
``test.Node(test.NodeOptions{...})``): each builder takes an options value whose defaults
make a complete object, changed by keyword::

    nodepool(budgets=[{"nodes": "1"}])
    node(name="ip-10-0-9-9.ec2.internal", ready=False)
    node(NODE_GROUP_NODE, name="ip-10-0-3-16.ec2.internal")  # a prepared options value
    nodeclaim(nodepool="batch", overrides={"metadata": {"labels": {"team": "data"}}})

``overrides`` is deep-merged into the built object last (dicts merge, anything else
replaces; ``REMOVE`` deletes a key), for fields the options do not name. Every call returns
a new object: changing it never changes another test's.

The defaults are the sample cluster's (``events/cluster.yaml``) first Karpenter node: NodePool
``general``, NodeClaim ``general-7xkqz`` on instance ``i-0a1b2c3d4e5f60001`` (a Spot
``m5.large`` in ``us-east-1a``), Node ``ip-10-0-1-11.ec2.internal``. What a live object carries
and which Karpenter code puts it there (kubernetes-sigs/karpenter, ``pkg/controllers/
nodeclaim/lifecycle``, ``pkg/apis/v1``):

- NodeClaim: the ``karpenter.sh/termination`` finalizer (``controller.go``, added before
  launch); the NodePool template's labels plus ``karpenter.sh/nodepool``; the NodePool's
  ``karpenter.sh/nodepool-hash`` and ``karpenter.sh/nodepool-hash-version`` (``v3``)
  annotations; an ownerReference to the NodePool (``blockOwnerDeletion``);
  ``status.providerID`` (``launch.go``), ``status.nodeName`` (``registration.go``) and the
  conditions ``Launched``, ``Registered``, ``Initialized`` and ``Ready``.
- Node: the labels ``karpenter.sh/registered`` (``registration.go``) and
  ``karpenter.sh/initialized`` (``initialization.go``), the ``karpenter.sh/termination``
  finalizer and an ownerReference to its NodeClaim (``registration.go``,
  ``UpdateNodeOwnerReferences``); the well-known labels the kubelet and the AWS cloud
  provider set (arch, os, hostname, instance type, zone, region).
- A managed node group's Node (``NODE_GROUP_NODE``): ``eks.amazonaws.com/nodegroup`` and
  ``eks.amazonaws.com/capacityType`` labels, no NodeClaim, no Karpenter finalizer.

The hash annotation is a fixed stand-in (the sample cluster's), not computed from the
template: Lifeboat copies it onto replacements and never checks it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Obj = dict[str, Any]

KARPENTER_API = "karpenter.sh/v1"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
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


def _condition(kind: str, status: bool, at: str) -> Obj:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "lastTransitionTime": at,
        "reason": kind if status else f"Not{kind}",
        "message": "",
    }


def _metadata(
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


# --- NodePool ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodePoolOptions:
    name: str = NODEPOOL
    uid: str | None = NODEPOOL_UID
    # None: no spec.disruption.budgets at all (as a cluster file may omit it).
    budgets: Sequence[Mapping[str, Any]] | None = DEFAULT_BUDGETS
    requirements: Sequence[Mapping[str, Any]] = REQUIREMENTS
    node_class: str = "default"
    template_labels: Mapping[str, str] = field(default_factory=dict)
    template_annotations: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, Any]] = ()
    startup_taints: Sequence[Mapping[str, Any]] = ()
    expire_after: str | None = "720h"
    termination_grace_period: str | None = None
    # None: no hash annotations (a NodePool Karpenter has not reconciled yet).
    hash: str | None = NODEPOOL_HASH
    annotations: Mapping[str, str] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)


def nodepool(options: NodePoolOptions | None = None, /, **changes: Any) -> Obj:
    o = replace(options or NodePoolOptions(), **changes)
    annotations: dict[str, str] = {}
    if o.hash is not None:
        annotations = {HASH_ANNOTATION: o.hash, HASH_VERSION_ANNOTATION: HASH_VERSION}
    annotations.update(o.annotations)
    template_spec: Obj = {
        "nodeClassRef": {**NODE_CLASS_REF, "name": o.node_class},
        "requirements": copy.deepcopy(list(o.requirements)),
    }
    if o.taints:
        template_spec["taints"] = copy.deepcopy(list(o.taints))
    if o.startup_taints:
        template_spec["startupTaints"] = copy.deepcopy(list(o.startup_taints))
    if o.expire_after is not None:
        template_spec["expireAfter"] = o.expire_after
    if o.termination_grace_period is not None:
        template_spec["terminationGracePeriod"] = o.termination_grace_period
    template: Obj = {"spec": template_spec}
    if o.template_labels or o.template_annotations:
        template_meta: Obj = {}
        if o.template_labels:
            template_meta["labels"] = dict(o.template_labels)
        if o.template_annotations:
            template_meta["annotations"] = dict(o.template_annotations)
        template = {"metadata": template_meta, **template}
    spec: Obj = {"template": template}
    if o.budgets is not None:
        spec["disruption"] = {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "1m",
            "budgets": copy.deepcopy(list(o.budgets)),
        }
    meta: Obj = {"name": o.name}
    if o.uid is not None:
        meta["uid"] = o.uid
    meta["creationTimestamp"] = CREATED
    if annotations:
        meta["annotations"] = annotations
    pool: Obj = {"apiVersion": KARPENTER_API, "kind": "NodePool", "metadata": meta, "spec": spec}
    return merge(pool, o.overrides)


# --- NodeClaim --------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeClaimOptions:
    name: str = NODECLAIM
    uid: str | None = NODECLAIM_UID
    nodepool: str = NODEPOOL
    nodepool_uid: str | None = NODEPOOL_UID
    instance_id: str = INSTANCE
    zone: str = ZONE
    instance_type: str = INSTANCE_TYPE
    capacity_type: str = "spot"
    # status.nodeName; None: no Node registered for it yet.
    node_name: str | None = NODE
    # The lifecycle conditions; each False leaves its condition False (and no providerID
    # before launch, no nodeName before registration).
    launched: bool = True
    registered: bool = True
    initialized: bool = True
    ready: bool = True
    requirements: Sequence[Mapping[str, Any]] = REQUIREMENTS
    node_class: str = "default"
    expire_after: str | None = "720h"
    termination_grace_period: str | None = None
    taints: Sequence[Mapping[str, Any]] = ()
    hash: str | None = NODEPOOL_HASH
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    finalizers: Sequence[str] = (TERMINATION_FINALIZER,)
    deleting: str | None = None
    created: str = "2026-11-20T07:58:40Z"
    capacity: Mapping[str, str] = field(default_factory=lambda: {"cpu": "2", "memory": "8Gi"})
    overrides: Mapping[str, Any] = field(default_factory=dict)


def _instance_labels(zone: str, instance_type: str) -> dict[str, str]:
    return {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": zone[:-1],
    }


def nodeclaim(options: NodeClaimOptions | None = None, /, **changes: Any) -> Obj:
    o = replace(options or NodeClaimOptions(), **changes)
    labels = _instance_labels(o.zone, o.instance_type)
    labels[NODEPOOL_LABEL] = o.nodepool
    labels[CAPACITY_TYPE_LABEL] = o.capacity_type
    if o.registered:
        labels[REGISTERED_LABEL] = "true"
    if o.initialized:
        labels[INITIALIZED_LABEL] = "true"
    labels.update(o.labels)
    annotations: dict[str, str] = {}
    if o.hash is not None:
        annotations = {HASH_ANNOTATION: o.hash, HASH_VERSION_ANNOTATION: HASH_VERSION}
    annotations.update(o.annotations)
    meta = _metadata(o.name, o.uid, o.created, labels, annotations, o.finalizers, o.deleting)
    meta["ownerReferences"] = [
        owner_reference("NodePool", o.nodepool, o.nodepool_uid, KARPENTER_API)
    ]
    spec: Obj = {
        "nodeClassRef": {**NODE_CLASS_REF, "name": o.node_class},
        "requirements": copy.deepcopy(list(o.requirements)),
    }
    if o.taints:
        spec["taints"] = copy.deepcopy(list(o.taints))
    if o.expire_after is not None:
        spec["expireAfter"] = o.expire_after
    if o.termination_grace_period is not None:
        spec["terminationGracePeriod"] = o.termination_grace_period
    status: Obj = {}
    if o.launched:
        status["providerID"] = provider_id(o.zone, o.instance_id)
        status["imageID"] = "ami-0c1d2e3f4a5b6c7d8"
        status["capacity"] = dict(o.capacity)
    if o.registered and o.node_name is not None:
        status["nodeName"] = o.node_name
    at = o.created
    status["conditions"] = [
        _condition("Launched", o.launched, at),
        _condition("Registered", o.registered, at),
        _condition("Initialized", o.initialized, at),
        _condition("Ready", o.ready, at),
    ]
    claim: Obj = {"apiVersion": KARPENTER_API, "kind": "NodeClaim", "metadata": meta}
    claim["spec"] = spec
    claim["status"] = status
    return merge(claim, o.overrides)


# --- Node -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeOptions:
    name: str = NODE
    uid: str | None = NODE_UID
    instance_id: str = INSTANCE
    zone: str = ZONE
    instance_type: str = INSTANCE_TYPE
    capacity_type: str = "spot"
    # None: not Karpenter's (see NODE_GROUP_NODE).
    nodepool: str | None = NODEPOOL
    # The owning NodeClaim (ownerReference); None: none.
    nodeclaim: str | None = NODECLAIM
    nodeclaim_uid: str | None = NODECLAIM_UID
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
    labels = _instance_labels(o.zone, o.instance_type)
    labels["kubernetes.io/hostname"] = o.name
    if o.nodepool is not None:
        labels[NODEPOOL_LABEL] = o.nodepool
        labels[CAPACITY_TYPE_LABEL] = o.capacity_type
        if o.registered:
            labels[REGISTERED_LABEL] = "true"
        if o.initialized:
            labels[INITIALIZED_LABEL] = "true"
    else:
        labels[NODEGROUP_LABEL] = o.nodegroup
        labels[NODEGROUP_CAPACITY_LABEL] = o.capacity_type.upper().replace("-", "_")
    labels.update(o.labels)
    finalizers = o.finalizers
    if finalizers is None:
        finalizers = (TERMINATION_FINALIZER,) if o.nodepool is not None else ()
    meta = _metadata(o.name, o.uid, o.created, labels, o.annotations, finalizers, o.deleting)
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
        ready = _condition("Ready", o.ready, o.created)
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


def nodeclaim_and_node(claim: NodeClaimOptions | None = None, /, **changes: Any) -> tuple[Obj, Obj]:
    """A NodeClaim and the Node registered for it, linked as Karpenter links them (the
    Node's providerID, name, pool and ownerReference from the claim); Karpenter's
    ``test.NodeClaimAndNode``."""
    o = replace(claim or NodeClaimOptions(), **changes)
    built = nodeclaim(o)
    linked = node(
        name=o.node_name or NODE,
        uid=None,
        instance_id=o.instance_id,
        zone=o.zone,
        instance_type=o.instance_type,
        capacity_type=o.capacity_type,
        nodepool=o.nodepool,
        nodeclaim=o.name,
        nodeclaim_uid=o.uid,
        registered=o.registered,
        initialized=o.initialized,
        ready=o.ready,
        labels=o.labels,
    )
    return built, linked


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
    meta = _metadata(
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

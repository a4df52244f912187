"""NodePools and NodeClaims as Karpenter v1 writes them, and a NodeClaim with its Node."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .core import node
from .meta import (
    CREATED,
    DEFAULT_BUDGETS,
    KARPENTER_API,
    NODE,
    NODECLAIM,
    NODECLAIM_UID,
    NODEPOOL,
    NODEPOOL_HASH,
    NODEPOOL_UID,
    REQUIREMENTS,
    TERMINATION_FINALIZER,
    InstanceOptions,
    Obj,
    claim_spec,
    condition,
    hash_annotations,
    karpenter_labels,
    merge,
    metadata,
    owner_reference,
    provider_id,
)

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
    annotations = hash_annotations(o.hash, o.annotations)
    template_spec = claim_spec(
        o.node_class,
        o.requirements,
        o.taints,
        o.startup_taints,
        o.expire_after,
        o.termination_grace_period,
    )
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
class NodeClaimOptions(InstanceOptions):
    name: str = NODECLAIM
    uid: str | None = NODECLAIM_UID
    nodepool: str = NODEPOOL
    nodepool_uid: str | None = NODEPOOL_UID
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
    allocatable: Mapping[str, str] = field(
        default_factory=lambda: {"cpu": "1930m", "memory": "7220Mi", "pods": "29"}
    )
    overrides: Mapping[str, Any] = field(default_factory=dict)


def nodeclaim(options: NodeClaimOptions | None = None, /, **changes: Any) -> Obj:
    o = replace(options or NodeClaimOptions(), **changes)
    labels = karpenter_labels(o, o.nodepool, o.node_class)
    labels.update(o.labels)
    annotations = hash_annotations(o.hash, o.annotations)
    meta = metadata(o.name, o.uid, o.created, labels, annotations, o.finalizers, o.deleting)
    meta["ownerReferences"] = [
        owner_reference("NodePool", o.nodepool, o.nodepool_uid, KARPENTER_API)
    ]
    spec = claim_spec(
        o.node_class, o.requirements, o.taints, (), o.expire_after, o.termination_grace_period
    )
    status: Obj = {}
    if o.launched:
        status["providerID"] = provider_id(o.zone, o.instance_id)
        status["imageID"] = "ami-0c1d2e3f4a5b6c7d8"
        status["capacity"] = dict(o.capacity)
        status["allocatable"] = dict(o.allocatable)
    if o.registered and o.node_name is not None:
        status["nodeName"] = o.node_name
    at = o.created
    status["conditions"] = [
        condition("Launched", o.launched, at),
        condition("Registered", o.registered, at),
        condition("Initialized", o.initialized, at),
        condition("Ready", o.ready, at),
    ]
    claim: Obj = {"apiVersion": KARPENTER_API, "kind": "NodeClaim", "metadata": meta}
    claim["spec"] = spec
    claim["status"] = status
    return merge(claim, o.overrides)


def nodeclaim_and_node(claim: NodeClaimOptions | None = None, /, **changes: Any) -> tuple[Obj, Obj]:
    """A NodeClaim and the Node registered for it, linked as Karpenter's registration links
    them (the Node's providerID and name, the claim's labels and annotations copied onto it,
    an ownerReference to the claim); Karpenter's ``test.NodeClaimAndNode``."""
    o = replace(claim or NodeClaimOptions(), **changes)
    built = nodeclaim(o)
    instance = {f.name: getattr(o, f.name) for f in fields(InstanceOptions)}
    linked = node(
        name=o.node_name or NODE,
        uid=None,
        **instance,
        nodepool=o.nodepool,
        node_class=o.node_class,
        nodeclaim=o.name,
        nodeclaim_uid=o.uid,
        registered=o.registered,
        initialized=o.initialized,
        ready=o.ready,
        labels=o.labels,
        annotations=built["metadata"].get("annotations", {}),
    )
    return built, linked

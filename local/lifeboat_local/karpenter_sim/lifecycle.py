"""Karpenter's NodeClaim lifecycle (``nodeclaim.lifecycle``): finalizer, launch, registration,
initialization, as a live cluster shows them on the simulated clock:

- the ``karpenter.sh/termination`` finalizer first, before anything is launched;
- ``LAUNCH_TIME`` after creation: ``status.providerID``, capacity, ``Launched``, and the
  instance's labels (``PopulateNodeClaimDetails``: the claim's own labels win). From now on
  Karpenter's cluster state holds the instance, before its Node exists;
- ``INITIALIZE_TIME`` after creation: a Ready Node joins, labelled ``karpenter.sh/registered``
  and ``karpenter.sh/initialized``, with the claim's labels, annotations and taints (startup
  taints already gone), owned by the claim; the claim turns Registered, Initialized, Ready.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.objects import MutableObj as Obj

from . import instances
from .state import (
    INITIALIZE_TIME,
    LAUNCH_TIME,
    SimState,
    condition_time,
    editable,
    set_condition,
)

_REGISTERED = "karpenter.sh/registered"


def reconcile(state: SimState) -> None:
    node_names = {nodes.name_of(n) for n in state.view("Node")}
    for claim in state.view("NodeClaim"):
        if nodes.is_deleting(claim):
            continue  # termination's to handle
        meta = claim["metadata"]
        if nodes.TERMINATION_FINALIZER not in (meta.get("finalizers") or []):
            claim = editable(claim)
            claim["metadata"]["finalizers"] = [
                *(meta.get("finalizers") or []),
                nodes.TERMINATION_FINALIZER,
            ]
            state.put(claim)
        created = state.first_seen(f"created/{nodes.name_of(claim)}")
        status = claim.get("status") or {}
        launched = bool(status.get("providerID"))
        joined = status.get("nodeName") in node_names or condition_time(claim, "Registered")
        if not launched and state.now >= created + LAUNCH_TIME:
            _launch(state, editable(claim))
        elif launched and not joined and state.now >= created + INITIALIZE_TIME:
            _register(state, editable(claim))


def due(state: SimState) -> list[datetime]:
    """When this controller next has something to do."""
    node_names = {nodes.name_of(n) for n in state.view("Node")}
    times = []
    for claim in state.view("NodeClaim"):
        if nodes.is_deleting(claim):
            continue
        created = state.seen.get(f"created/{nodes.name_of(claim)}", state.now)
        status = claim.get("status") or {}
        if not status.get("providerID"):
            times.append(created + LAUNCH_TIME)
        elif status.get("nodeName") not in node_names and not condition_time(claim, "Registered"):
            times.append(created + INITIALIZE_TIME)
    return times


def _launch(state: SimState, claim: Obj) -> None:
    name = nodes.name_of(claim)
    instance = "i-" + hashlib.sha256(name.encode()).hexdigest()[:17]
    instance_type, zone, capacity_type = instances.choose(claim)
    capacity, allocatable = instances.resources(instance_type)
    claim.setdefault("status", {})
    claim["metadata"]["labels"] = {
        **instances.type_labels(instance_type),
        nodes.ZONE_LABEL: zone,
        "topology.kubernetes.io/region": zone[:-1],
        nodes.CAPACITY_TYPE_LABEL: capacity_type,
        **nodes.labels_of(claim),
    }
    claim["status"].update(
        {
            "providerID": f"aws:///{zone}/{instance}",
            "imageID": "ami-0c1d2e3f4a5b6c7d8",
            "capacity": capacity,
            "allocatable": allocatable,
        }
    )
    set_condition(claim, "Launched", "True", "Launched", state.stamp())
    state.put(claim)
    state.step("launched", claim, f"instance {instance} ({instance_type}, {capacity_type})")


def _register(state: SimState, claim: Obj) -> None:
    name = nodes.name_of(claim)
    status = claim["status"]
    node_name = f"{name}.sim.internal"
    labels = {
        **nodes.labels_of(claim),
        "kubernetes.io/hostname": node_name,
        _REGISTERED: "true",
        nodes.INITIALIZED_LABEL: "true",
    }
    labels.pop(node_marks.REPLACES_LABEL, None)
    stamp = state.stamp()
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name,
            "labels": labels,
            "annotations": dict(nodes.annotations_of(claim)),
            "finalizers": [nodes.TERMINATION_FINALIZER],
            "ownerReferences": [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodeClaim",
                    "name": name,
                    "uid": claim["metadata"].get("uid"),
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "providerID": status["providerID"],
            "taints": list(claim["spec"].get("taints") or []),
        },
        "status": {
            "capacity": status.get("capacity", {}),
            "allocatable": status.get("allocatable", {}),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastTransitionTime": stamp,
                }
            ],
        },
    }
    state.put(node)
    status["nodeName"] = node_name
    for kind in ("Registered", "Initialized", "Ready"):
        set_condition(claim, kind, "True", kind, stamp)
    state.put(claim)
    state.step("node-ready", claim, "registered and initialized", node=node_name)

"""A stand-in for the workload controllers and the scheduler while ``lifeboat replay --follow``
moves time, so that evicted pods come back elsewhere as they would in a cluster.

What it does, on the simulated clock, at each :meth:`PodSimulation.advance`:

- **controllers** (``pkg/controller/replicaset``, ``pkg/controller/statefulset``): the pods
  of a controller as first seen are its desired pods. A ReplicaSet (or a ReplicationController
  or any other controller but those below) creates a replacement as soon as one of its pods
  is deleted or starts terminating (``FilterActivePods`` does not count a terminating pod);
  the replacement gets a new name. A StatefulSet recreates a pod under the same name, once
  the old one is completely gone (ordinal identity). DaemonSet pods go with their node and
  are not recreated elsewhere; a Job's pods are left to finish;
- **scheduler** (kube-scheduler's default filters and scoring, simplified): a pending pod goes
  to a node that is Ready, schedulable (not cordoned) and not being deleted, whose
  ``NoSchedule``/``NoExecute`` taints it tolerates, whose labels match its ``nodeSelector``,
  and that has room for its requests (CPU, memory, pod count) within ``status.allocatable``;
  among those, nodes without an untolerated ``PreferNoSchedule`` taint first (TaintToleration
  scoring), then the least allocated CPU (LeastAllocated). A pod no node fits stays Pending
  and is tried again at the next look: new capacity (a replacement NodeClaim the Karpenter
  simulation launches) takes it then. Node affinity and topology spread are not modelled;
- **kubelet**: a scheduled pod runs at once and is Ready ``READY_TIME`` later.

The pods' controllers are read from their ``ownerReferences``; once the emulator serves the
apps/v1 workloads, :meth:`PodSimulation._desired_from_pods` is where their ``spec.replicas``
and templates would be read instead.

Times follow the Karpenter simulation's convention (``karpenter_sim``): a change first seen
at ``advance(now)`` was made while the clock stood at the previous look, so a pod evicted at
14:05:00 and first seen missing at 14:05:30 is replaced, and scheduled, at 14:05:00.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity as _parse_quantity

from kubemu import Emulator
from lifeboat import nodes
from lifeboat.instants import format_instant, parse_timestamp
from lifeboat_local.karpenter_sim import SimStep

READY_TIME = timedelta(seconds=45)
# Controllers whose pods are not recreated elsewhere when evicted or deleted.
NOT_RECREATED = frozenset({"DaemonSet", "Job", "Node"})
_FINISHED = ("Succeeded", "Failed")

Obj = dict[str, Any]


# EKS labels every node of a managed node group with the group's name.
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"


@dataclass
class _Desired:
    """What a controller keeps running: how many pods, shaped like ``template``."""

    kind: str
    namespace: str
    name: str
    uid: str
    template: Obj
    names: set[str] = field(default_factory=set)  # a StatefulSet's pods, by ordinal name

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class PodSimulation:
    def __init__(self, emulator: Emulator, start: datetime | None = None) -> None:
        self._emu = emulator
        self._last = start
        self._desired = self._desired_from_pods(emulator.objects("Pod"))
        self._ready_at: dict[str, datetime] = {}  # pod uid -> when it becomes Ready
        self._reported_pending: set[str] = set()

    def advance(self, now: datetime) -> list[SimStep]:
        """Play the controllers, the scheduler and the kubelets forward to ``now``."""
        since = self._last if self._last is not None and self._last <= now else now
        self._recreate(since)
        steps = self._schedule(since, now)
        steps += self._ready(now)
        self._last = now
        return sorted(self._with_pools(steps), key=lambda step: step.at)

    def _with_pools(self, steps: list[SimStep]) -> list[SimStep]:
        """Each step about a node names the node's NodePool (or node group), as a timeline
        row should."""
        pools = {
            nodes.name_of(node): nodes.labels_of(node).get(nodes.NODEPOOL_LABEL)
            or nodes.labels_of(node).get(NODEGROUP_LABEL)
            for node in self._emu.objects("Node")
        }
        return [
            replace(step, nodepool=pools.get(step.node))
            if step.node and not step.nodepool
            else step
            for step in steps
        ]

    # -- controllers -------------------------------------------------------------------------

    @staticmethod
    def _desired_from_pods(pods: Iterable[Obj]) -> dict[str, _Desired]:
        desired: dict[str, _Desired] = {}
        for pod in pods:
            owner = _controller(pod)
            if owner is None or owner["kind"] in NOT_RECREATED or not _active(pod):
                continue
            entry = desired.setdefault(
                owner["uid"],
                _Desired(
                    owner["kind"], _namespace(pod), owner["name"], owner["uid"], _template(pod)
                ),
            )
            entry.names.add(nodes.name_of(pod))
        return desired

    def _recreate(self, since: datetime) -> None:
        """The controllers: a Pending pod for each one a workload lacks (shown once
        scheduled: a timeline row names a node)."""
        pods = self._emu.objects("Pod")
        by_owner: dict[str, list[Obj]] = {}
        for pod in pods:
            owner = _controller(pod)
            if owner is not None:
                by_owner.setdefault(owner["uid"], []).append(pod)
        for desired in self._desired.values():
            own = by_owner.get(desired.uid, [])
            if desired.kind == "StatefulSet":
                present = {nodes.name_of(p) for p in own}  # a terminating one still holds its name
                missing = sorted(desired.names - present)
            else:
                active = sum(1 for p in own if _active(p))
                missing = [self._new_name(desired) for _ in range(len(desired.names) - active)]
            for name in missing:
                self._emu.put_object(_pending_pod(desired, name, since))

    def _new_name(self, desired: _Desired) -> str:
        """``<controller>-<5 characters>``, as the ReplicaSet controller's generateName gives."""
        existing = {nodes.name_of(p) for p in self._emu.objects("Pod")}
        for attempt in range(1000):
            seed = f"{desired.uid}/{len(existing)}/{attempt}".encode()
            name = f"{desired.name}-{hashlib.sha256(seed).hexdigest()[:5]}"
            if name not in existing:
                return name
        raise RuntimeError(f"no free pod name for {desired.describe()}")

    # -- scheduler ---------------------------------------------------------------------------

    def _schedule(self, since: datetime, now: datetime) -> list[SimStep]:
        pending = [
            p
            for p in self._emu.objects("Pod")
            if not p.get("spec", {}).get("nodeName") and _active(p)
        ]
        if not pending:
            return []
        all_nodes = self._emu.objects("Node")
        usage = _usage(self._emu.objects("Pod"))
        steps = []
        for pod in sorted(pending, key=lambda p: (_created(p) or since, nodes.name_of(p))):
            node = _best_node(pod, all_nodes, usage)
            who = f"{_namespace(pod)}/{nodes.name_of(pod)}"
            owner = _controller(pod)
            if owner is not None:
                who += f" (of {owner['kind']} {owner['name']})"
            if node is None:
                if pod["metadata"]["uid"] not in self._reported_pending:
                    self._reported_pending.add(pod["metadata"]["uid"])
                    steps.append(SimStep(now, "pod-pending", detail=f"{who}: no node fits it"))
                continue
            name = nodes.name_of(node)
            at = max(_created(pod) or since, since, _ready_since(node) or since)
            self._emu.put_object(_running(pod, name, at))
            self._ready_at[pod["metadata"]["uid"]] = at + READY_TIME
            _add(usage, name, _requests(pod))
            steps.append(SimStep(at, "pod-scheduled", node=name, detail=who))
        return steps

    # -- kubelet -----------------------------------------------------------------------------

    def _ready(self, now: datetime) -> list[SimStep]:
        steps = []
        for pod in self._emu.objects("Pod"):
            uid = pod["metadata"].get("uid", "")
            at = self._ready_at.get(uid)
            if at is None or at > now:
                continue
            del self._ready_at[uid]
            if not _active(pod):
                continue
            self._emu.put_object(_with_ready(pod, at))
            who = f"{_namespace(pod)}/{nodes.name_of(pod)}"
            steps.append(SimStep(at, "pod-ready", node=pod["spec"].get("nodeName"), detail=who))
        return steps


# -- pods ------------------------------------------------------------------------------------


def _controller(pod: Obj) -> dict[str, Any] | None:
    for ref in pod.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller") is True and ref.get("uid"):
            return dict(ref)
    return None


def _active(pod: Obj) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and (
        pod.get("status", {}).get("phase") not in _FINISHED
    )


def _namespace(pod: Obj) -> str:
    return str(pod["metadata"].get("namespace", "default"))


def _created(pod: Obj) -> datetime | None:
    return parse_timestamp(pod["metadata"].get("creationTimestamp"))


def _template(pod: Obj) -> Obj:
    """What a controller's new pod shares with ``pod``: labels, annotations, owner, spec."""
    meta = pod["metadata"]
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    keep = ("labels", "annotations", "ownerReferences")
    return {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": spec}


def _pending_pod(desired: _Desired, name: str, at: datetime) -> Obj:
    template = desired.template
    metadata = {**template["metadata"], "name": name, "namespace": desired.namespace}
    metadata["creationTimestamp"] = format_instant(at)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": dict(template["spec"]),
        "status": {"phase": "Pending"},
    }


def _running(pod: Obj, node: str, at: datetime) -> Obj:
    stamp = format_instant(at)
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": stamp}
        for kind in ("PodScheduled", "Initialized")
    ] + [
        {"type": kind, "status": "False", "lastTransitionTime": stamp}
        for kind in ("ContainersReady", "Ready")
    ]
    return {
        **pod,
        "spec": {**pod.get("spec", {}), "nodeName": node},
        "status": {"phase": "Running", "startTime": stamp, "conditions": conditions},
    }


def _with_ready(pod: Obj, at: datetime) -> Obj:
    stamp = format_instant(at)
    conditions = [
        {**c, "status": "True", "lastTransitionTime": stamp}
        if c.get("type") in ("ContainersReady", "Ready")
        else c
        for c in pod.get("status", {}).get("conditions") or []
    ]
    return {**pod, "status": {**pod.get("status", {}), "conditions": conditions}}


# -- nodes and room ----------------------------------------------------------------------------

_RESOURCES = ("cpu", "memory", "pods")


def parse_quantity(value: Any) -> Decimal:
    """A resource.Quantity ("250m", "7220Mi", "29"), with the official client's parser."""
    return Decimal(_parse_quantity(value))  # type: ignore[no-untyped-call]


def _requests(pod: Obj) -> dict[str, Decimal]:
    total = {"cpu": Decimal(0), "memory": Decimal(0), "pods": Decimal(1)}
    for container in pod.get("spec", {}).get("containers") or []:
        for resource, value in ((container.get("resources") or {}).get("requests") or {}).items():
            if resource in ("cpu", "memory"):
                total[resource] += parse_quantity(value)
    return total


def _usage(pods: Iterable[Obj]) -> dict[str, dict[str, Decimal]]:
    """What the pods bound to each node request (terminating ones still hold their room)."""
    usage: dict[str, dict[str, Decimal]] = {}
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if node and pod.get("status", {}).get("phase") not in _FINISHED:
            _add(usage, node, _requests(pod))
    return usage


def _add(usage: dict[str, dict[str, Decimal]], node: str, requests: Mapping[str, Decimal]) -> None:
    used = usage.setdefault(node, {resource: Decimal(0) for resource in _RESOURCES})
    for resource, amount in requests.items():
        used[resource] += amount


def _best_node(pod: Obj, candidates: list[Obj], usage: dict[str, dict[str, Decimal]]) -> Obj | None:
    fitting = []
    for node in candidates:
        if not _schedulable(node) or not _selected(pod, node) or not _tolerated(pod, node):
            continue
        free = _free(node, usage.get(nodes.name_of(node), {}), _requests(pod))
        if free is None:
            continue
        prefer_not = any(
            t.get("effect") == "PreferNoSchedule" and not _tolerates(pod, t)
            for t in nodes.taints(node)
        )
        fitting.append((prefer_not, -free, nodes.name_of(node), node))
    return min(fitting, key=lambda entry: entry[:3])[3] if fitting else None


def _schedulable(node: Obj) -> bool:
    return (
        nodes.is_ready(node)
        and not node.get("spec", {}).get("unschedulable")
        and not node["metadata"].get("deletionTimestamp")
    )


def _selected(pod: Obj, node: Obj) -> bool:
    wanted = pod.get("spec", {}).get("nodeSelector") or {}
    labels = nodes.labels_of(node)
    return all(labels.get(key) == value for key, value in wanted.items())


def _tolerated(pod: Obj, node: Obj) -> bool:
    return all(
        _tolerates(pod, taint)
        for taint in nodes.taints(node)
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def _tolerates(pod: Obj, taint: Mapping[str, Any]) -> bool:
    """``v1.Toleration.ToleratesTaint``."""
    for toleration in pod.get("spec", {}).get("tolerations") or []:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key, operator = toleration.get("key"), toleration.get("operator", "Equal")
        if key and key != taint.get("key"):
            continue
        if not key and operator != "Exists":
            continue
        if operator == "Exists" or toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def _free(node: Obj, used: Mapping[str, Decimal], wanted: Mapping[str, Decimal]) -> Decimal | None:
    """The share of CPU left after placing the pod (1 when unknown); None if it does not fit."""
    allocatable = node.get("status", {}).get("allocatable") or {}
    share = Decimal(1)
    for resource in _RESOURCES:
        if resource not in allocatable:
            continue
        capacity = parse_quantity(allocatable[resource])
        after = used.get(resource, Decimal(0)) + wanted.get(resource, Decimal(0))
        if after > capacity:
            return None
        if resource == "cpu" and capacity:
            share = (capacity - after) / capacity
    return share


def _ready_since(node: Obj) -> datetime | None:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return parse_timestamp(condition.get("lastTransitionTime"))
    return None

"""Where pods go: the workload controllers, the kube-scheduler, and Karpenter's provisioner.

- Workload controllers: a pod of a ReplicaSet, StatefulSet or Job that disappears (evicted)
  comes back Pending (a new name, or the same one for a StatefulSet), as its controller
  would recreate it.
- kube-scheduler: a Pending pod is bound to a Ready, schedulable Node whose taints it
  tolerates and whose allocatable cpu and memory hold it, the least allocated first
  (``NodeResourcesFit`` LeastAllocated); the claim's ``lastPodEventTime`` is set
  (``podevents`` controller), which restarts its ``consolidateAfter`` clock.
- Karpenter's provisioner (``Provisioner.Schedule``), while no claim is waiting for its
  launch (``Cluster.Synced``): the pods that need a place (Pending pods, and the pods of
  nodes being deleted, ``Deleting().CurrentlyReschedulablePods``) are placed on existing
  nodes, launched claims included before their Node exists; each node chosen is nominated
  for ``NOMINATION`` (``Results.Record``), which keeps it from being a disruption candidate.
  Pods that fit nowhere get a new claim from their pool's template; a static pool
  (``spec.replicas``) gets claims until it has its count (static provisioning).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lifeboat.karpenter import disruption_rules
from lifeboat.kube import nodes
from lifeboat.model.objects import MutableObj as Obj

from . import provisioner
from .fit import arrival, queue_order, selects, template_claim
from .state import (
    NOMINATION,
    PROVISIONING_POLL,
    SimState,
    allocatable_of,
    by_name,
    editable,
    pod_key,
    requests_of,
)

_RECREATED_BY = ("ReplicaSet", "StatefulSet", "Job")


def recreate_evicted(state: SimState) -> None:
    pods = state.view("Pod")
    current = {pod_key(p): p for p in pods}
    recreated = False
    for key, pod in list(state.known_pods.items()):
        owner = _controller(pod)
        if owner is None:
            continue
        now = current.get(key)
        # A ReplicaSet or Job does not count a terminating pod and makes a new one at once;
        # a StatefulSet reuses the name, so it waits until the old pod is gone.
        if now is not None and (owner == "StatefulSet" or not nodes.is_deleting(now)):
            continue
        meta = pod["metadata"]
        name = (
            meta["name"]
            if owner == "StatefulSet"
            else state.next_name(
                meta["name"].rsplit("-", 1)[0], "Pod", meta.get("namespace", "default")
            )
        )
        fresh = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace", "default"),
                "labels": dict(meta.get("labels") or {}),
                "annotations": dict(meta.get("annotations") or {}),
                "ownerReferences": list(meta.get("ownerReferences") or []),
            },
            "spec": {k: v for k, v in pod.get("spec", {}).items() if k != "nodeName"},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ],
            },
        }
        state.put(fresh)
        recreated = True
        came_from = state.pool_of_node.get(pod.get("spec", {}).get("nodeName", ""), "")
        state.origin[pod_key(fresh)] = state.origin.pop(key, came_from)
    state.known_pods = {  # stored objects, never changed: the pods as they were
        pod_key(p): p
        for p in (state.view("Pod") if recreated else pods)
        if _controller(p) == "StatefulSet"
        or (_controller(p) is not None and not nodes.is_deleting(p))
    }
    for pod in state.known_pods.values():
        node_name = pod.get("spec", {}).get("nodeName")
        if node_name and node_name in state.pool_of_node:
            state.origin[pod_key(pod)] = state.pool_of_node[node_name]


def _controller(pod: Obj) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("kind") in _RECREATED_BY:
            return str(ref["kind"])
    return None


@dataclass
class _Room:
    """Room left on a node (or on a launched claim whose Node has not joined yet)."""

    name: str
    node: Obj | None
    claim: Obj | None
    cpu: float
    memory: float
    taints: list[dict[str, object]]

    def holds(self, pod: Obj) -> bool:
        cpu, memory = requests_of(pod)
        tolerated = all(
            t.get("effect") not in ("NoSchedule", "NoExecute")
            or nodes.tolerates(
                pod, str(t.get("key")), str(t.get("effect")), str(t.get("value") or "")
            )
            for t in self.taints
        )
        return (
            tolerated
            and selects(pod, nodes.labels_of(self.node or self.claim or {}))
            and cpu <= self.cpu + 1e-9
            and memory <= self.memory + 1e-9
        )

    def soft_taints(self, pod: Obj) -> int:
        return sum(
            1
            for t in self.taints
            if t.get("effect") == "PreferNoSchedule"
            and not nodes.tolerates(
                pod, str(t.get("key")), "PreferNoSchedule", str(t.get("value") or "")
            )
        )

    def take(self, pod: Obj) -> None:
        cpu, memory = requests_of(pod)
        self.cpu -= cpu
        self.memory -= memory


def _used(pods: list[Obj]) -> dict[str, tuple[float, float]]:
    used: dict[str, tuple[float, float]] = {}
    for pod in pods:
        node_name = pod.get("spec", {}).get("nodeName")
        if not node_name or not nodes.is_active_pod(pod):
            continue
        cpu, memory = requests_of(pod)
        before = used.get(node_name, (0.0, 0.0))
        used[node_name] = (before[0] + cpu, before[1] + memory)
    return used


def _node_taints(node: Obj) -> list[dict[str, object]]:
    taints = list(nodes.taints(node))
    if node.get("spec", {}).get("unschedulable"):
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    return taints


def bind_pending(state: SimState) -> None:
    """The kube-scheduler: bind Pending pods to Ready nodes that hold them."""
    pods = state.view("Pod")
    used = _used(pods)
    claims_by_node = {(c.get("status") or {}).get("nodeName"): c for c in state.view("NodeClaim")}
    rooms = []
    for node in state.view("Node"):
        if not nodes.is_ready(node) or nodes.is_deleting(node):
            continue
        if state.now < state.first_seen(f"ready/{nodes.name_of(node)}") + state.bind_delay:
            continue
        cpu, memory = allocatable_of(node)
        taken = used.get(nodes.name_of(node), (0.0, 0.0))
        rooms.append(
            _Room(
                nodes.name_of(node),
                node,
                None,
                cpu - taken[0],
                memory - taken[1],
                _node_taints(node),
            )
        )
    for pod in sorted(_pending(pods), key=arrival):
        fitting = [r for r in rooms if r.holds(pod)]
        if not fitting:
            continue
        # TaintToleration scoring first (fewer PreferNoSchedule taints the pod does not
        # tolerate: a node marked to go is used last), then NodeResourcesFit LeastAllocated.
        room = max(fitting, key=lambda r: (-r.soft_taints(pod), r.cpu, r.name))
        room.take(pod)
        pod = editable(pod)
        pod["spec"]["nodeName"] = room.name
        pod["status"] = {
            "phase": "Running",
            "startTime": state.stamp(),
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        }
        state.put(pod)
        claim = claims_by_node.get(room.name)
        if claim is not None:
            claim = claims_by_node[room.name] = editable(claim)
            claim.setdefault("status", {})["lastPodEventTime"] = state.stamp()
            state.put(claim)
        state.step("pod-scheduled", room.node, f"pod {pod_key(pod)}")


def _pending(pods: list[Obj]) -> list[Obj]:
    return [
        p
        for p in pods
        if not p.get("spec", {}).get("nodeName")
        and nodes.is_active_pod(p)
        and not nodes.is_daemonset_pod(p)
    ]


def synced(state: SimState) -> bool:
    """``Cluster.Synced``: no claim is waiting for its launch."""
    return all(
        (c.get("status") or {}).get("providerID") or nodes.is_deleting(c)
        for c in state.view("NodeClaim")
    )


def provision(state: SimState) -> None:
    """Karpenter's provisioner: nominate the nodes the waiting pods will go to, and create
    claims for pods that fit nowhere, and for static pools short of their count."""
    if not synced(state):
        return
    claims = state.view("NodeClaim")
    all_nodes = by_name(state.view("Node"))
    pods = state.view("Pod")
    used = _used(pods)
    deleting = _deleting_nodes(state, claims)
    waiting = _waiting(state, pods, deleting)
    rooms = _existing_rooms(state, claims, all_nodes, used, deleting)
    homeless = _nominate(state, rooms, waiting)
    pools = by_name(state.view("NodePool"))
    _launch_for_homeless(state, pools, claims, pods, homeless)
    _keep_static_counts(state, pools, claims)


def _deleting_nodes(state: SimState, claims: list[Obj]) -> set[str | None]:
    """The nodes of claims being deleted or marked for deletion (``state.marked``)."""
    return {
        (c.get("status") or {}).get("nodeName")
        for c in claims
        if nodes.is_deleting(c) or nodes.name_of(c) in state.marked
    }


def _waiting(state: SimState, pods: list[Obj], deleting: set[str | None]) -> list[Obj]:
    """The pods to place: the pending ones, and those on deleting nodes that need a place
    elsewhere (reschedulable, not held by do-not-disrupt)."""
    return _pending(pods) + [
        p
        for p in pods
        if p.get("spec", {}).get("nodeName") in deleting
        and disruption_rules.is_reschedulable(p)
        and disruption_rules.do_not_disrupt_until(p, state.now) is None
    ]


def _nominate(state: SimState, rooms: list[_Room], waiting: list[Obj]) -> list[Obj]:
    """Place each waiting pod in the first room that holds it, nominating that node (or
    claim) for a while; return the pods that fit nowhere (wherever they came from: the
    provisioner weighs every pool for them)."""
    homeless: list[Obj] = []
    for pod in sorted(waiting, key=queue_order):
        room = next((r for r in rooms if r.holds(pod)), None)
        if room is None:
            homeless.append(pod)
            continue
        room.take(pod)
        if state.nominated.get(room.name, state.now) <= state.now:
            state.step("nominated", room.claim or room.node, f"for pod {pod_key(pod)}")
        state.nominated[room.name] = state.now + NOMINATION
        if room.claim is not None and room.node is not None:
            state.nominated[nodes.name_of(room.claim)] = state.now + NOMINATION
    return homeless


def _launch_for_homeless(
    state: SimState, pools: dict[str, Obj], claims: list[Obj], pods: list[Obj], homeless: list[Obj]
) -> None:
    """Karpenter's provisioner for the pods that fit no node: new claims from the cluster's
    pools (``provisioner``), and a word on each pod no pool takes."""

    if not homeless:
        return
    usable, left_out = provisioner.options(list(pools.values()), claims)
    made, unplaced = provisioner.solve(
        usable, left_out, homeless, provisioner.daemon_overhead(pods)
    )
    for new in made:
        claim = provisioner.claim_for(new)
        claim["metadata"]["name"] = state.next_name(new.option.name, "NodeClaim")
        state.put(claim)
        shown = ", ".join(pod_key(p) for p in new.pods[:3]) + (", ..." if len(new.pods) > 3 else "")
        state.step("provisioned", claim, f"{len(new.pods)} pod(s) fit no node: {shown}")
    for key, why in sorted(unplaced.items()):
        _unschedulable(state, key, why)


def _unschedulable(state: SimState, key: str, why: str) -> None:
    """Said once per reason (the provisioner's "could not schedule pod"), and written on the
    pod's PodScheduled condition, where ``kubectl describe pod`` shows it."""
    seen = f"unschedulable/{key}/{why}"
    if seen in state.seen:
        return
    state.seen[seen] = state.now
    namespace, name = key.split("/", 1)
    pod = state.emulator.get_object("Pod", name, namespace)
    if pod is not None and not pod.get("spec", {}).get("nodeName"):
        message = f"Karpenter: no NodePool can launch a node for it: {why}"
        pod.setdefault("status", {})["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
            }
        ]
        state.put(pod)
    state.step("unschedulable", None, f"pod {key}: fits no node, and no NodePool takes it: {why}")


def _keep_static_counts(state: SimState, pools: dict[str, Obj], claims: list[Obj]) -> None:
    """Launch claims for each static pool (spec.replicas) short of its count; ``claims``
    are those from before this pass's launches."""
    for pool in pools.values():
        replicas = pool.get("spec", {}).get("replicas")
        if replicas is None:
            continue
        active = [
            c
            for c in claims
            if nodes.labels_of(c).get(nodes.NODEPOOL_LABEL) == nodes.name_of(pool)
            and not nodes.is_deleting(c)
        ]
        for _ in range(int(replicas) - len(active)):
            launch_for(state, pool, f"static NodePool keeps {replicas} node(s)")


def _existing_rooms(
    state: SimState,
    claims: list[Obj],
    all_nodes: dict[str, Obj],
    used: dict[str, tuple[float, float]],
    deleting: set[str | None],
) -> list[_Room]:
    rooms = []
    for claim in sorted(claims, key=nodes.name_of):
        status = claim.get("status") or {}
        if not status.get("providerID") or nodes.is_deleting(claim):
            continue
        if nodes.name_of(claim) in state.marked or status.get("nodeName") in deleting:
            continue
        node = all_nodes.get(status.get("nodeName", ""))
        source = node if node is not None else claim
        cpu, memory = allocatable_of(source)
        name = nodes.name_of(node) if node is not None else nodes.name_of(claim)
        taken = used.get(name, (0.0, 0.0))
        taints = _node_taints(node) if node is not None else list(claim["spec"].get("taints") or [])
        rooms.append(_Room(name, node, claim, cpu - taken[0], memory - taken[1], taints))
    return rooms


def launch_for(state: SimState, pool: Obj, why: str) -> None:
    """A claim as Karpenter's provisioner builds it from the pool's template."""
    claim = template_claim(pool)
    if claim is None:
        return
    claim["metadata"]["name"] = state.next_name(nodes.name_of(pool), "NodeClaim")
    state.put(claim)
    state.step("provisioned", claim, why)


def due(state: SimState) -> list[datetime]:
    """The provisioner runs again while pods wait for a place (Karpenter: every pending pod,
    and every node carrying karpenter.sh/disrupted, triggers a pass about every 10 s)."""
    pods = state.view("Pod")
    deleting = {
        (c.get("status") or {}).get("nodeName")
        for c in state.view("NodeClaim")
        if nodes.is_deleting(c) or nodes.name_of(c) in state.marked
    }
    waiting = _pending(pods) or [
        p
        for p in pods
        if p.get("spec", {}).get("nodeName") in deleting and disruption_rules.is_reschedulable(p)
    ]
    return [state.now + PROVISIONING_POLL] if waiting else []

"""Karpenter's termination finalizer (``nodeclaim.lifecycle`` finalize and ``node/termination``),
and Auto Scaling taking away a drained node-group node.

A NodeClaim being deleted: never launched, it goes at once. Otherwise its Node gets
``karpenter.sh/disrupted:NoSchedule`` and is drained through eviction, honouring
PodDisruptionBudgets (against their current status, recomputed by the emulator) and
``karpenter.sh/do-not-disrupt`` (such pods are waited for), in Karpenter's order: the pods
that are not DaemonSet pods first. Pods still there at the claim's
``terminationGracePeriod`` are deleted regardless. Once drained, and at least
``TERMINATE_TIME`` after the deletion, the instance is terminated: the Node, its remaining
(DaemonSet) pods and the claim go. A node-group node Lifeboat drained for a notice whose
instance goes is terminated by its group; one a rotation drained stays until the group is
scaled down.
"""

from __future__ import annotations

from datetime import datetime

from lifeboat.karpenter import disruption_rules
from lifeboat.karpenter.godurations import parse_go_duration
from lifeboat.karpenter.pdbs import pdb_blocker
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.notice import Kind
from lifeboat.model.objects import MutableObj as Obj

from .state import TERMINATE_TIME, SimState, by_name, editable, pod_key

# A rotation's out-of-service taint: the node it drains is the operator's to scale down.
ROTATION_TAINT = node_marks.taint_key(Kind.ROTATION)


def reconcile(state: SimState) -> None:
    all_nodes = by_name(state.view("Node"))
    pods_by_node: dict[str, list[Obj]] = {}
    for pod in state.view("Pod"):
        pods_by_node.setdefault(pod.get("spec", {}).get("nodeName", ""), []).append(pod)
    for claim in state.view("NodeClaim"):
        if not nodes.is_deleting(claim):
            continue
        name = nodes.name_of(claim)
        deleted = state.first_seen(f"deleted/{name}")
        node = all_nodes.get((claim.get("status") or {}).get("nodeName", ""))
        if not (claim.get("status") or {}).get("providerID") or node is None:
            state.delete(claim)  # never launched, or its Node already gone: finalizer done
            state.marked.discard(name)
            continue
        pods = pods_by_node.get(nodes.name_of(node), [])
        node = _taint(state, node)
        all_nodes[nodes.name_of(node)] = node
        if _drain(state, node, pods, _grace_ends(claim, deleted)) and (
            state.now >= deleted + TERMINATE_TIME
        ):
            _remove(state, node, pods, claim)
    # The claims left once the finalizers above ran (read once, not once per node).
    claims = {nodes.name_of(c) for c in state.view("NodeClaim")}
    for node in all_nodes.values():
        if _node_group_node_done(state, node, claims, pods_by_node.get(nodes.name_of(node), [])):
            _remove(state, node, pods_by_node.get(nodes.name_of(node), []), None)


def due(state: SimState) -> list[datetime]:
    return [
        state.seen.get(f"deleted/{nodes.name_of(c)}", state.now) + TERMINATE_TIME
        for c in state.view("NodeClaim")
        if nodes.is_deleting(c)
    ] + [seen + TERMINATE_TIME for key, seen in state.seen.items() if key.startswith("drained/")]


def _grace_ends(claim: Obj, deleted: datetime) -> datetime | None:
    grace = claim.get("spec", {}).get("terminationGracePeriod")
    if not grace:
        return None
    try:
        return deleted + parse_go_duration(str(grace))
    except ValueError:
        return None


def _taint(state: SimState, node: Obj) -> Obj:
    """The node with ``karpenter.sh/disrupted`` (written when it was not there yet)."""
    if disruption_rules.karpenter_disrupting(node):
        return node
    node = editable(node)
    taints = [t for t in nodes.taints(node) if t.get("key") != nodes.KARPENTER_DISRUPTED_TAINT]
    node.setdefault("spec", {})["taints"] = [
        *taints,
        {"key": nodes.KARPENTER_DISRUPTED_TAINT, "effect": "NoSchedule"},
    ]
    state.put(node)
    state.step("drain-started", node, "tainted karpenter.sh/disrupted:NoSchedule, evicting pods")
    return node


def _drain(state: SimState, node: Obj, pods: list[Obj], grace_ends: datetime | None) -> bool:
    """Evict what may be evicted now; True when nothing is left to wait for."""
    forced = grace_ends is not None and state.now >= grace_ends
    waiting = [p for p in pods if disruption_rules.drained_by_karpenter(p)]
    first_tier = [p for p in waiting if not nodes.is_daemonset_pod(p)]
    if not first_tier:
        return True
    for pod in sorted(first_tier, key=pod_key):
        if not forced:
            if not disruption_rules.is_evictable(pod, state.now):
                _waiting(state, node, f"pod {pod_key(pod)} has karpenter.sh/do-not-disrupt")
                continue
            blocker = pdb_blocker([pod], state.view("PodDisruptionBudget"), state.now)
            if blocker is not None:
                _waiting(state, node, blocker)
                continue
        state.delete(pod)
        state.step(
            "evicted", node, f"pod {pod_key(pod)}" + (" (grace period over)" if forced else "")
        )
    return False


def _waiting(state: SimState, node: Obj, why: str) -> None:
    key = f"waiting/{nodes.name_of(node)}/{why}"
    if key not in state.seen:
        state.seen[key] = state.now
        state.step("drain-waiting", node, why)


def _remove(state: SimState, node: Obj, pods: list[Obj], claim: Obj | None) -> None:
    # The pods still there go with the node (pod garbage collection); their controllers
    # recreate them (recreate_evicted), DaemonSet pods excepted.
    for pod in pods:
        state.delete(pod)
    state.delete(node)
    if claim is not None:
        state.delete(claim)
        state.marked.discard(nodes.name_of(claim))
    state.seen.pop(f"drained/{nodes.name_of(node)}", None)
    state.step("node-removed", node, "drained and terminated")


def _node_group_node_done(state: SimState, node: Obj, claims: set[str], pods: list[Obj]) -> bool:
    """A node-group node Lifeboat cordoned for a notice whose instance goes and fully
    drained: the Auto Scaling group terminates it once the lifecycle hook completes. A node
    only a rotation drained stays, cordoned and empty, until the group is scaled down, as on
    a real cluster (nothing terminates it). A Karpenter Node whose claim is gone goes too."""
    owner = nodes.nodeclaim_owner(node)
    if owner is not None:
        if owner[0] in claims:
            return False
    else:
        out_of_service = [
            t
            for t in nodes.taints(node)
            if str(t.get("key", "")).startswith(f"{node_marks.DOMAIN}/")
            and t.get("effect") != "PreferNoSchedule"
        ]
        if not out_of_service or all(t.get("key") == ROTATION_TAINT for t in out_of_service):
            return False
        if disruption_rules.evictable_pods(pods):
            return False
    drained = state.first_seen(f"drained/{nodes.name_of(node)}")
    return state.now >= drained + TERMINATE_TIME

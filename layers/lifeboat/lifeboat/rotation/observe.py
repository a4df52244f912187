"""What a rotation reads from the cluster, for ``plan`` to judge.

Bounded requests only: a node or a NodeClaim by name, a node's pods by field selector, a
workload's pods by label within its namespace. Selecting the nodes, once per rotation, is
one list of nodes by the request's labels (of all nodes when only AMIs select), then one
DescribeInstances for their AMIs.

A workload is the controller of a pod (``ownerReferences`` with ``controller: true``).
Without the workload objects, its pods are found by the labels its pods share (the pod's
own labels but the per-pod ones a StatefulSet adds) and told apart by the controller's uid;
"Ready before" and "Ready elsewhere" are counted from them. Reading the controllers'
``spec.selector`` and replica counts instead is a drop-in change of :func:`_workload_pods`
once a cluster's apps/v1 objects are read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from lifeboat.karpenter import disruption_rules
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.marks import node_marks
from lifeboat.model.instances import InstanceInfo, instance_id_from_provider_id
from lifeboat.model.instants import parse_timestamp
from lifeboat.model.notice import Kind
from lifeboat.model.objects import Obj
from lifeboat.rotation.model import RotationNode, Workload
from lifeboat.rotation.plan import NodeView, Snapshot
from lifeboat.rotation.request import RotationSpec

# Labels a controller gives each pod its own value of: not shared, so not for selecting.
PER_POD_LABELS = frozenset(
    {
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
        "controller-revision-hash",
    }
)
# Controllers the health gate does not wait for: a DaemonSet's pods are not evicted (a drain
# leaves them), a Job's pods end Succeeded rather than Ready, a mirror pod's owner is its Node.
UNGATED_OWNERS = frozenset({"DaemonSet", "Job", "Node"})
ROTATION_TAINT = node_marks.taint_key(Kind.ROTATION)

Describe = Callable[[Sequence[str]], Mapping[str, InstanceInfo]]


def select(kube: KubeApi, spec: RotationSpec, describe: Describe) -> list[RotationNode]:
    """The nodes ``spec`` selects, oldest first (the order they are rotated in)."""
    found = []
    for node in kube.list_nodes(spec.label_selector):
        instance = instance_id_from_provider_id(nodes.provider_id(node))
        if instance is not None:  # no EC2 instance: nothing Lifeboat could act on
            found.append((node, instance))
    if spec.amis:
        infos = describe([instance for _, instance in found]) if found else {}
        found = [(n, i) for n, i in found if i in infos and infos[i].image_id in spec.amis]
    found.sort(key=lambda pair: (_created(pair[0]), nodes.name_of(pair[0])))
    return [
        RotationNode(
            name=nodes.name_of(node),
            instance_id=instance,
            nodeclaim=(nodes.nodeclaim_owner(node) or (None,))[0],
        )
        for node, instance in found
    ]


def snapshot(kube: KubeApi, node: RotationNode) -> Snapshot:
    """``node`` just before it is started: whether it is still there and not already going,
    and the workloads whose pods it runs (with their Ready counts, for the health gate)."""
    current = _same_node(kube, node)
    if current is None:
        return Snapshot(present=False)
    going = _already_going(kube, node, current)
    if going is not None:
        return Snapshot(present=True, going=going)
    pods = disruption_rules.evictable_pods(kube.list_pods_on_node(node.name))
    workloads: dict[str, Workload] = {}
    unmanaged = []
    for pod in pods:
        owner = controller_of(pod)
        if owner is None:
            unmanaged.append(pod_name(pod))
        elif owner["kind"] in UNGATED_OWNERS:
            continue
        elif owner["uid"] in workloads:
            known = workloads[owner["uid"]]
            workloads[known.uid] = replace(known, on_node=known.on_node + 1)
        else:
            workload = _workload(pod, owner)
            ready = sum(1 for p in _workload_pods(kube, workload) if is_serving(p))
            workloads[workload.uid] = replace(workload, ready_before=ready, on_node=1)
    return Snapshot(True, None, tuple(workloads.values()), tuple(unmanaged))


def view(kube: KubeApi, node: RotationNode) -> NodeView:
    """What the cluster shows of ``node`` in flight: a waiting node costs one GET; a node
    out of service also its pods, its claim, and its workloads' pods."""
    current = _same_node(kube, node)
    if current is not None and not node_marks.acted_on(current):
        if node.gate_started is None:
            return NodeView(present=True)
        # Held back with no known end (a PDB, typically): are its workloads' pods waiting
        # for a place? Then the PDB is only waiting for them, and the gate says so.
        return NodeView(present=True, unplaced=unplaced(kube, node))
    ready: dict[str, int] = {}
    waiting: list[str] = []  # its workloads' pods no node took yet, and why
    for workload in node.workloads:
        pods = _workload_pods(kube, workload)
        ready[workload.uid] = sum(1 for p in pods if is_serving(p) and _on(p) != node.name)
        waiting += [_pending(p) for p in pods if _on(p) is None and nodes.is_active_pod(p)]
    if current is None:
        return NodeView(present=False, ready_elsewhere=ready, unplaced=tuple(waiting[:3]))
    left = tuple(
        pod_name(p) for p in disruption_rules.evictable_pods(kube.list_pods_on_node(node.name))
    )
    drain_started = node.nodeclaim is None or _claim_going(kube, node.nodeclaim)
    return NodeView(True, True, drain_started, left, ready, unplaced=tuple(waiting[:3]))


def unplaced(kube: KubeApi, node: RotationNode, most: int = 3) -> tuple[str, ...]:
    """Pods of ``node``'s workloads that no node took yet, with the scheduler's word on
    why (their ``PodScheduled`` condition): ``shop/web-x Pending (Unschedulable: ...)``."""
    found = [
        _pending(pod)
        for workload in node.workloads
        for pod in _workload_pods(kube, workload)
        if _on(pod) is None and nodes.is_active_pod(pod)
    ]
    return tuple(found[:most])


def _pending(pod: Obj) -> str:
    why = next(
        (
            f" ({c.get('reason') or 'not scheduled'}: {c.get('message') or 'no word'})"
            for c in pod.get("status", {}).get("conditions") or []
            if c.get("type") == "PodScheduled" and c.get("status") == "False"
        ),
        "",
    )
    return f"{pod_name(pod)} Pending{why}"


def host_amis(kube: KubeApi, node: RotationNode, describe: Describe) -> dict[str, str]:
    """The nodes other than ``node`` where its workloads' pods run Ready, with the AMI
    EC2 says each runs ("" when unknown): what the health gate's AMI validation checks."""
    hosts = sorted(
        {
            host
            for w in node.workloads
            for p in _workload_pods(kube, w)
            if is_serving(p) and (host := _on(p)) is not None and host != node.name
        }
    )
    instances: dict[str, str] = {}
    for host in hosts:
        found = kube.get_node(host)
        instance = instance_id_from_provider_id(nodes.provider_id(found)) if found else None
        if instance is not None:
            instances[host] = instance
    infos = describe(list(instances.values())) if instances else {}
    return {
        host: (infos[instances[host]].image_id or "")
        if host in instances and instances[host] in infos
        else ""
        for host in hosts
    }


def controller_of(pod: Obj) -> dict[str, Any] | None:
    """The pod's controller reference (``metav1.GetControllerOf``), if it has one."""
    for ref in pod.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller") is True and ref.get("uid") and ref.get("name"):
            return dict(ref)
    return None


def is_serving(pod: Obj) -> bool:
    """Running, Ready and not on its way out: what a workload counts as available."""
    return (
        pod.get("status", {}).get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
        and nodes.is_ready(pod)
    )


def pod_name(pod: Obj) -> str:
    return f"{pod['metadata'].get('namespace', 'default')}/{nodes.name_of(pod)}"


def _workload(pod: Obj, owner: Mapping[str, Any]) -> Workload:
    labels = {k: v for k, v in nodes.labels_of(pod).items() if k not in PER_POD_LABELS}
    namespace = pod["metadata"].get("namespace", "default")
    return Workload(str(owner["kind"]), namespace, str(owner["name"]), str(owner["uid"]), labels, 0)


def _workload_pods(kube: KubeApi, workload: Workload) -> list[Obj]:
    selector = ",".join(f"{k}={v}" for k, v in sorted(workload.labels.items()))
    pods = kube.list_pods(workload.namespace, selector)
    return [p for p in pods if (controller_of(p) or {}).get("uid") == workload.uid]


def _same_node(kube: KubeApi, node: RotationNode) -> Obj | None:
    """The node by name, if it is still the same instance (a name may be reused)."""
    current = kube.get_node(node.name)
    if current is None:
        return None
    if instance_id_from_provider_id(nodes.provider_id(current)) != node.instance_id:
        return None
    return current


def _already_going(kube: KubeApi, node: RotationNode, current: Obj) -> str | None:
    """Why the node goes away without the rotation (None: it does not)."""
    if current["metadata"].get("deletionTimestamp"):
        return "the node is being deleted"
    for taint in nodes.taints(current):
        key = str(taint.get("key", ""))
        if key == nodes.KARPENTER_DISRUPTED_TAINT:
            return "Karpenter is disrupting it"
        # Another notice acted on it; an earlier rotation's taint is carried on with.
        acted = (
            key.startswith(f"{node_marks.DOMAIN}/") and taint.get("effect") != "PreferNoSchedule"
        )
        if acted and key != ROTATION_TAINT:
            return f"Lifeboat acted on it ({key})"
    if node.nodeclaim is not None and _claim_going(kube, node.nodeclaim):
        return f"its NodeClaim {node.nodeclaim} is being deleted"
    return None


def _claim_going(kube: KubeApi, claim: str) -> bool:
    found = kube.get_nodeclaim(claim)
    return found is None or bool(found["metadata"].get("deletionTimestamp"))


def _on(pod: Obj) -> str | None:
    node = pod.get("spec", {}).get("nodeName")
    return str(node) if node else None


def _created(node: Obj) -> str:
    moment = parse_timestamp(node["metadata"].get("creationTimestamp"))
    return moment.isoformat() if moment else ""

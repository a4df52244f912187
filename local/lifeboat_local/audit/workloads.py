"""Checks on workloads a drain hurts: a single replica without a PodDisruptionBudget (down
until it runs elsewhere), and pods without a controller (gone for good once evicted).

Karpenter's termination controller and Lifeboat's own drain evict every pod but DaemonSet and
mirror pods, controller or not (``kubectl drain`` at least asks for ``--force`` first).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from lifeboat.kube import nodes
from lifeboat.model.objects import Obj
from lifeboat_local.audit.expected import replicas
from lifeboat_local.audit.findings import Issue, ObjectRef
from lifeboat_local.audit.view import ClusterView, controller_of, namespace_of, ref

# Workloads whose pods a drain evicts and that keep a number of replicas running.
_REPLICATED: Final = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"})
_SINGLE_FIX: Final = (
    "run 2 or more replicas with a PodDisruptionBudget (maxUnavailable: 1), or plan the "
    "downtime of each drain"
)


def _template_labels(workload: Obj) -> Mapping[str, str]:
    template = (workload.get("spec") or {}).get("template") or {}
    return (template.get("metadata") or {}).get("labels") or {}


def single_replica_without_pdb(view: ClusterView) -> Iterator[Issue]:
    """Workloads running one replica that no PDB covers: each drain takes them down until
    the pod runs Ready elsewhere."""
    yield from _from_workloads(view)
    yield from _from_pods(view)


def _from_workloads(view: ClusterView) -> Iterator[Issue]:
    for workload in view.inventory.workloads:
        kind = str(workload.get("kind"))
        if kind not in _REPLICATED or replicas(workload) != 1:
            continue
        owner = controller_of(workload)
        if kind == "ReplicaSet" and owner is not None and owner.get("kind") == "Deployment":
            continue  # the Deployment is the workload (and is checked itself)
        if view.pdbs_selecting(namespace_of(workload) or "", _template_labels(workload)):
            continue
        yield Issue(
            ref(workload),
            "1 replica and no PodDisruptionBudget: every drain of its node takes it down "
            "until its pod is rescheduled and Ready",
            _SINGLE_FIX,
        )


def _from_pods(view: ClusterView) -> Iterator[Issue]:
    """Controllers of a kind the source did not give: one live pod stands for one replica.
    (Pods of ReplicaSets are left to their Deployments when those were read.)"""
    for (namespace, kind, name), pods in sorted(view.pods_by_controller.items()):
        if kind not in _REPLICATED or view.inventory.reads(kind) or len(pods) != 1:
            continue
        if kind == "ReplicaSet" and view.inventory.reads("Deployment"):
            continue
        if view.pdbs_selecting(namespace, nodes.labels_of(pods[0])):
            continue
        yield Issue(
            ObjectRef(kind, namespace, name),
            f"1 pod ({nodes.name_of(pods[0])}; replicas estimated from its pods) and no "
            "PodDisruptionBudget: every drain of its node takes it down until it runs elsewhere",
            _SINGLE_FIX,
        )


def unmanaged_pods(view: ClusterView) -> Iterator[Issue]:
    """Pods without a controller: evicted by a drain, and nothing recreates them."""
    for pod in view.live_pods:
        if controller_of(pod) is not None or nodes.is_mirror_pod(pod):
            continue
        covering = view.pdbs_of(pod)
        cover = (
            f"PodDisruptionBudget {nodes.name_of(covering[0])} delays it but cannot bring it back"
            if covering
            else "no PodDisruptionBudget covers it"
        )
        yield Issue(
            ref(pod),
            f"no controller: a drain evicts it and nothing recreates it ({cover})",
            "run it under a Deployment, StatefulSet or Job, or move it before the rotation",
        )

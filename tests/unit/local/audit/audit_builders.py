"""Minimal Kubernetes objects for the ``lifeboat audit`` unit tests, and a view over them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from lifeboat_local.audit.inventory import Inventory
from lifeboat_local.audit.view import ClusterView

Obj = dict[str, Any]
AT = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)  # a Tuesday


def owner(kind: str, name: str, api_version: str = "apps/v1") -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{kind}-{name}",
        "controller": True,
    }


def workload(
    kind: str,
    name: str,
    replicas: int | None = 1,
    namespace: str = "shop",
    labels: dict[str, str] | None = None,
    controller: Obj | None = None,
) -> Obj:
    spec: Obj = {
        "selector": {"matchLabels": labels or {"app": name}},
        "template": {"metadata": {"labels": labels or {"app": name}}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    metadata: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{kind}-{name}"}
    if controller is not None:
        metadata["ownerReferences"] = [controller]
    api_version = "v1" if kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def deployment_with_rs(name: str, replicas: int = 1, namespace: str = "shop") -> tuple[Obj, Obj]:
    """A Deployment and the ReplicaSet it controls (pods point at the ReplicaSet)."""
    dep = workload("Deployment", name, replicas, namespace)
    rs = workload(
        "ReplicaSet", f"{name}-rs", replicas, namespace, {"app": name}, owner("Deployment", name)
    )
    return dep, rs


def pod(
    name: str,
    namespace: str = "shop",
    labels: dict[str, str] | None = None,
    controller: Obj | None = None,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    annotations: dict[str, str] | None = None,
    created: str = "2026-12-01T10:00:00Z",
) -> Obj:
    metadata: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": labels if labels is not None else {"app": "web"},
        "creationTimestamp": created,
    }
    if controller is not None:
        metadata["ownerReferences"] = [controller]
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
        "status": {
            "phase": phase,
            "startTime": created,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pdb(name: str, namespace: str = "shop", selector: Obj | None = None, **spec: Any) -> Obj:
    body: Obj = dict(spec)
    body["selector"] = {"matchLabels": {"app": "web"}} if selector is None else selector
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def node(
    name: str,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    metadata: Obj = {"name": name, "labels": labels or {}}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def nodepool(
    name: str,
    budgets: list[Obj] | None = None,
    annotations: dict[str, str] | None = None,
    **template: Any,
) -> Obj:
    spec: Obj = {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                }
            }
        }
    }
    if budgets is not None:
        spec["disruption"] = {"budgets": budgets}
    for key, value in template.items():
        spec["template"].setdefault(key, {}).update(value)
    metadata: Obj = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": metadata, "spec": spec}


def view(*objects: Obj, node_group_labels: Iterable[str] = ()) -> ClusterView:
    """A view over ``objects`` as a cluster file holding them (workload kinds: those given)."""
    return ClusterView(Inventory.from_objects(objects), AT, tuple(node_group_labels))

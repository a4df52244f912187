"""Builders of minimal, valid objects for tests that seed the emulator."""

from __future__ import annotations

from typing import Any


def node(name: str, nodepool: str | None = None, **spec: Any) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": nodepool} if nodepool else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(
    name: str,
    node_name: str = "n1",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    phase: str = "Running",
    ready: bool | None = None,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod; ``owner`` (a workload object with a uid) becomes its controller reference."""
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": labels or {"app": "web"},
    }
    if owner is not None:
        metadata["ownerReferences"] = [controller_ref(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"nodeName": node_name, "containers": [{"name": "app", "image": "nginx"}]},
        "status": status,
    }


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def workload(
    kind: str, name: str, replicas: int = 1, namespace: str = "default", app: str = "web"
) -> dict[str, Any]:
    """An apps/v1 ReplicaSet, Deployment, StatefulSet or DaemonSet selecting ``app``."""
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": app}},
        "template": {
            "metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        },
    }
    if kind != "DaemonSet":
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{kind.lower()}-{name}"},
        "spec": spec,
    }


def pdb(name: str, namespace: str = "default", app: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
    }


def nodeclaim(name: str, nodepool: str = "general") -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": nodepool}},
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
            ],
        },
        "status": {"providerID": f"aws:///us-east-1a/i-{name}"},
    }

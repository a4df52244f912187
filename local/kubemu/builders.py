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
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": "web"}},
        "spec": {"nodeName": node_name, "containers": [{"name": "app", "image": "nginx"}]},
        "status": status,
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
            }
        },
        "status": {"providerID": f"aws:///us-east-1a/i-{name}"},
    }

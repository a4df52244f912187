"""Facts read off Kubernetes objects: pure functions over the API's JSON, and the names of
the well-known labels, taints and annotations Kubernetes and Karpenter put on them.

Lifeboat's own marks are in :mod:`lifeboat.marks.node_marks`; Karpenter's disruption rules in
:mod:`lifeboat.karpenter.disruption_rules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lifeboat.model.objects import Obj

KARPENTER_DISRUPTED_TAINT = "karpenter.sh/disrupted"


DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


NODEPOOL_LABEL = "karpenter.sh/nodepool"


INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


ZONE_LABEL = "topology.kubernetes.io/zone"


CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"


# Karpenter marks a Node initialized (labels.go NodeInitializedLabelKey); only such nodes count
# towards a pool's size for its budgets.
INITIALIZED_LABEL = "karpenter.sh/initialized"


# The finalizer Karpenter's lifecycle controller puts on every NodeClaim it manages.
TERMINATION_FINALIZER = "karpenter.sh/termination"


# Kubernetes' well-known label (k8s.io/api core/v1 LabelNodeExcludeBalancers): the service
# controller (cloud-provider's nodeIncludedPredicate) and the AWS Load Balancer Controller
# leave a node carrying it, whatever its value, out of load balancers' target groups.
EXCLUDE_FROM_LOAD_BALANCERS_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def labels_of(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


def excluded_from_load_balancers(node: Obj) -> bool:
    """The node carries the well-known exclusion label (its value does not matter)."""
    return EXCLUDE_FROM_LOAD_BALANCERS_LABEL in labels_of(node)


def taints(node: Obj) -> list[dict[str, Any]]:
    return list(node.get("spec", {}).get("taints") or [])


def is_ready(node: Obj) -> bool:
    for condition in node.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def condition_true(obj: Obj, kind: str) -> bool:
    """Whether ``status.conditions`` holds ``kind`` with status "True"."""
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in obj.get("status", {}).get("conditions") or []
    )


def is_deleting(obj: Obj) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def nodeclaim_owner(node: Obj) -> tuple[str, str | None] | None:
    """(name, uid) of the NodeClaim that owns the node, from its ownerReferences."""
    for ref in node.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("kind") == "NodeClaim" and str(ref.get("apiVersion", "")).startswith(
            "karpenter.sh/"
        ):
            return str(ref["name"]), ref.get("uid")
    return None


def provider_id(node: Obj) -> str | None:
    value = node.get("spec", {}).get("providerID")
    return str(value) if value else None


def owned_by(pod: Obj, api_version: str, kind: str) -> bool:
    return any(
        ref.get("apiVersion") == api_version and ref.get("kind") == kind
        for ref in pod["metadata"].get("ownerReferences") or []
    )


def is_daemonset_pod(pod: Obj) -> bool:
    return any(
        ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences") or []
    )


def is_mirror_pod(pod: Obj) -> bool:
    """A static pod's mirror: the kubelet's annotation, or Karpenter's ``IsOwnedByNode``."""
    return "kubernetes.io/config.mirror" in annotations_of(pod) or owned_by(pod, "v1", "Node")


def is_active_pod(pod: Obj) -> bool:
    """Karpenter's ``IsActive``: not terminal (Succeeded, Failed) and not being deleted."""
    phase = pod.get("status", {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def tolerates(pod: Obj, key: str, effect: str, value: str = "") -> bool:
    """Whether one of the pod's tolerations tolerates the taint (``Toleration.ToleratesTaint``:
    an empty effect matches every effect, an empty key with Exists matches every key)."""
    for toleration in pod.get("spec", {}).get("tolerations") or []:
        if toleration.get("effect") and toleration.get("effect") != effect:
            continue
        operator = toleration.get("operator") or "Equal"
        if toleration.get("key"):
            if toleration.get("key") != key:
                continue
        elif operator != "Exists":
            continue
        if operator == "Exists" or (toleration.get("value") or "") == value:
            return True
    return False

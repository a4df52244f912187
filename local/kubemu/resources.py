"""The resource types the emulator serves and how their fields are read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


# Identity equality: each resource is a module-level singleton and a cheap dict key.
@dataclass(frozen=True, eq=False)
class ResourceType:
    """One REST resource: where it is served and which API rules apply to it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    # Built-in types accept strategic merge patches; custom resources answer 415.
    builtin: bool
    # Types with a status subresource ignore status on create/update of the main resource.
    has_status: bool
    # Custom resources refuse updates without metadata.resourceVersion, built-ins allow them.
    unconditional_update: bool
    field_labels: frozenset[str]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def describe(self) -> str:
        """The "resource.group" form used in API error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


_META_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def _builtin(
    group: str, plural: str, kind: str, namespaced: bool, has_status: bool, *fields: str
) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        builtin=True,
        has_status=has_status,
        unconditional_update=True,
        field_labels=_META_FIELDS | frozenset(fields),
    )


def _karpenter(plural: str, kind: str, group: str = "karpenter.sh") -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        plural=plural,
        kind=kind,
        namespaced=False,
        builtin=False,
        has_status=True,
        unconditional_update=False,
        field_labels=_META_FIELDS,
    )


NAMESPACES = _builtin("", "namespaces", "Namespace", False, True, "status.phase")
NODES = _builtin("", "nodes", "Node", False, True, "spec.unschedulable")
PODS = _builtin(
    "",
    "pods",
    "Pod",
    True,
    True,
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
EVENTS = _builtin(
    "",
    "events",
    "Event",
    True,
    False,
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "type",
)
PDBS = _builtin("policy", "poddisruptionbudgets", "PodDisruptionBudget", True, True)
LEASES = _builtin("coordination.k8s.io", "leases", "Lease", True, False)
CONFIGMAPS = _builtin("", "configmaps", "ConfigMap", True, False)
EVENTS_V1 = _builtin("events.k8s.io", "events", "Event", True, False)
NODEPOOLS = _karpenter("nodepools", "NodePool")
NODECLAIMS = _karpenter("nodeclaims", "NodeClaim")
# Karpenter's AWS provider: served and validated (kubemu.ec2nodeclass), never acted on.
EC2NODECLASSES = _karpenter("ec2nodeclasses", "EC2NodeClass", "karpenter.k8s.aws")
# Workload controllers: stored and served (no controller runs them); PDBs read their scale.
DAEMONSETS = _builtin("apps", "daemonsets", "DaemonSet", True, True)
REPLICASETS = _builtin("apps", "replicasets", "ReplicaSet", True, True)
DEPLOYMENTS = _builtin("apps", "deployments", "Deployment", True, True)
STATEFULSETS = _builtin("apps", "statefulsets", "StatefulSet", True, True)
# The core group's older controller: the disruption controller still asks it for its scale.
REPLICATIONCONTROLLERS = _builtin("", "replicationcontrollers", "ReplicationController", True, True)
# RBAC (rbac.authorization.k8s.io/v1): stored and served, so `kubectl apply -f
# deploy/rbac.yaml` works (and validates) against `lifeboat serve`. What the emulator
# enforces is loaded apart (kubemu.rbac, Emulator.load_rbac), never from these objects.
ROLES = _builtin("rbac.authorization.k8s.io", "roles", "Role", True, False)
ROLEBINDINGS = _builtin("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", True, False)
CLUSTERROLES = _builtin("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False, False)
CLUSTERROLEBINDINGS = _builtin(
    "rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", False, False
)

ALL_RESOURCES: tuple[ResourceType, ...] = (
    NAMESPACES,
    NODES,
    NODEPOOLS,
    NODECLAIMS,
    EC2NODECLASSES,
    PODS,
    PDBS,
    LEASES,
    CONFIGMAPS,
    EVENTS,
    EVENTS_V1,
    DAEMONSETS,
    REPLICASETS,
    DEPLOYMENTS,
    STATEFULSETS,
    REPLICATIONCONTROLLERS,
    ROLES,
    ROLEBINDINGS,
    CLUSTERROLES,
    CLUSTERROLEBINDINGS,
)

_BY_PATH = {(r.group, r.version, r.plural): r for r in ALL_RESOURCES}
_BY_API_KIND = {(r.api_version, r.kind): r for r in ALL_RESOURCES}


def resource_for_path(group: str, version: str, plural: str) -> ResourceType | None:
    return _BY_PATH.get((group, version, plural))


def resource_for_object(api_version: str, kind: str) -> ResourceType | None:
    return _BY_API_KIND.get((api_version, kind))


def resource_for_kind(kind: str, api_version: str | None = None) -> ResourceType:
    """The resource of a kind; the first registered wins when two APIs share it (Event)."""
    for resource in ALL_RESOURCES:
        if resource.kind == kind and api_version in (None, resource.api_version):
            return resource
    raise ValueError(f"unsupported kind {kind!r}" + (f" ({api_version})" if api_version else ""))


# Booleans are selected by their Go formatting, and an unset bool reads as "false".
_BOOLEAN_FIELDS = frozenset({"spec.unschedulable", "spec.hostNetwork"})


def field_value(obj: Obj, label: str) -> str:
    """The string a field selector compares, as the API server's field label conversion gives."""
    value: Any = obj
    for part in label.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if label in _BOOLEAN_FIELDS:
        return "true" if value is True else "false"
    if value is None:
        return ""
    return str(value)

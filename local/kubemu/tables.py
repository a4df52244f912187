"""Server-side Tables (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``).

``kubectl get`` prints what the server sends. The columns and cells follow the API server's
printers (``pkg/printers/internalversion/printers.go``: printNode, printPod,
printPodDisruptionBudget, ...) and, for Karpenter's custom resources, the
``additionalPrinterColumns`` their CRDs declare (priority 1 = shown with ``-o wide``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .clock import parse_rfc3339
from .resources import (
    DAEMONSETS,
    DEPLOYMENTS,
    EVENTS,
    EVENTS_V1,
    LEASES,
    NAMESPACES,
    NODECLAIMS,
    NODEPOOLS,
    NODES,
    PDBS,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    Obj,
    ResourceType,
)

Cell = Callable[[Obj, datetime], Any]


@dataclass(frozen=True)
class Column:
    name: str
    cell: Cell
    type: str = "string"
    priority: int = 0
    format: str = ""

    def definition(self) -> Obj:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": "",
            "priority": self.priority,
        }


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _since(value: Any, now: datetime) -> str:
    moment = parse_rfc3339(value) if isinstance(value, str) else None
    return "<unknown>" if moment is None else human_duration((now - moment).total_seconds())


def _get(obj: Obj, *path: str) -> Any:
    value: Any = obj
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _name(obj: Obj, now: datetime) -> str:
    return str(obj["metadata"]["name"])


def _age(obj: Obj, now: datetime) -> str:
    return _since(obj["metadata"].get("creationTimestamp"), now)


def _condition(obj: Obj, kind: str) -> str:
    for condition in _get(obj, "status", "conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status", ""))
    return ""


def _or(value: Any, default: str) -> Any:
    return default if value in (None, "") else value


NAME = Column("Name", _name, format="name")
AGE = Column("Age", _age)


# --- nodes -------------------------------------------------------------------------------


def _node_status(node: Obj, now: datetime) -> str:
    ready = _condition(node, "Ready")
    states = ["Unknown" if not ready else ("Ready" if ready == "True" else "NotReady")]
    if _get(node, "spec", "unschedulable"):
        states.append("SchedulingDisabled")
    return ",".join(states)


def _node_roles(node: Obj, now: datetime) -> str:
    roles = set()
    for key, value in (node["metadata"].get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/") :]:
            roles.add(key[len("node-role.kubernetes.io/") :])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _address(kind: str) -> Cell:
    def cell(node: Obj, now: datetime) -> str:
        for address in _get(node, "status", "addresses") or []:
            if address.get("type") == kind:
                return str(address.get("address", ""))
        return "<none>"

    return cell


def _node_info(field: str) -> Cell:
    return lambda node, now: _or(_get(node, "status", "nodeInfo", field), "<unknown>")


NODE_COLUMNS = (
    NAME,
    Column("Status", _node_status),
    Column("Roles", _node_roles),
    AGE,
    Column("Version", lambda n, now: _get(n, "status", "nodeInfo", "kubeletVersion") or ""),
    Column("Internal-IP", _address("InternalIP"), priority=1),
    Column("External-IP", _address("ExternalIP"), priority=1),
    Column("OS-Image", _node_info("osImage"), priority=1),
    Column("Kernel-Version", _node_info("kernelVersion"), priority=1),
    Column("Container-Runtime", _node_info("containerRuntimeVersion"), priority=1),
)


# --- pods --------------------------------------------------------------------------------


def _pod_counts(pod: Obj) -> tuple[int, int, int, str]:
    """(ready, total, restarts, status) as printPod derives them."""
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    ready = restarts = 0
    for container in reversed(status.get("containerStatuses") or []):
        restarts += int(container.get("restartCount") or 0)
        state = container.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
        elif container.get("ready") and "running" in state:
            ready += 1
    metadata = pod["metadata"]
    if metadata.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif status.get("phase") not in ("Succeeded", "Failed"):
            reason = "Terminating"
    total = len(_get(pod, "spec", "containers") or [])
    return ready, total, restarts, reason


def _readiness_gates(pod: Obj, now: datetime) -> str:
    gates = _get(pod, "spec", "readinessGates") or []
    if not gates:
        return "<none>"
    true = {
        c.get("type") for c in _get(pod, "status", "conditions") or [] if c.get("status") == "True"
    }
    return f"{sum(1 for g in gates if g.get('conditionType') in true)}/{len(gates)}"


POD_COLUMNS = (
    NAME,
    Column("Ready", lambda p, now: "{}/{}".format(*_pod_counts(p)[:2])),
    Column("Status", lambda p, now: _pod_counts(p)[3]),
    Column("Restarts", lambda p, now: str(_pod_counts(p)[2])),
    AGE,
    Column("IP", lambda p, now: _or(_get(p, "status", "podIP"), "<none>"), priority=1),
    Column("Node", lambda p, now: _or(_get(p, "spec", "nodeName"), "<none>"), priority=1),
    Column(
        "Nominated Node",
        lambda p, now: _or(_get(p, "status", "nominatedNodeName"), "<none>"),
        priority=1,
    ),
    Column("Readiness Gates", _readiness_gates, priority=1),
)


# --- the rest of the built-in types ------------------------------------------------------


def _spec_or_na(field: str) -> Cell:
    return lambda obj, now: str(_or(_get(obj, "spec", field), "N/A"))


def _int(*path: str) -> Cell:
    return lambda obj, now: int(_get(obj, *path) or 0)


def _ratio(ready: Sequence[str], total: Sequence[str]) -> Cell:
    return lambda obj, now: f"{_get(obj, *ready) or 0}/{_get(obj, *total) or 0}"


def _replicas(obj: Obj, now: datetime) -> int:
    replicas = _get(obj, "spec", "replicas")
    return 1 if replicas is None else int(replicas)


def _containers(obj: Obj, now: datetime) -> str:
    return ",".join(
        c.get("name", "") for c in _get(obj, "spec", "template", "spec", "containers") or []
    )


def _images(obj: Obj, now: datetime) -> str:
    return ",".join(
        c.get("image", "") for c in _get(obj, "spec", "template", "spec", "containers") or []
    )


def _selector(obj: Obj, now: datetime) -> str:
    labels = _get(obj, "spec", "selector", "matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _node_selector(obj: Obj, now: datetime) -> str:
    labels = _get(obj, "spec", "template", "spec", "nodeSelector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


WORKLOAD_WIDE = (
    Column("Containers", _containers, priority=1),
    Column("Images", _images, priority=1),
    Column("Selector", _selector, priority=1),
)


def _event_object(event: Obj, now: datetime) -> str:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(event: Obj, now: datetime) -> str:
    stamp = (
        event.get("lastTimestamp") or event.get("eventTime") or event.get("deprecatedLastTimestamp")
    )
    return _since(stamp, now)


EVENT_COLUMNS = (
    Column("Last Seen", _event_last_seen),
    Column("Type", lambda e, now: e.get("type", "")),
    Column("Reason", lambda e, now: e.get("reason", "")),
    Column("Object", _event_object),
    Column("Message", lambda e, now: str(e.get("message") or e.get("note") or "").strip()),
)


# --- Karpenter: the CRDs' additionalPrinterColumns ---------------------------------------


def _label(key: str) -> Cell:
    return lambda obj, now: (obj["metadata"].get("labels") or {}).get(key, "")


NODECLAIM_COLUMNS = (
    NAME,
    Column("Type", _label("node.kubernetes.io/instance-type")),
    Column("Capacity", _label("karpenter.sh/capacity-type")),
    Column("Zone", _label("topology.kubernetes.io/zone")),
    Column("Node", lambda c, now: _get(c, "status", "nodeName") or ""),
    Column("Ready", lambda c, now: _condition(c, "Ready")),
    AGE,
    Column("ImageID", lambda c, now: _get(c, "status", "imageID") or "", priority=1),
    Column("ID", lambda c, now: _get(c, "status", "providerID") or "", priority=1),
    Column("NodePool", _label("karpenter.sh/nodepool"), priority=1),
    Column("NodeClass", lambda c, now: _get(c, "spec", "nodeClassRef", "name") or "", priority=1),
    Column("Drifted", lambda c, now: _condition(c, "Drifted"), priority=1),
)

NODEPOOL_COLUMNS = (
    NAME,
    Column(
        "NodeClass",
        lambda p, now: _get(p, "spec", "template", "spec", "nodeClassRef", "name") or "",
    ),
    Column("Nodes", lambda p, now: str(_or(_get(p, "status", "nodes"), ""))),
    Column("Ready", lambda p, now: _condition(p, "Ready")),
    AGE,
    Column("Weight", lambda p, now: _get(p, "spec", "weight"), type="integer", priority=1),
    Column("CPU", lambda p, now: _get(p, "status", "resources", "cpu") or "", priority=1),
    Column("Memory", lambda p, now: _get(p, "status", "resources", "memory") or "", priority=1),
)


COLUMNS: dict[ResourceType, tuple[Column, ...]] = {
    NODES: NODE_COLUMNS,
    PODS: POD_COLUMNS,
    PDBS: (
        NAME,
        Column("Min Available", _spec_or_na("minAvailable")),
        Column("Max Unavailable", _spec_or_na("maxUnavailable")),
        Column("Allowed Disruptions", _int("status", "disruptionsAllowed"), type="integer"),
        AGE,
    ),
    NAMESPACES: (NAME, Column("Status", lambda n, now: _get(n, "status", "phase") or ""), AGE),
    LEASES: (NAME, Column("Holder", lambda n, now: _get(n, "spec", "holderIdentity") or ""), AGE),
    EVENTS: EVENT_COLUMNS,
    EVENTS_V1: EVENT_COLUMNS,
    DEPLOYMENTS: (
        NAME,
        Column("Ready", _ratio(("status", "readyReplicas"), ("spec", "replicas"))),
        Column("Up-to-date", _int("status", "updatedReplicas"), type="integer"),
        Column("Available", _int("status", "availableReplicas"), type="integer"),
        AGE,
        *WORKLOAD_WIDE,
    ),
    REPLICASETS: (
        NAME,
        Column("Desired", _replicas, type="integer"),
        Column("Current", _int("status", "replicas"), type="integer"),
        Column("Ready", _int("status", "readyReplicas"), type="integer"),
        AGE,
        *WORKLOAD_WIDE,
    ),
    DAEMONSETS: (
        NAME,
        Column("Desired", _int("status", "desiredNumberScheduled"), type="integer"),
        Column("Current", _int("status", "currentNumberScheduled"), type="integer"),
        Column("Ready", _int("status", "numberReady"), type="integer"),
        Column("Up-to-date", _int("status", "updatedNumberScheduled"), type="integer"),
        Column("Available", _int("status", "numberAvailable"), type="integer"),
        Column("Node Selector", _node_selector),
        AGE,
        *WORKLOAD_WIDE,
    ),
    STATEFULSETS: (
        NAME,
        Column("Ready", _ratio(("status", "readyReplicas"), ("spec", "replicas"))),
        AGE,
        *WORKLOAD_WIDE[:2],
    ),
    NODECLAIMS: NODECLAIM_COLUMNS,
    NODEPOOLS: NODEPOOL_COLUMNS,
}


def wants_table(accept: str) -> bool:
    """Whether the Accept header's first acceptable type is a meta.k8s.io Table."""
    for media in accept.split(","):
        params = {
            p.split("=")[0].strip(): p.partition("=")[2].strip() for p in media.split(";")[1:]
        }
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
        if media.strip().startswith("application/json") and "as" not in params:
            return False
    return False


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }


def to_table(
    resource: ResourceType, objects: list[Obj], metadata: Obj, now: datetime, include: str
) -> Obj:
    """The Table of ``objects``; ``include`` is the includeObject parameter."""
    columns = COLUMNS.get(resource, (NAME, AGE))
    rows = []
    for obj in objects:
        row: Obj = {"cells": [column.cell(obj, now) for column in columns]}
        shown = _row_object(obj, include or "Metadata")
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [column.definition() for column in columns],
        "rows": rows,
    }

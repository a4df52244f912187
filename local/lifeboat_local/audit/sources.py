"""Where an audit reads the cluster from: a cluster file, or a live cluster through the API.

A cluster file is read as ``kubectl get ... -o yaml`` (or ``-o json``) prints it, or as
multi-document YAML: kinds the audit does not read (Services, ConfigMaps, ...) are skipped and
counted, so a ``kubectl get all`` dump works as it is, and the apps/v1 workloads are read
from the file itself. A live cluster is listed kind by kind (list requests only; an operator
tool may list, the Lambda never does); what its API server does not serve (no Karpenter, no
apps/v1) becomes a note, and the checks that need it say they estimated.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from kubemu.clusterfile import read_documents
from lifeboat.kube import KARPENTER, KubeApi, KubeError
from lifeboat.objects import Obj
from lifeboat_local.audit.inventory import Inventory
from lifeboat_local.common import UsageError

# Inventory field -> (list path, apiVersion, kind) of each list a live audit makes.
_REQUIRED: Final = (
    ("nodes", "/api/v1/nodes", "v1", "Node"),
    ("pods", "/api/v1/pods", "v1", "Pod"),
    ("pdbs", "/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget"),
)
_KARPENTER: Final = (
    ("nodepools", f"{KARPENTER}/nodepools", "karpenter.sh/v1", "NodePool"),
    ("nodeclaims", f"{KARPENTER}/nodeclaims", "karpenter.sh/v1", "NodeClaim"),
)
_APPS: Final = tuple(
    (f"/apis/apps/v1/{plural}", "apps/v1", kind)
    for plural, kind in (
        ("deployments", "Deployment"),
        ("replicasets", "ReplicaSet"),
        ("statefulsets", "StatefulSet"),
        ("daemonsets", "DaemonSet"),
    )
)
_REPLICATION_CONTROLLERS: Final = ("/api/v1/replicationcontrollers", "v1", "ReplicationController")


# ---------------------------------------------------------------------------------------------
# A cluster file


def _timestamps_as_text(value: Any) -> str:
    """YAML reads unquoted timestamps as datetimes; the API carries RFC 3339 strings."""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def read_cluster_file(path: Path) -> Inventory:
    """The file's objects as an Inventory; a usage error (exit 1) names what is wrong."""
    try:
        # The readers every command shares: aliases' expansion capped, deep nesting refused.
        documents, _ = read_documents(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"--cluster {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise UsageError(f"--cluster {path}: not valid YAML: {error}") from None
    objects: list[Obj] = []
    for index, document in enumerate(documents):
        if document is None:
            continue
        is_list = isinstance(document, dict) and document.get("kind") == "List"
        items = document.get("items") or [] if is_list else [document]
        if not isinstance(items, list):
            raise UsageError(f"--cluster {path}: document {index}: List items must be a sequence")
        for item in items:
            objects.append(_checked(item, f"--cluster {path}: document {index}"))
    return Inventory.from_objects(objects)


def _checked(item: Any, where: str) -> Obj:
    if not isinstance(item, dict):
        raise UsageError(f"{where}: expected a mapping, got {type(item).__name__}")
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    missing = [
        f
        for f, v in (
            ("apiVersion", item.get("apiVersion")),
            ("kind", item.get("kind")),
            ("metadata.name", name),
        )
        if not v
    ]
    if missing:
        raise UsageError(f"{where}: missing {', '.join(missing)}")
    converted: Obj = json.loads(json.dumps(item, default=_timestamps_as_text))
    return converted


# ---------------------------------------------------------------------------------------------
# A live cluster


def _list(kube: KubeApi, path: str, api_version: str, kind: str) -> list[Obj]:
    """One list, each item with its apiVersion and kind (list items come without them)."""
    return [{**item, "apiVersion": api_version, "kind": kind} for item in kube.list_all(path)]


def read_live(kube: KubeApi) -> Inventory:
    """List what the audit reads. A failing required list is a usage error (exit 1: the
    audit could not run); an API the server does not serve (404) is a note."""
    lists: dict[str, list[Obj]] = {"workloads": []}
    notes: list[str] = []
    for name, path, api_version, kind in _REQUIRED:
        lists[name] = _required(kube, path, api_version, kind)
    karpenter = True
    for name, path, api_version, kind in _KARPENTER:
        found = _optional(kube, path, api_version, kind)
        karpenter = karpenter and found is not None
        lists[name] = found or []
    if not karpenter:
        notes.append("no Karpenter API (karpenter.sh/v1) in this cluster: NodePool checks skipped")
    workload_kinds: set[str] = set()
    for path, api_version, kind in (*_APPS, _REPLICATION_CONTROLLERS):
        found = _optional(kube, path, api_version, kind)
        if found is not None:
            lists["workloads"] += found
            workload_kinds.add(kind)
    unserved = [kind for _, _, kind in _APPS if kind not in workload_kinds]
    if unserved:
        kinds = ", ".join(f"{kind}s" for kind in unserved)
        notes.append(f"the API server does not serve {kinds}: scales are estimated from pods")
    return Inventory(
        nodes=tuple(lists["nodes"]),
        pods=tuple(lists["pods"]),
        pdbs=tuple(lists["pdbs"]),
        nodepools=tuple(lists["nodepools"]),
        nodeclaims=tuple(lists["nodeclaims"]),
        workloads=tuple(lists["workloads"]),
        workload_kinds=frozenset(workload_kinds),
        karpenter=karpenter,
        notes=tuple(notes),
    )


def _required(kube: KubeApi, path: str, api_version: str, kind: str) -> list[Obj]:
    try:
        return _list(kube, path, api_version, kind)
    except KubeError as error:
        raise UsageError(f"cannot list {kind}s: {error}") from None


def _optional(kube: KubeApi, path: str, api_version: str, kind: str) -> list[Obj] | None:
    """The list, or None when the API server does not serve it (404)."""
    try:
        return _list(kube, path, api_version, kind)
    except KubeError as error:
        if error.status == 404:
            return None
        raise UsageError(f"cannot list {kind}s: {error}") from None

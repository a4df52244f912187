"""Where an audit reads the cluster from: a cluster file, or a live cluster through the API.

A cluster file is read by the loader every tool uses (``lifeboat_local.source``), as
``kubectl get ... -o yaml`` (or ``-o json``) prints it, or as multi-document YAML: kinds the
audit does not read (Services, ConfigMaps, ...) are skipped and counted, so a ``kubectl get
all`` dump works as it is, and the workload controllers are read from the file itself.
A live cluster is listed kind by kind (list requests only; an operator
tool may list, the Lambda never does); what its API server does not serve (no Karpenter, no
apps/v1) becomes a note, and the checks that need it say they estimated.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Final

from lifeboat.kube.client import KARPENTER, KubeApi, KubeError
from lifeboat.model.objects import Obj
from lifeboat_local.audit.inventory import Inventory
from lifeboat_local.common import UsageError
from lifeboat_local.source import load_cluster

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


def read_cluster_file(path: Path, depends_on: Collection[str] | None = None) -> Inventory:
    """The file's objects as an Inventory, read by the loader every tool uses (what it skips,
    warns of or assumes is said on stderr as for ``replay``); a usage error (exit 1) names
    what is wrong."""
    cluster = load_cluster(path, depends_on)
    return Inventory.from_objects(cluster.objects, skipped=cluster.skipped)


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

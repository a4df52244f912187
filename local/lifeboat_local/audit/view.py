"""One audited cluster: its objects, the instant of the audit, and the indexes checks share.

Pure: built from an ``Inventory`` and a clock value; every index is computed once, on first
use, so a check that needs none costs nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any, TypeVar, cast

from lifeboat.kube import nodes
from lifeboat.kube.selectors import selector_matches
from lifeboat.model.objects import Obj
from lifeboat_local.audit.findings import ObjectRef
from lifeboat_local.audit.inventory import Inventory
from lifeboat_local.audit.karpenter_access import Access

Key = tuple[str, str, str]  # (kind, namespace, name)
T = TypeVar("T")

# Kinds without a namespace; everything else the audit reads is namespaced.
CLUSTER_SCOPED = frozenset({"Node", "NodePool", "NodeClaim"})


def namespace_of(obj: Obj) -> str | None:
    """The object's namespace ("default" when a namespaced object names none, as the API
    server fills it in), None for cluster-scoped kinds."""
    if obj.get("kind") in CLUSTER_SCOPED:
        return None
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def ref(obj: Obj) -> ObjectRef:
    return ObjectRef(str(obj.get("kind")), namespace_of(obj), nodes.name_of(obj))


def key(obj: Obj) -> Key:
    return (str(obj.get("kind")), namespace_of(obj) or "", nodes.name_of(obj))


def controller_of(obj: Obj) -> Obj | None:
    """metav1.GetControllerOf: the ownerReference marked ``controller: true``."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller") is True:
            return dict(owner)
    return None


def pod_phase(pod: Obj) -> str:
    """status.phase; a pod a file gives without status counts as Running."""
    return str((pod.get("status") or {}).get("phase") or "Running")


def is_terminal(pod: Obj) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


class ClusterView:
    """The inventory plus shared indexes; ``at`` is the audit's "now"."""

    def __init__(
        self, inventory: Inventory, at: datetime, node_group_labels: Sequence[str] = ()
    ) -> None:
        self.inventory = inventory
        self.at = at
        # Labels that name a node's group, beyond the well-known ones (--node-group-label).
        self.node_group_labels = tuple(node_group_labels)
        # What IAM says of Karpenter's role and ec2:DescribeInstanceStatus, asked before the
        # checks run (--karpenter-role-arn); None: not asked.
        self.karpenter_access: Access | None = None
        self._memo: dict[Hashable, Any] = {}

    def memo(self, memo_key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per key: what several checks derive (a PDB's state) is shared."""
        if memo_key not in self._memo:
            self._memo[memo_key] = compute()
        return cast(T, self._memo[memo_key])

    @cached_property
    def live_pods(self) -> tuple[Obj, ...]:
        """Pods that still run or will: not finished (a finished pod holds nothing up)."""
        return tuple(p for p in self.inventory.pods if not is_terminal(p))

    @cached_property
    def pods_by_namespace(self) -> Mapping[str, Sequence[Obj]]:
        found: dict[str, list[Obj]] = defaultdict(list)
        for pod in self.inventory.pods:
            found[namespace_of(pod) or ""].append(pod)
        return found

    @cached_property
    def pods_by_node(self) -> Mapping[str, Sequence[Obj]]:
        found: dict[str, list[Obj]] = defaultdict(list)
        for pod in self.live_pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                found[str(node)].append(pod)
        return found

    def pods_selected_by(self, pdb: Obj) -> Sequence[Obj]:
        """The pods of the PDB's namespace its selector matches (all phases, as the disruption
        controller's getPodsForPdb lists them)."""
        return self._pdb_pods[key(pdb)]

    @cached_property
    def _pdb_pods(self) -> Mapping[Key, Sequence[Obj]]:
        return {
            key(pdb): [
                pod
                for pod in self.pods_by_namespace.get(namespace_of(pdb) or "", ())
                if selector_matches((pdb.get("spec") or {}).get("selector"), nodes.labels_of(pod))
            ]
            for pdb in self.inventory.pdbs
        }

    def pdbs_of(self, pod: Obj) -> Sequence[Obj]:
        """The PDBs selecting ``pod`` (the inverse of ``pods_selected_by``)."""
        return self._pod_pdbs.get(key(pod), ())

    @cached_property
    def _pod_pdbs(self) -> Mapping[Key, Sequence[Obj]]:
        found: dict[Key, list[Obj]] = defaultdict(list)
        for pdb in self.inventory.pdbs:
            for pod in self.pods_selected_by(pdb):
                found[key(pod)].append(pdb)
        return found

    def pdbs_selecting(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]:
        """The PDBs of ``namespace`` whose selector matches ``labels`` (a pod's or a template's)."""
        return [
            pdb
            for pdb in self._pdbs_by_namespace.get(namespace, ())
            if selector_matches((pdb.get("spec") or {}).get("selector"), labels)
        ]

    @cached_property
    def _pdbs_by_namespace(self) -> Mapping[str, Sequence[Obj]]:
        found: dict[str, list[Obj]] = defaultdict(list)
        for pdb in self.inventory.pdbs:
            found[namespace_of(pdb) or ""].append(pdb)
        return found

    @cached_property
    def workloads_by_key(self) -> Mapping[Key, Obj]:
        return {key(w): w for w in self.inventory.workloads}

    def workload(self, kind: str, namespace: str, name: str, uid: str | None) -> Obj | None:
        """The workload an ownerReference points at; a namesake with another uid is not it
        (the disruption controller's finders compare uids the same way)."""
        found = self.workloads_by_key.get((kind, namespace, name))
        if found is None:
            return None
        if uid and (found.get("metadata") or {}).get("uid") not in (None, uid):
            return None
        return found

    @cached_property
    def pods_by_controller(self) -> Mapping[tuple[str, str, str], Sequence[Obj]]:
        """Live pods per (namespace, controller kind, controller name)."""
        found: dict[tuple[str, str, str], list[Obj]] = defaultdict(list)
        for pod in self.live_pods:
            owner = controller_of(pod)
            if owner is not None:
                found[
                    (namespace_of(pod) or "", str(owner.get("kind")), str(owner.get("name")))
                ].append(pod)
        return found

    @cached_property
    def nodepools_by_name(self) -> Mapping[str, Obj]:
        return {nodes.name_of(pool): pool for pool in self.inventory.nodepools}

    @cached_property
    def nodes_by_pool(self) -> Mapping[str, Sequence[Obj]]:
        found: dict[str, list[Obj]] = defaultdict(list)
        for node in self.inventory.nodes:
            pool = nodes.labels_of(node).get(nodes.NODEPOOL_LABEL)
            if pool:
                found[str(pool)].append(node)
        return found

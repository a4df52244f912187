"""Which PodDisruptionBudget keeps a node from voluntary disruption: Karpenter's candidate
filter (``StateNode.ValidatePodsDisruptable`` with ``pdb.Limits.CanEvictPods``,
pkg/utils/pdb/pdb.go). Pure: the caller lists the PDBs of the pods' namespaces.

For each pod a drain would evict (``IsEvictable``: active, not a mirror pod, not tolerating
``karpenter.sh/disrupted:NoSchedule``, no active do-not-disrupt), the PDBs of its namespace
whose selector matches its labels:

- more than one: the eviction API refuses it ("does not support multiple PDBs");
- one with ``unhealthyPodEvictionPolicy: AlwaysAllow`` and the pod ``Ready=False``: evictable;
- one whose ``status.disruptionsAllowed`` is 0 (or not yet computed): blocked.

Each pod is checked against the PDB's current status alone, as Karpenter does.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from lifeboat.karpenter import disruption_rules
from lifeboat.kube import nodes
from lifeboat.kube.selectors import selector_matches
from lifeboat.model.objects import Obj


def _key(obj: Obj) -> str:
    return f"{obj['metadata'].get('namespace', 'default')}/{nodes.name_of(obj)}"


def _not_ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "False"
        for c in pod.get("status", {}).get("conditions") or []
    )


def pdb_blocker(pods: Iterable[Obj], pdbs: Iterable[Obj], now: datetime) -> str | None:
    """Why a PDB keeps these pods' node from voluntary disruption now (None: none does)."""
    budgets = list(pdbs)
    for pod in pods:
        if not disruption_rules.is_evictable(pod, now):
            continue
        namespace = pod["metadata"].get("namespace", "default")
        matching = [
            pdb
            for pdb in budgets
            if pdb["metadata"].get("namespace", "default") == namespace
            and selector_matches((pdb.get("spec") or {}).get("selector"), nodes.labels_of(pod))
        ]
        if len(matching) > 1:
            names = ", ".join(sorted(_key(p) for p in matching))
            return f"pod {_key(pod)}: eviction does not support multiple PDBs ({names})"
        for pdb in matching:
            spec, status = pdb.get("spec") or {}, pdb.get("status") or {}
            if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow" and _not_ready(pod):
                continue
            if int(status.get("disruptionsAllowed") or 0) == 0:
                return f"PDB {_key(pdb)} allows no disruption now (pod {_key(pod)})"
    return None


def pdb_namespaces(pods: Iterable[Obj]) -> list[str]:
    """The namespaces whose PDBs can matter: those of the pods a drain would evict."""
    return sorted(
        {
            p["metadata"].get("namespace", "default")
            for p in pods
            if disruption_rules.drained_by_karpenter(p)
        }
    )

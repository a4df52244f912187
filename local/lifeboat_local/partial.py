"""What a cluster file does not hold, and which answers that changes.

A cluster file is what ``kubectl get KINDS -A -o yaml`` printed, and users leave kinds out
(``kubectl get nodes,pods``, ``kubectl get all``). A kind the file lacks reads as "none in the
cluster": every instance unknown without Nodes, no budget without NodePools, no PDB holding a
pod. So the tools say which kinds are missing (stderr, with the command that adds them; a
warning, so ``--strict`` fails), list them in ``--json``, and the answers that depend on them
say "not in the file" instead of "not found" or "none".

A kind counts as missing when the file holds no object of it, except:
- NodeClaims and NodePools, only when the file shows Karpenter (a node labelled with its
  NodePool, or the other kind present): a cluster without Karpenter has neither.
- The workload controllers, only when the file's pods name an owner of a kind the file has
  none of (a PDB's expected pods come from their scale).
- A typed empty list (``kind: PodDisruptionBudgetList`` with no items, as the API answers
  ``kubectl get --raw /apis/policy/v1/poddisruptionbudgets``) says the cluster has none.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NODEPOOL_LABEL = "karpenter.sh/nodepool"
# Owners whose scale a PDB's expected pods come from (Deployments own ReplicaSets).
CONTROLLERS = ("ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController", "Deployment")


@dataclass(frozen=True)
class MissingKind:
    kind: str  # the kind, as --json lists it
    plural: str  # as a person reads it
    affects: str  # which answers change without it


NODES = MissingKind("Node", "Nodes", "every instance is unknown (instances are matched to Nodes)")
PODS = MissingKind("Pod", "Pods", "no node has pods: drains, PDBs and do-not-disrupt pods unseen")
PDBS = MissingKind("PodDisruptionBudget", "PodDisruptionBudgets", "no PDB holds a pod back")
NODEPOOLS = MissingKind(
    "NodePool", "NodePools", "no budget or window applies; no replacement can be built"
)
NODECLAIMS = MissingKind(
    "NodeClaim", "NodeClaims", "Karpenter's nodes look unmanaged (drained by Lifeboat)"
)
CONTROLLER_KINDS = MissingKind(
    "controllers", "workload controllers", "PDBs' expected pods come from exported status"
)

# What a person is told to add, per kind: kubectl's short names.
EXPORT_NAMES = {
    "Node": "nodes",
    "Pod": "pods",
    "PodDisruptionBudget": "pdb",
    "NodePool": "nodepools",
    "NodeClaim": "nodeclaims",
    "controllers": "deployments,replicasets,statefulsets,daemonsets,replicationcontrollers",
}


def missing_kinds(
    objects: Iterable[Mapping[str, Any]], declared: Collection[str] = ()
) -> tuple[MissingKind, ...]:
    """The kinds ``objects`` lack that the tools' answers depend on. ``declared``: kinds a
    typed list said the cluster has none of."""
    present: set[str] = set(declared)
    karpenter_nodes = False
    owners: set[str] = set()
    for obj in objects:
        kind = str(obj.get("kind"))
        present.add(kind)
        metadata = obj.get("metadata") or {}
        if kind == "Node" and NODEPOOL_LABEL in (metadata.get("labels") or {}):
            karpenter_nodes = True
        if kind == "Pod":
            owners.update(
                str(ref.get("kind"))
                for ref in metadata.get("ownerReferences") or ()
                if isinstance(ref, Mapping) and ref.get("controller")
            )
    missing = [k for k in (NODES, PODS, PDBS) if k.kind not in present]
    karpenter = karpenter_nodes or bool({"NodePool", "NodeClaim"} & present)
    if karpenter:
        missing += [k for k in (NODEPOOLS, NODECLAIMS) if k.kind not in present]
    if any(o in CONTROLLERS and o not in present for o in owners):
        missing.append(CONTROLLER_KINDS)
    return tuple(missing)


def missing_text(where: str, missing: Iterable[MissingKind], export_command: str) -> list[str]:
    """The warnings to say on stderr: one per missing kind, then how to add them."""
    missing = tuple(missing)
    if not missing:
        return []
    lines = [f"{where} holds no {m.plural}: {m.affects}" for m in missing]
    names = ",".join(EXPORT_NAMES[m.kind] for m in missing)
    lines.append(
        f"{where}: add the missing kinds with `kubectl get {names} -A -o yaml` (or export "
        f"all at once: {export_command}); answers that depend on them say 'not in the file'"
    )
    return lines


def kinds_of(missing: Iterable[MissingKind]) -> list[str]:
    """What ``--json`` lists."""
    return [m.kind for m in missing]


def in_file_reason(reason: str, missing: Collection[MissingKind], *, decided: bool) -> str:
    """``reason`` as an answer from a cluster file that lacks ``missing``: "not found" turned
    into "not in the file" where the kind not found is one the file lacks and, for an answer
    about a node (``decided``), the other missing kinds it depended on said at its end."""
    kinds = {m.kind for m in missing}
    if "Node" in kinds:
        reason = reason.replace(_UNKNOWN, "is not in the file (it holds no Nodes)")
    if "NodePool" in kinds:
        reason = _POOL_NOT_FOUND.sub(r"NodePool \1 not in the file (it holds no NodePools)", reason)
    others = [m.plural for m in missing if m.kind != "Node"]
    if decided and others:
        reason += f"; judged without {', '.join(others)} (not in the file)"
    return reason


_UNKNOWN = "is unknown (not found in EC2 or the cluster)"
_POOL_NOT_FOUND = re.compile(r"NodePool (\S+) not found")

"""The objects an audit looks at, however they were read (a cluster file or a live cluster).

Both sources end here, so the checks never know where the objects came from: a cluster file's
objects go through ``Inventory.from_objects``, a live cluster's lists are put in the fields
directly (see ``sources``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from lifeboat.model.objects import Obj

# (apiVersion, kind) -> the Inventory field holding it. Workload controllers are the ones the
# disruption controller asks for their scale (ReplicationController, Deployment, ReplicaSet,
# StatefulSet), and DaemonSets, whose pods a drain leaves alone.
FIELD_OF_KIND: Final[dict[tuple[str, str], str]] = {
    ("v1", "Node"): "nodes",
    ("v1", "Pod"): "pods",
    ("policy/v1", "PodDisruptionBudget"): "pdbs",
    ("karpenter.sh/v1", "NodePool"): "nodepools",
    ("karpenter.sh/v1", "NodeClaim"): "nodeclaims",
    ("apps/v1", "Deployment"): "workloads",
    ("apps/v1", "ReplicaSet"): "workloads",
    ("apps/v1", "StatefulSet"): "workloads",
    ("apps/v1", "DaemonSet"): "workloads",
    ("v1", "ReplicationController"): "workloads",
}
WORKLOAD_KINDS: Final = frozenset(
    kind for (_, kind), f in FIELD_OF_KIND.items() if f == "workloads"
)


@dataclass(frozen=True)
class Inventory:
    """A cluster's objects, by kind, each carrying ``apiVersion`` and ``kind``.

    ``workload_kinds`` are the workload kinds the source gave (a cluster file: those it holds;
    a live cluster: those its API server lists). A pod whose controller is of a kind not read
    has its controller's scale estimated from its pods, instead of the controller reported
    missing. ``karpenter`` is False when the cluster has no Karpenter API. ``notes`` say what
    the source could not give, for the report.
    """

    nodes: tuple[Obj, ...] = ()
    pods: tuple[Obj, ...] = ()
    pdbs: tuple[Obj, ...] = ()
    nodepools: tuple[Obj, ...] = ()
    nodeclaims: tuple[Obj, ...] = ()
    workloads: tuple[Obj, ...] = ()
    workload_kinds: frozenset[str] = WORKLOAD_KINDS
    karpenter: bool = True
    notes: tuple[str, ...] = field(default=())

    def reads(self, kind: str) -> bool:
        """Whether the source gave the workloads of ``kind`` (all of them, or none)."""
        return kind in self.workload_kinds

    @property
    def objects(self) -> tuple[Obj, ...]:
        """Every object, of every kind."""
        return (
            *self.nodes,
            *self.pods,
            *self.pdbs,
            *self.nodepools,
            *self.nodeclaims,
            *self.workloads,
        )

    @classmethod
    def from_objects(
        cls,
        objects: Iterable[Obj],
        notes: Iterable[str] = (),
        skipped: Mapping[tuple[str, str], int] | None = None,
    ) -> Inventory:
        """Sort a cluster file's objects by kind; kinds the audit does not read are counted in
        a note, not refused (a ``kubectl get all -o yaml`` dump holds Services and more), with
        those the loader already ``skipped`` (by apiVersion and kind)."""
        sorted_objects: dict[str, list[Obj]] = {name: [] for name in set(FIELD_OF_KIND.values())}
        ignored: dict[str, int] = {
            f"{api_version}/{kind}": count for (api_version, kind), count in (skipped or {}).items()
        }
        for obj in objects:
            name = FIELD_OF_KIND.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
            if name is None:
                label = f"{obj.get('apiVersion')}/{obj.get('kind')}"
                ignored[label] = ignored.get(label, 0) + 1
            else:
                sorted_objects[name].append(obj)
        notes = list(notes)
        if ignored:
            kinds = ", ".join(f"{count} {label}" for label, count in sorted(ignored.items()))
            notes.append(f"not audited: {kinds}")
        workload_kinds = frozenset(str(w.get("kind")) for w in sorted_objects["workloads"])
        # A file without NodePools or NodeClaims says nothing about Karpenter either way.
        karpenter = bool(sorted_objects["nodepools"] or sorted_objects["nodeclaims"])
        missing = _controller_kinds(sorted_objects["pods"]) - workload_kinds - {"DaemonSet"}
        if missing:
            kinds = ", ".join(f"{kind}s" for kind in sorted(missing))
            notes.append(
                f"the cluster file holds no {kinds}: their scales are estimated from their pods"
            )
        return cls(
            nodes=tuple(sorted_objects["nodes"]),
            pods=tuple(sorted_objects["pods"]),
            pdbs=tuple(sorted_objects["pdbs"]),
            nodepools=tuple(sorted_objects["nodepools"]),
            nodeclaims=tuple(sorted_objects["nodeclaims"]),
            workloads=tuple(sorted_objects["workloads"]),
            workload_kinds=workload_kinds,
            karpenter=karpenter,
            notes=tuple(notes),
        )


def _controller_kinds(pods: Iterable[Obj]) -> frozenset[str]:
    """The workload kinds that control ``pods`` (DaemonSet's scale is never needed)."""
    kinds = set()
    for pod in pods:
        for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
            if owner.get("controller") is True and owner.get("kind") in WORKLOAD_KINDS:
                kinds.add(str(owner["kind"]))
    return frozenset(kinds)

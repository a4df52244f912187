"""Node groups from a cluster file's nodes: grouped by the label naming their group (EKS,
eksctl, kops), Karpenter's own nodes left out. What nodes say is used (instance types, zones,
capacity type, architecture, the labels and taints every node of the group carries, the OS
for the AMI alias); what they cannot say is stated in the notes: the group's maximum is
taken as its current node count, and subnets, security groups and role come from the command
line as for the settings form."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from lifeboat_local.convert.labels import RESTRICTED_DOMAINS
from lifeboat_local.convert.model import ConversionError, NodeGroup, SelectorTerm, Taint
from lifeboat_local.convert.settings import DISCOVERY_TAG, SettingsContext
from lifeboat_local.source import read_cluster_file

GROUP_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "kops.k8s.io/instancegroup",
)
# Labels and taints the node's own machinery sets: not the group's to carry over.
_SYSTEM_PREFIXES = (*RESTRICTED_DOMAINS, "eks.amazonaws.com", "alpha.eksctl.io", "lifeboat.dev")
_OS_ALIASES = (
    ("bottlerocket", "bottlerocket"),
    ("amazon linux 2023", "al2023"),
    ("amazon linux 2", "al2"),
)


def _system(key: str) -> bool:
    domain = key.rpartition("/")[0]
    return any(domain == d or domain.endswith(f".{d}") for d in _SYSTEM_PREFIXES)


def _group_of(labels: dict[str, str]) -> str | None:
    return next((labels[k] for k in GROUP_LABELS if labels.get(k)), None)


def _common(dicts: list[dict[str, str]]) -> dict[str, str]:
    first = dicts[0]
    return {k: v for k, v in first.items() if all(d.get(k) == v for d in dicts[1:])}


# EKS managed nodes carry the AMI they run; the pool is pinned to it.
IMAGE_LABEL = "eks.amazonaws.com/nodegroup-image"
_AMI_FAMILIES = {"al2023": "AL2023", "al2": "AL2", "bottlerocket": "Bottlerocket"}


def _alias_family(nodes: list[dict[str, Any]]) -> str | None:
    """The alias family of the nodes' OS (all of them), None when they differ or it is none
    of Karpenter's."""
    images = {
        str(((n.get("status") or {}).get("nodeInfo") or {}).get("osImage", "")).lower()
        for n in nodes
    }
    for prefix, family in _OS_ALIASES:
        if all(image.startswith(prefix) for image in images):
            return family
    return None


def _pin(group: NodeGroup, labels: list[dict[str, str]], family: str | None) -> None:
    """Pin the group to the AMI its nodes run, when they all run one Karpenter knows the
    family of; else the pool needs --ami-alias (the error says so)."""
    if family is not None:
        group.alias_family = family
    images = {lab.get(IMAGE_LABEL) for lab in labels}
    if len(images) != 1 or None in images:
        group.notes.append(
            f"{group.source}: the nodes do not all name one AMI ({IMAGE_LABEL}): "
            "--ami-alias chooses it"
        )
        return
    if family is None:
        group.notes.append(
            f"{group.source}: the nodes' OS (status.nodeInfo.osImage) is not one of "
            "Amazon Linux 2023, Amazon Linux 2, Bottlerocket: the AMI family of "
            f"{next(iter(images))} is unknown: --ami-alias chooses the AMI"
        )
        return
    group.ami_id = images.pop()
    group.ami_family = _AMI_FAMILIES[family]


def _label_values(labels: list[dict[str, str]], key: str) -> list[str]:
    """The distinct non-empty values of label ``key`` across the nodes, sorted."""
    return sorted({lab[key] for lab in labels if lab.get(key)})


def _shared_taints(nodes: list[dict[str, Any]]) -> set[tuple[str, str, str | None]]:
    """The taints (key, effect, value) every node carries."""
    taint_sets = [
        {
            (t.get("key", ""), t.get("effect", ""), t.get("value"))
            for t in (n.get("spec") or {}).get("taints") or []
        }
        for n in nodes
    ]
    return set.intersection(*taint_sets) if taint_sets else set()


def _group_notes(where: str, count: int, ctx: SettingsContext) -> list[str]:
    """What nodes cannot tell and the pool guesses: its maximum, its root volume, and (without
    --cluster-name) the discovery tag."""
    notes = [
        f"{where}: maximum taken as the current node count ({count}): raise the pool's "
        "limits if the group may grow",
        f"{where}: the root volume is not visible on nodes: Karpenter's default applies unless "
        "blockDeviceMappings are added",
    ]
    if ctx.cluster_name is None:
        notes.append(
            f"{where}: no --cluster-name: subnets and security groups are selected by "
            f"tag {DISCOVERY_TAG}=CLUSTER_NAME, a placeholder to replace"
        )
    return notes


def group(name: str, nodes: list[dict[str, Any]], where: str, ctx: SettingsContext) -> NodeGroup:
    labels = [dict((n.get("metadata") or {}).get("labels") or {}) for n in nodes]
    types = _label_values(labels, "node.kubernetes.io/instance-type")
    if not types:
        raise ConversionError(f"{where}: no node carries node.kubernetes.io/instance-type")
    capacity = {lab.get("eks.amazonaws.com/capacityType", "ON_DEMAND") for lab in labels}
    shared_taints = _shared_taints(nodes)
    cluster = ctx.cluster_name or "CLUSTER_NAME"
    discovery = SelectorTerm(tags=((DISCOVERY_TAG, cluster),))
    found = NodeGroup(
        name=name,
        source=where,
        instance_types=types,
        max_size=len(nodes),
        capacity_type="spot" if capacity == {"SPOT"} else "on-demand",
        zones=_label_values(labels, "topology.kubernetes.io/zone"),
        subnets=[discovery],
        security_groups=[discovery],
        labels={
            k: v for k, v in _common(labels).items() if not _system(k) and k not in GROUP_LABELS
        },
        taints=[
            Taint(k, e, v)
            for k, e, v in sorted(shared_taints, key=str)
            if not _system(k) and not k.startswith("node.kubernetes.io/")
        ],
        gpu=any(lab.get("nvidia.com/gpu.present") == "true" for lab in labels)
        or any(t[0] == "nvidia.com/gpu" for t in shared_taints),
        role=ctx.role or f"KarpenterNodeRole-{cluster}",
        notes=_group_notes(where, len(nodes), ctx),
    )
    _pin(found, labels, _alias_family(nodes))
    return found


def read(path: Path, ctx: SettingsContext) -> list[NodeGroup]:
    objects = read_cluster_file(path).objects
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if "karpenter.sh/nodepool" in labels:
            continue  # already Karpenter's
        found = _group_of(labels)
        if found is not None:
            by_group[found].append(obj)
    if not by_group:
        raise ConversionError(
            f"--cluster {path}: no node carries a group label ({', '.join(GROUP_LABELS)})"
        )
    return [
        group(name, members, f"--cluster {path}: node group {name}", ctx)
        for name, members in sorted(by_group.items())
    ]

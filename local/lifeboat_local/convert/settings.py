"""Node groups from the settings ConfigMaps fleets keep (one per group, one or many documents:
multi-document YAML or a ``kind: List``)::

    metadata: {name: m5.8xlarge-min-300-max-2500}
    data: {k8s_instance_type: m6i.8xlarge, k8s_root_volume_size: '100', ...}

The form names no subnets, security groups, role or zone: those come from the command line
(``SettingsContext``) and are listed in the notes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lifeboat_local.common import UsageError
from lifeboat_local.convert.model import ConversionError, NodeGroup, RootVolume, SelectorTerm

KEYS = (
    "k8s_instance_type",
    "k8s_root_volume_size",
    "k8s_root_volume_iops",
    "k8s_root_volume_type",
    "k8s_root_volume_throughput",
    "k8s_min_node_number",
    "k8s_max_node_number",
    "multi_az_provisioned_workers",
    "asg_launch_type",
    "gpu_enabled",
)
REQUIRED = ("k8s_instance_type", "k8s_max_node_number")
LAUNCH_TYPES = ("launch_template", "launch_configuration")
VOLUME_TYPES = ("gp2", "gp3", "io1", "io2", "sc1", "st1", "standard")
DISCOVERY_TAG = "karpenter.sh/discovery"  # Karpenter's getting-started convention


@dataclass(frozen=True)
class SettingsContext:
    """What the settings form does not say."""

    cluster_name: str | None = None
    role: str | None = None
    zone: str | None = None
    ami_alias: str = "al2023@latest"


def documents(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, ConfigMap) for each ConfigMap of the file."""
    try:
        loaded = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as error:  # unreadable input: a usage error (exit 1)
        raise UsageError(f"--settings {path}: cannot read it ({error})") from None
    index = 0
    for document in loaded:
        items = document.get("items") if isinstance(document, dict) else None
        for item in items if isinstance(items, list) else [document]:
            index += 1
            if item is None:
                continue
            if not isinstance(item, dict) or not isinstance(item.get("data"), dict):
                raise ConversionError(
                    f"{path}: document {index}: not a settings ConfigMap (no data mapping)"
                )
            yield f"{path}: document {index}", item


def _int(data: dict[str, Any], key: str, where: str, low: int = 0) -> int | None:
    if key not in data:
        return None
    value = data[key]
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConversionError(
            f"{where}: data.{key}: {value!r} is not a whole number (write e.g. '{low or 100}')"
        ) from None
    if number < low:
        raise ConversionError(f"{where}: data.{key}: {number} is below {low}")
    return number


def _bool(data: dict[str, Any], key: str, where: str) -> bool:
    value = str(data.get(key, "false")).strip().lower()
    if value not in ("true", "false"):
        raise ConversionError(f"{where}: data.{key}: {data[key]!r} is neither 'true' nor 'false'")
    return value == "true"


def _sizes(data: dict[str, Any], where: str) -> tuple[int, int]:
    """The group's (min, max) node counts (max at least 1, min not above it)."""
    max_size = _int(data, "k8s_max_node_number", where, 1) or 1
    min_size = _int(data, "k8s_min_node_number", where) or 0
    if min_size > max_size:
        raise ConversionError(
            f"{where}: data.k8s_min_node_number {min_size} is above k8s_max_node_number {max_size}"
        )
    return min_size, max_size


def _check_launch_type(data: dict[str, Any], where: str) -> None:
    """Reject an ``asg_launch_type`` the settings do not know (it is not converted)."""
    launch = str(data.get("asg_launch_type", "launch_template"))
    if launch not in LAUNCH_TYPES:
        raise ConversionError(
            f"{where}: data.asg_launch_type: {launch!r} is not one of {', '.join(LAUNCH_TYPES)}"
        )


def _volume_type(data: dict[str, Any], where: str) -> str:
    """The root volume's EBS type (default gp3)."""
    volume_type = str(data.get("k8s_root_volume_type", "gp3"))
    if volume_type not in VOLUME_TYPES:
        raise ConversionError(
            f"{where}: data.k8s_root_volume_type: {volume_type!r} is not an EBS volume type "
            f"({', '.join(VOLUME_TYPES)})"
        )
    return volume_type


def _settings_notes(data: dict[str, Any], where: str, min_size: int) -> list[str]:
    """What the NodePool leaves out of the settings: unknown keys, and a minimum size
    (Karpenter has none)."""
    unknown = sorted(set(data) - set(KEYS))
    notes: list[str] = []
    if unknown:
        notes.append(f"{where}: not converted (unknown keys): {', '.join(unknown)}")
    if min_size:
        notes.append(
            f"{where}: k8s_min_node_number {min_size} has no NodePool equivalent: Karpenter "
            "provisions for pending pods; keep the group at its minimum until the pool has "
            "taken the load"
        )
    return notes


def _zones(data: dict[str, Any], where: str, context: SettingsContext) -> list[str]:
    """The zones the pool is kept in: none (any zone) for a multi-AZ group, else the
    one named by ``--zone`` (the settings do not say which)."""
    if _bool(data, "multi_az_provisioned_workers", where):
        return []
    if context.zone is None:
        raise ConversionError(
            f"{where}: multi_az_provisioned_workers is 'false' (a single-zone group) but "
            "the settings name no zone: pass --zone ZONE so the pool stays in it"
        )
    return [context.zone]


def _root_volume(
    data: dict[str, Any], where: str, size: int | None, volume_type: str
) -> RootVolume | None:
    """The root volume when the settings give its size, else None (Karpenter's default)."""
    if size is None:
        return None
    return RootVolume(
        size_gib=size,
        volume_type=volume_type,
        iops=_int(data, "k8s_root_volume_iops", where, 1),
        throughput=_int(data, "k8s_root_volume_throughput", where, 1),
    )


def node_group(where: str, config_map: dict[str, Any], context: SettingsContext) -> NodeGroup:
    data = config_map["data"]
    name = str((config_map.get("metadata") or {}).get("name") or "")
    where = f"{where} ({name})" if name else where
    if not name:
        raise ConversionError(f"{where}: metadata.name is missing (it names the NodePool)")
    for key in REQUIRED:
        if key not in data:
            raise ConversionError(f"{where}: data.{key} is missing")
    # Checked in this order so that, of several mistakes, the same one is reported first.
    min_size, max_size = _sizes(data, where)
    _check_launch_type(data, where)
    volume_type = _volume_type(data, where)
    size = _int(data, "k8s_root_volume_size", where, 1)
    notes = _settings_notes(data, where, min_size)
    zones = _zones(data, where, context)
    cluster = context.cluster_name or "CLUSTER_NAME"
    if context.cluster_name is None:
        notes.append(
            f"{where}: no --cluster-name: subnets and security groups are selected by tag "
            f"{DISCOVERY_TAG}=CLUSTER_NAME, a placeholder to replace"
        )
    discovery = SelectorTerm(tags=((DISCOVERY_TAG, cluster),))
    return NodeGroup(
        name=name,
        source=where,
        instance_types=[str(data["k8s_instance_type"])],
        max_size=max_size,
        min_size=min_size,
        zones=zones,
        subnets=[discovery],
        security_groups=[discovery],
        gpu=_bool(data, "gpu_enabled", where),
        root_volume=_root_volume(data, where, size, volume_type),
        ami_alias=context.ami_alias,
        role=context.role or f"KarpenterNodeRole-{cluster}",
        notes=notes,
    )


def read(path: Path, context: SettingsContext) -> list[NodeGroup]:
    groups = [node_group(where, cm, context) for where, cm in documents(path)]
    if not groups:
        raise ConversionError(f"{path}: no settings ConfigMap in the file")
    return groups

"""Node groups from the settings ConfigMaps fleets keep (one per group, one or many documents:
multi-document YAML or a ``kind: List``)::

    metadata: {name: m5.8xlarge-min-300-max-2500}
    data: {k8s_instance_type: m6i.8xlarge, k8s_root_volume_size: '100', ...}

The form names no subnets, security groups, role or zone: those come from the command line
(``SettingsContext``) and are listed in the notes. The keys are documented in a table in
docs/migrating.md ("Settings keys"); a key that is not one of them is warned about with the
nearest one (``--strict``: exit 3, as for every command's warnings). The file is read
through the cluster-file reader (``kubemu.clusterfile.read_documents``: nesting depth, alias
expansion bounded) and numbers are bounded (a node count is an int32, as Kubernetes' and
Auto Scaling's are).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubemu.clusterfile import read_documents
from lifeboat_local.common import UsageError, read_text, warn
from lifeboat_local.convert.model import (
    ConversionError,
    NodeGroup,
    RootVolume,
    SelectorTerm,
    Taint,
)

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
    "labels",
    "taints",
)
# The largest node count, volume size or IOPS: an int32 (Auto Scaling's MaxSize, the API's
# integers); past it a number is a mistake, not a fleet (a 32-digit count was a 3.2e33 cpu limit).
INT32_MAX = 2**31 - 1
# Deeper than any settings file (a List of ConfigMaps is four levels deep).
MAX_DEPTH = 16
# The largest settings file read (a fleet's settings are kilobytes).
MAX_BYTES = 16 * 1024 * 1024
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
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


def _load(path: Path) -> list[Any]:
    """The file's documents, read as replay reads a cluster file; a usage error (exit 1)
    naming the file when it is too big, too deep or not YAML."""
    where = f"--settings {path}"
    try:
        size = path.stat().st_size
    except OSError as error:
        raise UsageError(f"{where}: cannot read it ({error.strerror or error})") from None
    if size > MAX_BYTES:
        raise UsageError(f"{where}: {size:,} bytes: not settings (at most {MAX_BYTES:,})")
    text = read_text(path, where)
    try:
        loaded = read_documents(text)[0]
    except yaml.YAMLError as error:
        raise UsageError(f"{where}: cannot read it ({error})") from None
    if _deeper_than(loaded, MAX_DEPTH):
        raise UsageError(
            f"{where}: nested more than {MAX_DEPTH} levels deep: not settings (a ConfigMap "
            "is three levels deep: the document, data, its values)"
        )
    return loaded


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests more than ``limit`` mappings or sequences (iteratively: a
    50,000-deep document must not exhaust Python's recursion; each shared value once)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    deepest: dict[int, int] = {}  # an aliased value is walked again only when met deeper
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if not isinstance(item, (dict, list)) or deepest.get(id(item), -1) >= depth:
            continue
        deepest[id(item)] = depth
        if isinstance(item, dict):
            stack += [(child, depth + 1) for child in item.values()]
        elif isinstance(item, list):
            stack += [(child, depth + 1) for child in item]
    return False


def documents(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, ConfigMap) for each ConfigMap of the file."""
    loaded = _load(path)
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
    if number > INT32_MAX:
        raise UsageError(f"{where}: data.{key}: {value!r} is past {INT32_MAX:,} (an int32)")
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


def _unknown_keys(data: dict[str, Any], where: str) -> None:
    """Warn about each key convert does not read, with the nearest one it does (a typo
    changes the pool silently otherwise); ``--strict`` makes the warning exit 3."""
    said = []
    for key in sorted(set(map(str, data)) - set(KEYS)):
        near = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
        said.append(f"{key!r} (did you mean {near[0]!r}?)" if near else repr(key))
    if said:
        warn(f"convert: {where}: data: not a settings key, not converted: {', '.join(said)}")


def _settings_notes(data: dict[str, Any], where: str, min_size: int) -> list[str]:
    """What the NodePool leaves out of the settings: a minimum size (Karpenter has none)."""
    notes: list[str] = []
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
        said = (
            "is 'false'"
            if "multi_az_provisioned_workers" in data
            else "is absent (default 'false')"
        )
        raise ConversionError(
            f"{where}: multi_az_provisioned_workers {said}: a single-zone group, but "
            "the settings name no zone: pass --zone ZONE so the pool stays in it, or set "
            "multi_az_provisioned_workers: 'true'"
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
    _unknown_keys(data, where)
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
        labels=labels(data, where),
        taints=taints(data, where),
        root_volume=_root_volume(data, where, size, volume_type),
        role=context.role or f"KarpenterNodeRole-{cluster}",
        notes=notes,
    )


def _pairs(data: dict[str, Any], key: str, where: str) -> list[str]:
    """The comma-separated entries of ``data[key]`` (a string, as a ConfigMap's data is)."""
    value = data.get(key)
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        raise ConversionError(
            f"{where}: data.{key}: a string of comma-separated entries (a ConfigMap's data "
            f"values are strings), e.g. {EXAMPLES[key]!r}"
        )
    return [part.strip() for part in value.split(",") if part.strip()]


EXAMPLES = {"labels": "team=shop,tier=web", "taints": "dedicated=shop:NoSchedule"}


def labels(data: dict[str, Any], where: str) -> dict[str, str]:
    """``labels: "k=v,k2=v2"``, as kubelet's ``--node-labels`` takes them."""
    found: dict[str, str] = {}
    for part in _pairs(data, "labels", where):
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            raise ConversionError(
                f"{where}: data.labels: {part!r} is not KEY=VALUE (e.g. {EXAMPLES['labels']!r})"
            )
        found[key.strip()] = value.strip()
    return found


def taints(data: dict[str, Any], where: str) -> list[Taint]:
    """``taints: "k=v:Effect,k2:Effect"``, as kubelet's ``--register-with-taints`` takes them."""
    found = []
    for part in _pairs(data, "taints", where):
        key_value, colon, effect = part.rpartition(":")
        key, _, value = key_value.partition("=")
        if not colon or not key.strip() or effect not in EFFECTS:
            raise ConversionError(
                f"{where}: data.taints: {part!r} is not KEY[=VALUE]:EFFECT with EFFECT one of "
                f"{', '.join(EFFECTS)} (e.g. {EXAMPLES['taints']!r})"
            )
        found.append(Taint(key.strip(), effect, value.strip() or None))
    return found


def read(path: Path, context: SettingsContext) -> list[NodeGroup]:
    groups = [node_group(where, cm, context) for where, cm in documents(path)]
    if not groups:
        raise ConversionError(f"{path}: no settings ConfigMap in the file")
    return groups

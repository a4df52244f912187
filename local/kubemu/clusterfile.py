"""Cluster files: what `kubectl get -o yaml` prints (a `kind: List`) or multi-document YAML,
or what `kubectl get -o json` prints.

Loading is on the path of every replay, and a 5,000-node cluster is 20 MB: JSON is read with
the json module (a `-o json` file is one JSON document; JSON is also YAML, but PyYAML reads it
an order of magnitude slower), and YAML through rapidyaml where it reads the file as PyYAML
would (``yamlfast``: about json.load's cost, and JSON's types, so nothing to convert), else
as documents built from libyaml's events (``yamlload``: what ``yaml.CSafeLoader`` gives, two
to four times faster), else by PyYAML itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from .gcpause import collector_paused
from .names import name_problem
from .resources import ALL_RESOURCES, Obj, resource_for_object
from .yamlfast import MAX_EXPANDED_NODES, has_alias, plain_data_documents
from .yamlload import LOADER, load_documents

# libyaml-backed loader (what load_documents reads with) and dumper where PyYAML was built
# with it (the wheels are).
_LOADER: type[yaml.SafeLoader] = LOADER
_BASE_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class ExportDumper(_BASE_DUMPER):  # type: ignore[valid-type,misc]
    """Writes a cluster file as ``kubectl get -o yaml`` does: a value that several objects
    share (the emulator's objects may share unchanged parts after a patch) is written out
    at each place, never as an anchor and aliases. A reader then needs no alias
    resolution (rapidyaml's looks each alias's anchor up through every anchor before it,
    0.3 s for the 20,000 aliases of a 5,000-node dump), and a person reads every object
    whole. Cluster files are JSON values: no cycle for an alias to be needed for."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_DUMPER: type[yaml.SafeDumper] = ExportDumper

SUPPORTED_KINDS = (
    "Node",
    "Pod",
    "PodDisruptionBudget",
    "NodePool",
    "NodeClaim",
    "EC2NodeClass",
    "Lease",
    "ConfigMap",
    "Event",
    "Namespace",
    "DaemonSet",
    "ReplicaSet",
    "Deployment",
    "StatefulSet",
)
# Namespaces first so that applying the file in order works on a real cluster too.
_DUMP_ORDER = (
    "Namespace",
    "Node",
    "EC2NodeClass",
    "NodePool",
    "NodeClaim",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Pod",
    "PodDisruptionBudget",
    "Lease",
    "ConfigMap",
    "Event",
)


def _flatten(documents: Iterable[Any], path: Path) -> list[tuple[int, Any]]:
    """Each object with the index of the YAML document it came from; Lists are flattened."""
    flat: list[tuple[int, Any]] = []
    for index, document in enumerate(documents):
        if document is None:
            continue
        if isinstance(document, dict) and document.get("kind") == "List":
            items = document.get("items") or []
            if not isinstance(items, list):
                raise ValueError(f"{path}: document {index}: List items must be a sequence")
            flat.extend((index, item) for item in items)
        else:
            flat.append((index, document))
    return flat


def _validate(obj: Any, index: int, path: Path) -> Obj:
    problem = _object_problem(obj)
    if problem is not None:
        # Where, only for a problem: formatting it for each of 25,000 objects cost a load.
        raise ValueError(f"{path}: document {index}: {problem}")
    return obj  # type: ignore[no-any-return]


def _object_problem(obj: Any) -> str | None:
    """What makes ``obj`` no object a cluster file may hold (None: nothing)."""
    if not isinstance(obj, dict):
        return f"expected a mapping, got {type(obj).__name__}"
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not (api_version and kind and name):
        fields = (("apiVersion", api_version), ("kind", kind), ("metadata.name", name))
        return f"missing {', '.join(field for field, present in fields if not present)}"
    if resource_for_object(api_version, kind) is None:
        if kind not in SUPPORTED_KINDS:
            return f"unsupported kind {kind!r} (supported: {', '.join(SUPPORTED_KINDS)})"
        return f"unsupported apiVersion {api_version!r} for kind {kind!r}"
    problem = name_problem(kind, str(name))
    if problem is not None:
        return f"{kind} metadata.name: {problem}"
    if kind == "Pod" and not (obj.get("spec") or {}).get("containers"):
        # The API server requires containers, and the client cannot parse a pod without them.
        return f"Pod {name!r} is missing spec.containers"
    return None


def _as_json(value: Any) -> Any:
    """YAML turns unquoted timestamps into datetimes; the API carries RFC 3339 strings.
    Values JSON cannot carry (``!!binary``, ``!!set``) are a ValueError."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value  # most values of a cluster file: tested first, and by type, for speed
    if kind is dict:
        return {k if type(k) is str else str(k): _as_json(v) for k, v in value.items()}
    if kind is list:
        return [_as_json(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    raise ValueError(f"a {kind.__name__} value, which JSON (and the API) cannot carry")


def json_documents(text: str) -> list[Any] | None:
    """The file as one JSON document (``kubectl get -o json``), or None if it is not JSON."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return [json.loads(text)]
    except ValueError:  # JSON-like YAML (flow style): the YAML parser reads it, or says why
        return None


def read_documents(text: str) -> tuple[list[Any], bool]:
    """The documents of a cluster file, and whether they may hold what JSON cannot (YAML's
    datetimes, keys that are not strings), to be converted: JSON as JSON; YAML through
    rapidyaml where it reads the file as PyYAML would (``yamlfast``: JSON's types only), else
    through ``load_documents``. A ``yaml.YAMLError``, with its position, if it is not YAML."""
    try:
        documents = json_documents(text)
        if documents is None:
            documents = plain_data_documents(text)
        if documents is not None:
            return documents, False
        loaded = load_documents(text)
        if has_alias(text):
            _check_expansion(loaded)
    except RecursionError:
        raise UnsafeYaml(
            "nested too deeply to read (a cluster file is a list of objects a few levels deep)"
        ) from None
    return loaded, True


class UnsafeYaml(yaml.YAMLError):
    """A document that is valid YAML but not data a cluster file holds: aliases that expand
    past :data:`MAX_EXPANDED_NODES`, or nesting deeper than Python's recursion allows."""


def _check_expansion(documents: list[Any]) -> None:
    """Count the values of ``documents`` as if every alias were a copy, without copying: an
    alias is the very object its anchor names (PyYAML shares it), so each distinct object's
    expanded size is computed once."""
    sizes: dict[int, int] = {}

    def size(value: Any) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        known = sizes.get(id(value))
        if known is not None:
            return known
        sizes[id(value)] = 1  # a recursive alias counts once here; PyYAML made it finite
        children = value.values() if isinstance(value, dict) else value
        total = 1 + sum(size(child) for child in children)
        if total > MAX_EXPANDED_NODES:
            raise UnsafeYaml(
                f"document contains excessive aliasing: more than {MAX_EXPANDED_NODES:,} "
                "values once its aliases are expanded"
            )
        sizes[id(value)] = total
        return total

    total = sum(size(document) for document in documents)
    if total > MAX_EXPANDED_NODES:
        raise UnsafeYaml(
            f"document contains excessive aliasing: more than {MAX_EXPANDED_NODES:,} values "
            "once its aliases are expanded"
        )


def load_cluster_file(path: str | Path) -> list[Obj]:
    """The objects of a cluster file; ValueError names the file, the document and the problem."""
    path = Path(path)
    text = path.read_text()
    with collector_paused():
        try:
            documents, from_yaml = read_documents(text)
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: not valid YAML: {error}") from error
        return cluster_objects(documents, path, from_yaml=from_yaml)


def _converted(obj: Any, index: int, path: Path) -> Any:
    try:
        return _as_json(obj)
    except ValueError as error:
        raise ValueError(f"{path}: document {index}: {error}") from None


def _sort_key(obj: Obj) -> tuple[int, int, str, str]:
    kind = obj["kind"]
    rank = _DUMP_ORDER.index(kind) if kind in _DUMP_ORDER else len(_DUMP_ORDER)
    api_rank = next(
        (i for i, r in enumerate(ALL_RESOURCES) if r.api_version == obj.get("apiVersion")), 0
    )
    metadata = obj["metadata"]
    return (rank, api_rank, metadata.get("namespace") or "", metadata["name"])


def as_list(objects: Iterable[Obj]) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "items": sorted(objects, key=_sort_key)}


def dump_cluster_file(objects: Iterable[Obj] | Mapping[str, Any], path: str | Path) -> None:
    """Writes a `kind: List` in a stable order: by kind, then namespace and name."""
    items = objects.get("items") or [] if isinstance(objects, Mapping) else list(objects)
    Path(path).write_text(yaml.dump(as_list(items), Dumper=_DUMPER, sort_keys=False))


def cluster_objects(
    documents: Iterable[Any], path: str | Path, *, from_yaml: bool = True
) -> list[Obj]:
    """The objects of cluster file documents already parsed (by a caller that filters or
    reports on them first); validated like ``load_cluster_file``'s. Parsed JSON
    (``from_yaml=False``) holds nothing to convert."""
    path = Path(path)
    flat = _flatten(documents, path)
    if not from_yaml:
        return [_validate(obj, index, path) for index, obj in flat]
    return [_validate(_converted(obj, index, path), index, path) for index, obj in flat]

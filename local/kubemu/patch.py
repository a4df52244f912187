"""The three patch formats the API server accepts: JSON patch, merge patch, strategic merge.

Strategic merge knows the patch strategies of the fields the emulated built-in types use
(from the `patchStrategy`/`patchMergeKey` tags of k8s.io/api); every other list is atomic,
which is also how the real server treats lists without a strategy (node `spec.taints`,
pod `spec.tolerations`).
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError, bad_request

# Field path (list indices left out) → the key that identifies items of that merged list.
_MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("metadata", "ownerReferences"): "uid",
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "ephemeralContainers"): "name",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "containers", "env"): "name",
    ("spec", "initContainers", "env"): "name",
    ("spec", "containers", "ports"): "containerPort",
    ("spec", "containers", "volumeMounts"): "mountPath",
    ("spec", "initContainers", "volumeMounts"): "mountPath",
}
# Lists of scalars merged as sets (patchStrategy "merge" without a key).
_SET_LISTS = frozenset({("metadata", "finalizers"), ("spec", "podCIDRs")})

_DIRECTIVE = "$patch"
_DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/"
_SET_ELEMENT_ORDER = "$setElementOrder/"


# --- RFC 6902 JSON patch ---------------------------------------------------------------


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, message)


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _container(doc: Any, parts: list[str], path: str) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise _unprocessable(f"jsonpatch: path {path!r} does not exist")
    return doc


def _list_index(target: list[Any], part: str, path: str, *, inserting: bool) -> int:
    if inserting and part == "-":
        return len(target)
    limit = len(target) if inserting else len(target) - 1
    if not part.isdigit() or int(part) > limit:
        raise _unprocessable(f"jsonpatch: index out of range in {path!r}")
    return int(part)


def _get(doc: Any, path: str) -> Any:
    return _container(doc, _pointer(path), path)


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _container(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(parent, last, path, inserting=True), value)
    else:
        raise _unprocessable(f"jsonpatch: cannot add to {path!r}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise _unprocessable("jsonpatch: cannot remove the whole document")
    parent = _container(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list):
        del parent[_list_index(parent, last, path, inserting=False)]
    else:
        raise _unprocessable(f"jsonpatch: path {path!r} does not exist")
    return doc


def _test(doc: Any, path: str, expected: Any) -> bool:
    """evanphx/json-patch's ``test`` (what the API server runs): a missing member of an
    existing object tests equal to null; otherwise JSON values compare as JSON (1 is not
    true, 1 equals 1.0)."""
    parts = _pointer(path)
    if parts:
        parent = _container(doc, parts[:-1], path)
        if isinstance(parent, dict) and parts[-1] not in parent:
            return expected is None
    return json_equal(_container(doc, parts, path), expected)


def apply_json_patch(doc: Any, operations: Any) -> Any:
    """Applies RFC 6902 operations to a copy of `doc`; a failed `test` is a 422 as upstream."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation {op!r}")
        name, path = op["op"], op["path"]
        if name == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif name == "remove":
            doc = _remove(doc, path)
        elif name == "replace":
            _get(doc, path)  # replace requires the target to exist
            doc = _add(_remove(doc, path), path, copy.deepcopy(op["value"]))
        elif name == "move":
            value = _get(doc, op["from"])
            doc = _add(_remove(doc, op["from"]), path, value)
        elif name == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        elif name == "test":
            if "value" not in op:
                raise bad_request(f"json patch test operation at {path!r} has no value")
            if not _test(doc, path, op["value"]):
                raise _unprocessable(f"the server rejected our request: test failed at {path!r}")
        else:
            raise bad_request(f"unexpected json patch operation {name!r}")
    return doc


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values (RFC 6902 test): unlike Python's ==, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


# --- RFC 7386 merge patch ----------------------------------------------------------------


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


# --- strategic merge patch ---------------------------------------------------------------


def apply_strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    return _merge_map(copy.deepcopy(target) if isinstance(target, dict) else {}, patch, ())


def _merge_map(target: dict[str, Any], patch: dict[str, Any], path: tuple[str, ...]) -> Any:
    directive = patch.get(_DIRECTIVE)
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != _DIRECTIVE}
    if directive is not None:
        raise bad_request(f"unknown patch directive {directive!r}")
    for key, value in patch.items():
        if key.startswith(_SET_ELEMENT_ORDER):
            continue  # ordering hints only; the emulator keeps the stored order
        if key.startswith(_DELETE_FROM_PRIMITIVE):
            field = key[len(_DELETE_FROM_PRIMITIVE) :]
            target[field] = [v for v in target.get(field) or [] if v not in value]
            continue
        child = (*path, key)
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            merged = _merge_map(current if isinstance(current, dict) else {}, value, child)
            if merged is None:
                target.pop(key, None)
            else:
                target[key] = merged
        elif isinstance(value, list):
            target[key] = _merge_list(target.get(key), value, child)
        else:
            target[key] = value
    return target


def _merge_list(current: Any, patch: list[Any], path: tuple[str, ...]) -> list[Any]:
    existing = current if isinstance(current, list) else []
    if any(isinstance(item, dict) and item.get(_DIRECTIVE) == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not isinstance(i, dict) or _DIRECTIVE not in i]
    if path in _SET_LISTS:
        return existing + [item for item in patch if item not in existing]
    merge_key = _MERGE_KEYS.get(path)
    if merge_key is None:
        return copy.deepcopy(patch)
    merged = list(existing)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise bad_request(f"map in {'.'.join(path)} is missing the merge key {merge_key!r}")
        index = next(
            (i for i, old in enumerate(merged) if old.get(merge_key) == item[merge_key]), None
        )
        if item.get(_DIRECTIVE) == "delete":
            if index is not None:
                del merged[index]
        elif index is None:
            merged.append(_merge_map({}, item, path))
        else:
            merged[index] = _merge_map(merged[index], item, path)
    return merged

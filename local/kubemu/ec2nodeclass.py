"""EC2NodeClass (karpenter.k8s.aws/v1), validated as the API server validates its CRD.

The CRD itself is shipped unchanged in ``crds/karpenter.k8s.aws_ec2nodeclasses.yaml``
(aws/karpenter-provider-aws, ``pkg/apis/crds``), so the structural part is the real one:
its ``openAPIV3Schema`` (types, enums, patterns, maxItems, required, defaults) is compiled
with fastjsonschema, every object without ``x-kubernetes-preserve-unknown-fields`` closed
to unknown fields (structural pruning, reported per ``fieldValidation``). Its CEL rules
(``x-kubernetes-validations``) are the file's own text, run by cel-python (``celrules``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from importlib import resources as package_files
from typing import Any

import fastjsonschema
import yaml

from . import celrules
from .errors import ApiError, bad_request
from .resources import EC2NODECLASSES, Obj
from .verdict import Verdict
from .yamlload import LOADER

CRD_FILE = "crds/karpenter.k8s.aws_ec2nodeclasses.yaml"
_MAX_UNKNOWN_FIELDS = 64


@cache
def crd() -> Obj:
    text = (package_files.files("kubemu") / CRD_FILE).read_text()
    # libyaml's safe loader: the CRD files are large and read by every process that starts.
    loaded: Obj = yaml.load(text, Loader=LOADER)
    return loaded


def schema() -> Obj:
    """The v1 version's openAPIV3Schema, as the CRD declares it."""
    version: Obj = next(v for v in crd()["spec"]["versions"] if v["name"] == "v1")
    found: Obj = version["schema"]["openAPIV3Schema"]
    return found


@cache
def rules() -> celrules.Node | None:
    """The CRD's CEL rules, compiled once."""
    return celrules.compile_schema(CRD_FILE, schema())


_SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "pattern",
        "maxItems",
        "minItems",
        "maxLength",
        "minLength",
        "maximum",
        "minimum",
        "maxProperties",
        "minProperties",
        "required",
        "format",
    }
)


def _json_schema(node: Obj) -> Obj:
    """The OpenAPI node as draft-07 JSON schema, closed where the CRD prunes unknown fields."""
    out: Obj = {k: v for k, v in node.items() if k in _SCHEMA_KEYWORDS}
    if "properties" in node:
        out["properties"] = {k: _json_schema(v) for k, v in node["properties"].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _json_schema(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _json_schema(node["additionalProperties"])
    elif (
        node.get("type") == "object"
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and "properties" in node
    ):
        out["additionalProperties"] = False
    return out


@cache
def _validator() -> Callable[[Any], Any]:
    root = _json_schema(schema())
    root["properties"]["metadata"] = {"type": "object"}
    root["properties"].pop("status", None)  # the status subresource's; ignored on writes
    formats: dict[str, Callable[[Any], bool]] = {
        name: (lambda value: True) for name in ("int32", "int64", "date-time")
    }
    compiled: Callable[[Any], Any] = fastjsonschema.compile(
        {"$schema": "http://json-schema.org/draft-07/schema#", **root}, formats=formats
    )
    return compiled


def _fail(name: str, path: str, why: str) -> ApiError:
    details = {
        "name": name,
        "group": EC2NODECLASSES.group,
        "kind": EC2NODECLASSES.kind,
        "causes": [{"field": path, "message": why}],
    }
    return ApiError(
        422, f'EC2NodeClass.karpenter.k8s.aws "{name}" is invalid: {path}: {why}', details=details
    )


def _path(parts: list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _parts(path: list[Any]) -> list[Any]:
    return [int(p) if str(p).isdigit() else p for p in path]


def _structural_error(name: str, obj: Obj, error: Any) -> ApiError:
    parts = _parts(list(error.path or [])[1:])
    where = _path(parts) or "<root>"
    value: Any = obj
    for part in parts:
        value = value[part]
    rule, definition = error.rule, error.definition or {}
    if rule == "required":
        missing = next(k for k in definition["required"] if k not in value)
        return _fail(name, f"{where}.{missing}", "Required value")
    if rule == "type":
        return _fail(
            name,
            where,
            f"Invalid value: {json.dumps(value)}: {where} in body must be of type"
            f" {definition['type']}",
        )
    if rule == "enum":
        supported = ", ".join(json.dumps(a) for a in definition["enum"])
        return _fail(
            name, where, f"Unsupported value: {json.dumps(value)}: supported values: {supported}"
        )
    if rule == "pattern":
        return _fail(
            name,
            where,
            f"Invalid value: {json.dumps(value)}: {where} in body should match"
            f" '{definition['pattern']}'",
        )
    if rule == "maxItems":
        return _fail(
            name, where, f"Too many: {len(value)}: must have at most {definition['maxItems']} items"
        )
    return _fail(name, where, f"Invalid value: {json.dumps(value)}: {error.message}")


def _defaults(node: Obj, value: Any) -> None:
    """The CRD's ``default`` values, set where the field's parent exists (as on a write)."""
    if isinstance(value, dict):
        for key, child in (node.get("properties") or {}).items():
            if key not in value and "default" in child:
                value[key] = copy.deepcopy(child["default"])
            if key in value:
                _defaults(child, value[key])
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            _defaults(node["items"], item)


def check(obj: Obj, mode: str) -> Verdict:
    """Defaults, validates and prunes ``obj`` in place, as on a create or update."""
    name = (obj.get("metadata") or {}).get("name", "")
    if "spec" not in obj:
        raise _fail(name, "spec", "Required value")
    status = obj.pop("status", None)
    _defaults(schema(), obj)
    unknown: list[str] = []
    validate = _validator()
    for _ in range(_MAX_UNKNOWN_FIELDS):
        try:
            validate(obj)
            break
        except fastjsonschema.JsonSchemaValueException as error:
            if error.rule != "additionalProperties":
                raise _structural_error(name, obj, error) from None
            parts = _parts(list(error.path or [])[1:])
            holder: Any = obj
            for part in parts:
                holder = holder[part]
            known = set((error.definition or {}).get("properties") or {})
            for key in [k for k in holder if k not in known]:
                unknown.append(_path([*parts, key]))
                holder.pop(key)
    else:
        raise bad_request(f"EC2NodeClass: more than {_MAX_UNKNOWN_FIELDS} unknown fields")
    if unknown and mode == "Strict":
        raise bad_request(
            "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown)
        )
    violation = celrules.first_violation(rules(), obj)
    if violation is not None:
        raise _fail(name, violation.path, violation.detail)
    if status is not None:
        obj["status"] = status
    return Verdict(obj, [f'unknown field "{u}"' for u in unknown] if mode == "Warn" else [])


def check_update(old: Obj, new: Obj) -> None:
    """The CRD's transition rules (none in this version of it) on an update; ``new`` has
    passed ``check``."""
    violation = celrules.first_transition_violation(rules(), new, old)
    if violation is not None:
        raise _fail((new.get("metadata") or {}).get("name", ""), violation.path, violation.detail)


def openapi_schema() -> Obj:
    """The CRD's schema, as the API server publishes it for a custom resource."""
    published: Obj = copy.deepcopy(schema())
    published["x-kubernetes-group-version-kind"] = [
        {"group": EC2NODECLASSES.group, "version": "v1", "kind": "EC2NodeClass"}
    ]
    return published

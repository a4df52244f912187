"""What the API server checks about an object before it stores it.

Built-in kinds are checked against the Kubernetes 1.31 JSON schemas that the maintained
``kubernetes-validate`` package ships (its "strict" variant, which marks unknown fields),
compiled once per kind with ``jsonschema``. The package's own ``validate()`` re-reads the
1.2 MB definitions on every call, so only its schema files are used. What the schemas say
maps to the server's answers as decoding and validation do upstream:

- a field of the wrong type or an unparsable time (a Lease ``renewTime: "yesterday"``):
  400 BadRequest, the object "cannot be handled" (the JSON decoder fails);
- a field the schema lists as "required" is not checked: there it only means the Go field
  has no ``omitempty``, and decoding fills in the zero value; what must really be set is
  checked by the validation functions below (422 Invalid naming the field);
- unknown fields (``fieldValidation``, ``staging/.../endpoints/handlers/fieldmanager``):
  Strict → 400 ``strict decoding error: unknown field "spec.foo"``; Warn (the default) →
  a ``Warning`` header per field; Ignore → nothing; in every mode they are dropped, as the
  Go types drop them.

Value rules the schemas cannot express come from the types' validation functions
(``pkg/apis/core/validation``) for the fields Lifeboat writes: taint effects, taint keys and
duplicate taints (validateNodeTaints); Karpenter's kinds are checked by ``karpenter``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources as package_files
from typing import Any

import jsonschema
from referencing import Registry, Resource

from . import karpenter
from .clock import parse_rfc3339
from .errors import ApiError, bad_request
from .resources import (
    DAEMONSETS,
    DEPLOYMENTS,
    EVENTS,
    EVENTS_V1,
    LEASES,
    NAMESPACES,
    NODECLAIMS,
    NODEPOOLS,
    NODES,
    PDBS,
    PODS,
    REPLICASETS,
    STATEFULSETS,
    Obj,
    ResourceType,
)

SCHEMA_DIR = "kubernetes-json-schema/v1.31.0-local-strict"
DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
DEFINITIONS: dict[ResourceType, str] = {
    NAMESPACES: "io.k8s.api.core.v1.Namespace",
    NODES: "io.k8s.api.core.v1.Node",
    PODS: "io.k8s.api.core.v1.Pod",
    EVENTS: "io.k8s.api.core.v1.Event",
    PDBS: "io.k8s.api.policy.v1.PodDisruptionBudget",
    LEASES: "io.k8s.api.coordination.v1.Lease",
    EVENTS_V1: "io.k8s.api.events.v1.Event",
    DAEMONSETS: "io.k8s.api.apps.v1.DaemonSet",
    REPLICASETS: "io.k8s.api.apps.v1.ReplicaSet",
    DEPLOYMENTS: "io.k8s.api.apps.v1.Deployment",
    STATEFULSETS: "io.k8s.api.apps.v1.StatefulSet",
}
FIELD_VALIDATION = ("Strict", "Warn", "Ignore")
_DECODING = frozenset({"type", "format", "oneOf", "anyOf", "enum", "const"})
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


@dataclass
class Verdict:
    """The object as it will be stored, and the warnings to send with the answer."""

    obj: Obj
    warnings: list[str] = field(default_factory=list)


def _rfc3339(value: object) -> bool:
    return not isinstance(value, str) or parse_rfc3339(value) is not None


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("date-time")(_rfc3339)


@cache
def _definitions() -> Obj:
    files = package_files.files("kubernetes_validate") / SCHEMA_DIR / "_definitions.json"
    loaded: Obj = json.loads(files.read_text())
    return loaded


@cache
def _validator(resource: ResourceType) -> jsonschema.protocols.Validator:
    registry: Registry[Any] = Registry().with_resource(
        DEFINITIONS_ID, Resource.from_contents(_definitions())
    )
    schema = {"$ref": f"{DEFINITIONS_ID}#/$defs/{DEFINITIONS[resource]}"}
    return jsonschema.Draft202012Validator(schema, registry=registry, format_checker=_FORMATS)


def openapi_schema(resource: ResourceType) -> Obj:
    """The kind's schema for the OpenAPI document."""
    if resource in DEFINITIONS:
        schema: Obj = _definitions()["$defs"][DEFINITIONS[resource]]
        text = json.dumps(schema).replace('"#/$defs/', '"#/components/schemas/')
        converted: Obj = json.loads(text)
        return converted
    return karpenter.openapi_schema(resource)


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _unknown_fields(error: jsonschema.ValidationError) -> Iterator[tuple[list[Any], str]]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = set(schema.get("properties") or {})
    if isinstance(error.instance, dict):
        for key in error.instance:
            if key not in known:
                yield list(error.absolute_path), key


def check(resource: ResourceType, obj: Obj, mode: str) -> Verdict:
    """Validates ``obj`` (about to be stored) for ``resource``; ``mode`` is fieldValidation."""
    if mode not in FIELD_VALIDATION:
        raise bad_request(
            f'fieldValidation must be one of "Ignore", "Warn" or "Strict", got {mode!r}'
        )
    if resource in (NODECLAIMS, NODEPOOLS):
        return karpenter.check(resource, obj, mode)
    if resource not in DEFINITIONS:
        return Verdict(obj)
    unknown: list[tuple[list[Any], str]] = []
    for error in _validator(resource).iter_errors(obj):
        where = _path(error.absolute_path)
        if error.validator == "additionalProperties":
            unknown.extend(_unknown_fields(error))
        elif error.validator in _DECODING:
            raise bad_request(
                f'{resource.kind} in version "{resource.version}" cannot be handled as a'
                f" {resource.kind}: {where or 'the object'}: {error.message}"
            )
    _check_values(resource, obj)
    return _unknown_verdict(obj, unknown, mode)


def _unknown_verdict(obj: Obj, unknown: list[tuple[list[Any], str]], mode: str) -> Verdict:
    names = [_path([*parent, key]) for parent, key in unknown]
    if unknown and mode == "Strict":
        listed = ", ".join(f'unknown field "{n}"' for n in names)
        raise bad_request(f"strict decoding error: {listed}")
    for parent, key in unknown:
        holder: Any = obj
        for part in parent:
            holder = holder[part]
        holder.pop(key, None)
    warnings = [f'unknown field "{n}"' for n in names] if mode == "Warn" else []
    return Verdict(obj, warnings)


def invalid_field(resource: ResourceType, name: str, field_path: str, why: str) -> ApiError:
    qualified = f"{resource.kind}.{resource.group}" if resource.group else resource.kind
    details = {
        "name": name,
        "kind": resource.kind,
        "causes": [{"field": field_path, "message": why}],
    }
    if resource.group:
        details["group"] = resource.group
    return ApiError(422, f'{qualified} "{name}" is invalid: {field_path}: {why}', details=details)


def _check_values(resource: ResourceType, obj: Obj) -> None:
    if resource is NODES:
        _check_taints(resource, obj)


def _check_taints(resource: ResourceType, node: Obj) -> None:
    """validateNodeTaints: key a qualified name, a known effect, no duplicate key+effect."""
    name = node["metadata"].get("name", "")
    seen: set[tuple[str, str]] = set()
    for index, taint in enumerate((node.get("spec") or {}).get("taints") or []):
        where = f"spec.taints[{index}]"
        key, effect = taint.get("key", ""), taint.get("effect", "")
        if not _QUALIFIED_NAME.match(key or ""):
            raise invalid_field(
                resource,
                name,
                f"{where}.key",
                f"Invalid value: {json.dumps(key)}: must be a qualified name",
            )
        if effect not in TAINT_EFFECTS:
            supported = ", ".join(f'"{e}"' for e in TAINT_EFFECTS)
            raise invalid_field(
                resource,
                name,
                f"{where}.effect",
                f"Unsupported value: {json.dumps(effect)}: supported values: {supported}",
            )
        if (key, effect) in seen:
            raise invalid_field(
                resource,
                name,
                f"{where}",
                "Duplicate value: taints must be unique by key and effect pair",
            )
        seen.add((key, effect))

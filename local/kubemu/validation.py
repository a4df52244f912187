"""What the API server checks about an object before it stores it.

Built-in kinds are checked against the Kubernetes 1.31 JSON schemas that the maintained
``kubernetes-validate`` package ships (its "strict" variant, which marks unknown fields),
compiled once per kind into Python code with ``fastjsonschema`` (about 0.1 ms for a Node,
against 5 ms with ``jsonschema``'s interpreter; ``kubernetes-validate``'s own
``validate()`` even re-reads its 1.2 MB of definitions on every call, so only its schema
files are used). What the schemas say maps to the server's answers as decoding and
validation do upstream:

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
from collections.abc import Callable
from functools import cache
from importlib import resources as package_files
from typing import Any

import fastjsonschema

from . import ec2nodeclass, karpenter
from . import resources as kinds
from .clock import parse_rfc3339
from .errors import ApiError, bad_request
from .resources import Obj, ResourceType
from .verdict import Verdict as Verdict  # importable from here, as it always was

SCHEMA_DIR = "kubernetes-json-schema/v1.31.0-local-strict"
DEFINITIONS: dict[ResourceType, str] = {
    kinds.NAMESPACES: "io.k8s.api.core.v1.Namespace",
    kinds.NODES: "io.k8s.api.core.v1.Node",
    kinds.PODS: "io.k8s.api.core.v1.Pod",
    kinds.EVENTS: "io.k8s.api.core.v1.Event",
    kinds.PDBS: "io.k8s.api.policy.v1.PodDisruptionBudget",
    kinds.LEASES: "io.k8s.api.coordination.v1.Lease",
    kinds.EVENTS_V1: "io.k8s.api.events.v1.Event",
    kinds.DAEMONSETS: "io.k8s.api.apps.v1.DaemonSet",
    kinds.REPLICASETS: "io.k8s.api.apps.v1.ReplicaSet",
    kinds.DEPLOYMENTS: "io.k8s.api.apps.v1.Deployment",
    kinds.STATEFULSETS: "io.k8s.api.apps.v1.StatefulSet",
    kinds.ROLES: "io.k8s.api.rbac.v1.Role",
    kinds.ROLEBINDINGS: "io.k8s.api.rbac.v1.RoleBinding",
    kinds.CLUSTERROLES: "io.k8s.api.rbac.v1.ClusterRole",
    kinds.CLUSTERROLEBINDINGS: "io.k8s.api.rbac.v1.ClusterRoleBinding",
    kinds.CONFIGMAPS: "io.k8s.api.core.v1.ConfigMap",
    kinds.REPLICATIONCONTROLLERS: "io.k8s.api.core.v1.ReplicationController",
}
FIELD_VALIDATION = ("Strict", "Warn", "Ignore")
# Each unknown field found costs one more pass of the validator; past this, refuse.
_MAX_UNKNOWN_FIELDS = 64
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def _rfc3339(value: object) -> bool:
    return not isinstance(value, str) or parse_rfc3339(value) is not None


@cache
def _definitions() -> Obj:
    files = package_files.files("kubernetes_validate") / SCHEMA_DIR / "_definitions.json"
    loaded: Obj = json.loads(files.read_text())
    return loaded


def _without_required(node: Any) -> Any:
    """The schema less its "required" lists (see the module's docstring)."""
    if isinstance(node, dict):
        return {
            key: _without_required(value)
            for key, value in node.items()
            if not (key == "required" and isinstance(value, list))
        }
    if isinstance(node, list):
        return [_without_required(value) for value in node]
    return node


def _formats(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("format"), str):
            found.add(node["format"])
        for value in node.values():
            _formats(value, found)
    elif isinstance(node, list):
        for value in node:
            _formats(value, found)
    return found


@cache
def _validator(resource: ResourceType) -> Callable[[Any], Any]:
    """The kind's compiled validator (built on first use: about 0.2 s a kind)."""
    definitions = _without_required(_definitions()["$defs"])
    # Only date-time is checked; int32, int-or-string and the like are the types' business.
    formats: dict[str, Callable[[Any], bool]] = {
        name: (lambda value: True) for name in _formats(definitions, set())
    }
    formats["date-time"] = _rfc3339
    schema = json.loads(
        json.dumps(
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": definitions,
                "$ref": f"#/definitions/{DEFINITIONS[resource]}",
            }
        ).replace('"#/$defs/', '"#/definitions/')
    )
    compiled: Callable[[Any], Any] = fastjsonschema.compile(schema, formats=formats)
    return compiled


def compile_validators() -> None:
    """Build every kind's validator now: a server under load should not pay 0.2 s a kind
    on its first request of that kind (the benchmark's API servers start warm)."""
    for resource in DEFINITIONS:
        _validator(resource)
    karpenter.rules(kinds.NODECLAIMS)  # and the CRDs' CEL rules
    karpenter.rules(kinds.NODEPOOLS)
    ec2nodeclass.rules()


def openapi_schema(resource: ResourceType) -> Obj:
    """The kind's schema for the OpenAPI document."""
    if resource in DEFINITIONS:
        schema: Obj = _definitions()["$defs"][DEFINITIONS[resource]]
        text = json.dumps(schema).replace('"#/$defs/', '"#/components/schemas/')
        converted: Obj = json.loads(text)
        return converted
    if resource is kinds.EC2NODECLASSES:
        return ec2nodeclass.openapi_schema()
    return karpenter.openapi_schema(resource)


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def check(resource: ResourceType, obj: Obj, mode: str) -> Verdict:
    """Validates ``obj`` (about to be stored) for ``resource``; ``mode`` is fieldValidation."""
    if mode not in FIELD_VALIDATION:
        raise bad_request(
            f'fieldValidation must be one of "Ignore", "Warn" or "Strict", got {mode!r}'
        )
    if resource in (kinds.NODECLAIMS, kinds.NODEPOOLS):
        return karpenter.check(resource, obj, mode)
    if resource is kinds.EC2NODECLASSES:
        return ec2nodeclass.check(obj, mode)
    if resource not in DEFINITIONS:
        _check_values(resource, obj)
        return Verdict(obj)
    unknown: list[tuple[list[Any], str]] = []
    validate = _validator(resource)
    for _ in range(_MAX_UNKNOWN_FIELDS):
        try:
            validate(obj)
            break
        except fastjsonschema.JsonSchemaValueException as error:
            parent = _parts(list(error.path or [])[1:])  # the first names the document
            if error.rule != "additionalProperties":
                raise bad_request(
                    f'{resource.kind} in version "{resource.version}" cannot be handled as a'
                    f" {resource.kind}: {_path(parent) or 'the object'}: {error.message}"
                ) from None
            holder = _at(obj, parent)
            known = set((error.definition or {}).get("properties") or {})
            for key in [k for k in holder if k not in known]:
                unknown.append((parent, key))
                holder.pop(key)  # dropped here; the check below goes on past them
    else:
        raise bad_request(f"{resource.kind}: more than {_MAX_UNKNOWN_FIELDS} unknown fields")
    _check_values(resource, obj)
    return _unknown_verdict(obj, unknown, mode)


def check_update(resource: ResourceType, old: Obj, new: Obj) -> None:
    """The CRD's transition rules (CEL naming ``oldSelf``) on an update of ``old`` to ``new``
    (which ``check`` has passed); the built-in kinds' update rules are the operations'."""
    if resource in (kinds.NODECLAIMS, kinds.NODEPOOLS):
        karpenter.check_update(resource, old, new)
    elif resource is kinds.EC2NODECLASSES:
        ec2nodeclass.check_update(old, new)


def _parts(path: list[Any]) -> list[Any]:
    """fastjsonschema's path (list indices as digit strings) as keys and indices."""
    return [int(part) if str(part).isdigit() else part for part in path]


def _at(obj: Any, path: list[Any]) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def _unknown_verdict(obj: Obj, unknown: list[tuple[list[Any], str]], mode: str) -> Verdict:
    """Unknown fields were dropped from ``obj``; Strict refuses the write instead."""
    names = [_path([*parent, key]) for parent, key in unknown]
    if unknown and mode == "Strict":
        listed = ", ".join(f'unknown field "{n}"' for n in names)
        raise bad_request(f"strict decoding error: {listed}")
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
    if resource is kinds.NODES:
        _check_taints(resource, obj)
    if resource is kinds.CONFIGMAPS:
        _check_configmap_size(resource, obj)


# core.MaxSecretSize: the most a ConfigMap's (or Secret's) data may hold, 1 MiB.
MAX_CONFIGMAP_BYTES = 1024 * 1024


def _check_configmap_size(resource: ResourceType, configmap: Obj) -> None:
    """ValidateConfigMap (pkg/apis/core/validation): the bytes of every ``data`` value and
    every decoded ``binaryData`` value, summed, at most core.MaxSecretSize; too many is a
    field.TooLong on the whole object (the path ``[]``)."""
    total = sum(len(str(v).encode()) for v in (configmap.get("data") or {}).values())
    for value in (configmap.get("binaryData") or {}).values():
        total += len(str(value)) * 3 // 4 - str(value).count("=")
    if total > MAX_CONFIGMAP_BYTES:
        raise invalid_field(
            resource,
            configmap["metadata"].get("name", ""),
            "[]",
            f"Too long: must have at most {MAX_CONFIGMAP_BYTES} bytes",
        )


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

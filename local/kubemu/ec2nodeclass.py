"""EC2NodeClass (karpenter.k8s.aws/v1), validated as the API server validates its CRD.

The CRD itself is shipped unchanged in ``crds/karpenter.k8s.aws_ec2nodeclasses.yaml``
(aws/karpenter-provider-aws, ``pkg/apis/crds``), so the structural part is the real one:
its ``openAPIV3Schema`` (types, enums, patterns, maxItems, required, defaults) is compiled
with fastjsonschema, every object without ``x-kubernetes-preserve-unknown-fields`` closed
to unknown fields (structural pruning, reported per ``fieldValidation``). Its CEL rules
(``x-kubernetes-validations``) are evaluated by the Python functions of ``RULES``, keyed by
the exact rule text: a CRD carrying a rule with no counterpart here fails to load
(``rules_without_implementation``), so a newer CRD cannot pass silently unchecked.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources as package_files
from typing import Any

import fastjsonschema
import yaml

from .errors import ApiError, bad_request
from .resources import EC2NODECLASSES, Obj
from .verdict import Verdict

CRD_FILE = "crds/karpenter.k8s.aws_ec2nodeclasses.yaml"
_MAX_UNKNOWN_FIELDS = 64
_ALIAS_FAMILIES = ("al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025")
_WINDOWS = ("windows2019", "windows2022", "windows2025")
_RESTRICTED_TAGS = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)


def _has(value: Any, key: str) -> bool:
    return isinstance(value, dict) and key in value


def _alias_family(term: Any) -> str | None:
    """``x.alias.find('^[^@]+')`` for a term with an alias."""
    if not _has(term, "alias"):
        return None
    found = re.match(r"[^@]+", term["alias"])
    return found.group(0) if found else ""


def _family_rule(alias: str, family: str) -> tuple[str, Callable[[Any], bool]]:
    text = (
        f"!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
        f"x.alias.find('^[^@]+') == '{alias}') ? (self.amiFamily == 'Custom' || "
        f"self.amiFamily == '{family}') : true)"
    )

    def rule(spec: Any) -> bool:
        if not _has(spec, "amiFamily"):
            return True
        if any(_alias_family(t) == alias for t in spec.get("amiSelectorTerms") or []):
            return spec["amiFamily"] in ("Custom", family)
        return True

    return text, rule


def _all_have(*keys: str) -> Callable[[Any], bool]:
    return lambda terms: all(any(_has(t, k) for k in keys) for t in terms)


def _tags_non_empty(tags: Any) -> bool:
    return all(k != "" and tags[k] != "" for k in tags)


def _primary_interface(interfaces: Any) -> bool:
    return len(interfaces) == 0 or any(
        x.get("deviceIndex") == 0
        and x.get("networkCardIndex") == 0
        and x.get("interfaceType") == "interface"
        for x in interfaces
    )


def _unique_interfaces(interfaces: Any) -> bool:
    def same_slot(x: Any, y: Any) -> bool:
        return bool(
            x.get("networkCardIndex") == y.get("networkCardIndex")
            and x.get("deviceIndex") == y.get("deviceIndex")
        )

    def efa_on_card(x: Any, y: Any) -> bool:
        return bool(
            x.get("networkCardIndex") == y.get("networkCardIndex")
            and y.get("interfaceType") == "efa-only"
        )

    return all(
        len([y for y in interfaces if same_slot(x, y)]) == 1
        and (
            x.get("interfaceType") != "efa-only"
            or len([y for y in interfaces if efa_on_card(x, y)]) == 1
        )
        for x in interfaces
    )


# The CRD's CEL rules, by their exact text, as Python predicates over the value they sit on.
RULES: dict[str, Callable[[Any], bool]] = {
    "(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && "
    "has(self.instanceProfile))": lambda s: _has(s, "role") != _has(s, "instanceProfile"),
    **dict(
        _family_rule(alias, family)
        for alias, family in (
            ("al2", "AL2"),
            ("al2023", "AL2023"),
            ("bottlerocket", "Bottlerocket"),
            ("windows2019", "Windows2019"),
            ("windows2022", "Windows2022"),
            ("windows2025", "Windows2025"),
        )
    ),
    "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)": lambda s: (
        any(_has(t, "alias") for t in s.get("amiSelectorTerms") or []) or _has(s, "amiFamily")
    ),
    "self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || "
    "has(x.ssmParameter))": _all_have("tags", "id", "name", "alias", "ssmParameter"),
    "!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || "
    "has(x.owner)))": lambda terms: (
        not any(
            _has(x, "id") and any(_has(x, k) for k in ("alias", "tags", "name", "owner"))
            for x in terms
        )
    ),
    "!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || "
    "has(x.owner)))": lambda terms: (
        not any(
            _has(x, "alias") and any(_has(x, k) for k in ("id", "tags", "name", "owner"))
            for x in terms
        )
    ),
    "!(self.exists(x, has(x.alias)) && self.size() != 1)": lambda terms: (
        not (any(_has(x, "alias") for x in terms) and len(terms) != 1)
    ),
    "self.matches('^[a-zA-Z0-9]+@.+$')": lambda a: re.search(r"^[a-zA-Z0-9]+@.+$", a) is not None,
    "self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022',"
    "'windows2025']": lambda a: a.split("@")[0] in _ALIAS_FAMILIES,
    "self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? "
    "self.split('@')[1] == 'latest' : true": lambda a: (
        a.split("@")[0] not in _WINDOWS or (len(a.split("@")) > 1 and a.split("@")[1] == "latest")
    ),
    "self.all(k, k != '' && self[k] != '')": _tags_non_empty,
    "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1": lambda bdms: (
        len([x for x in bdms if x.get("rootVolume") is True]) <= 1
    ),
    "has(self.snapshotID) || has(self.volumeSize)": lambda ebs: (
        _has(ebs, "snapshotID") or _has(ebs, "volumeSize")
    ),
    "!has(self.volumeInitializationRate) || (has(self.snapshotID) && "
    "self.snapshotID != '')": lambda ebs: (
        not _has(ebs, "volumeInitializationRate") or ebs.get("snapshotID", "") != ""
    ),
    "self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))": _all_have(
        "tags", "id", "instanceMatchCriteria"
    ),
    "!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || "
    "has(x.instanceMatchCriteria)))": lambda terms: (
        not all(
            _has(x, "id") and any(_has(x, k) for k in ("tags", "ownerID", "instanceMatchCriteria"))
            for x in terms
        )
    ),
    "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || "
    "has(self.udpTimeout)": lambda c: any(
        _has(c, k) for k in ("tcpEstablishedTimeout", "udpStreamTimeout", "udpTimeout")
    ),
    "self != ''": lambda s: s != "",
    "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && "
    "x.interfaceType == 'interface')": _primary_interface,
    "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && x.deviceIndex == "
    "y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || self.filter(y, "
    "x.networkCardIndex == y.networkCardIndex && y.interfaceType == 'efa-only').size() == 1))": (
        _unique_interfaces
    ),
    "has(self.name) || has(self.id)": lambda p: _has(p, "name") or _has(p, "id"),
    "!(has(self.name) && has(self.id))": lambda p: not (_has(p, "name") and _has(p, "id")),
    "self.size() != 0": lambda terms: len(terms) != 0,
    "self.all(x, has(x.tags) || has(x.id) || has(x.name))": _all_have("tags", "id", "name"),
    # Note `all`, as the CRD writes it: only a list whose every term mixes is refused.
    "!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))": lambda terms: (
        not all(_has(x, "id") and (_has(x, "tags") or _has(x, "name")) for x in terms)
    ),
    "!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))": lambda terms: (
        not all(_has(x, "name") and (_has(x, "tags") or _has(x, "id")) for x in terms)
    ),
    "self.all(x, has(x.tags) || has(x.id))": _all_have("tags", "id"),
    "!self.all(x, has(x.id) && has(x.tags))": lambda terms: (
        not all(_has(x, "id") and _has(x, "tags") for x in terms)
    ),
    "self.all(k, k != '')": lambda tags: all(k != "" for k in tags),
    "self.all(k, k !='eks:eks-cluster-name')": lambda tags: _RESTRICTED_TAGS[0] not in tags,
    "self.all(k, !k.startsWith('kubernetes.io/cluster') )": lambda tags: (
        not any(k.startswith("kubernetes.io/cluster") for k in tags)
    ),
    "self.all(k, k != 'karpenter.sh/nodepool')": lambda tags: _RESTRICTED_TAGS[1] not in tags,
    "self.all(k, k !='karpenter.sh/nodeclaim')": lambda tags: _RESTRICTED_TAGS[2] not in tags,
    "self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')": lambda tags: (
        _RESTRICTED_TAGS[3] not in tags
    ),
}


@cache
def crd() -> Obj:
    text = (package_files.files("kubemu") / CRD_FILE).read_text()
    loaded: Obj = yaml.safe_load(text)
    return loaded


def schema() -> Obj:
    """The v1 version's openAPIV3Schema, as the CRD declares it."""
    version: Obj = next(v for v in crd()["spec"]["versions"] if v["name"] == "v1")
    found: Obj = version["schema"]["openAPIV3Schema"]
    return found


def _rules_at(node: Obj, path: str) -> Iterator[tuple[str, Obj]]:
    """(path, schema node) of every node with CEL rules; ``[]`` marks list items, ``{}``
    map values."""
    if node.get("x-kubernetes-validations"):
        yield path, node
    for key, child in (node.get("properties") or {}).items():
        yield from _rules_at(child, f"{path}.{key}" if path else key)
    if isinstance(node.get("items"), dict):
        yield from _rules_at(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _rules_at(node["additionalProperties"], f"{path}{{}}")


def rules_without_implementation() -> list[str]:
    return [
        rule["rule"]
        for _, node in _rules_at(schema(), "")
        for rule in node["x-kubernetes-validations"]
        if rule["rule"] not in RULES
    ]


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


def _cel(node: Obj, value: Any, path: str, name: str) -> None:
    """Each CEL rule on the nodes present in ``value``, children before their parents (as a
    broken child's own rule is the more precise answer)."""
    if isinstance(value, dict):
        for key, child in (node.get("properties") or {}).items():
            if key in value:
                _cel(child, value[key], f"{path}.{key}" if path else key, name)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                _cel(extra, item, f"{path}[{key}]", name)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            _cel(node["items"], item, f"{path}[{index}]", name)
    for rule in node.get("x-kubernetes-validations") or []:
        if not RULES[rule["rule"]](value):
            kind = node.get("type", "object")
            raise _fail(name, path, f'Invalid value: "{kind}": {rule["message"]}')


def check(obj: Obj, mode: str) -> Verdict:
    """Defaults, validates and prunes ``obj`` in place, as on a create or update."""
    name = (obj.get("metadata") or {}).get("name", "")
    missing = rules_without_implementation()
    if missing:  # a CRD newer than this module: refuse rather than skip its rules
        raise RuntimeError(f"{CRD_FILE}: CEL rules without an implementation: {missing}")
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
    _cel(schema(), obj, "", name)
    if status is not None:
        obj["status"] = status
    return Verdict(obj, [f'unknown field "{u}"' for u in unknown] if mode == "Warn" else [])


def openapi_schema() -> Obj:
    """The CRD's schema, as the API server publishes it for a custom resource."""
    published: Obj = copy.deepcopy(schema())
    published["x-kubernetes-group-version-kind"] = [
        {"group": EC2NODECLASSES.group, "version": "v1", "kind": "EC2NodeClass"}
    ]
    return published

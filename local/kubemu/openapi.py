"""OpenAPI v3 (``/openapi/v3`` and one document per group version).

What kubectl reads from it: whether the server validates fields itself (the PATCH operation
of a kind lists the ``fieldValidation`` query parameter: then ``kubectl apply``/``create``
leave validation to the server, with ``fieldValidation=Strict``, as against any 1.27+
server), and which patch types a kind accepts. Strategic merge is not listed, so
``kubectl apply`` computes its patches from the Go types it was built with, exactly as it
does when a server's OpenAPI lacks a kind. Each kind's schema is referenced from
``components`` (built-in kinds from the ``kubernetes-validate`` definitions, Karpenter's
from kubemu's own, see ``validation``).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache

from .resources import ALL_RESOURCES, Obj, ResourceType

_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json")
_QUERY_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation", "pretty")


def _root(resource: ResourceType) -> str:
    return f"apis/{resource.group}/{resource.version}" if resource.group else "api/v1"


def _gvk(resource: ResourceType) -> Obj:
    return {"group": resource.group, "version": resource.version, "kind": resource.kind}


def _operation(resource: ResourceType, action: str, body_types: tuple[str, ...] = ()) -> Obj:
    schema = {"$ref": f"#/components/schemas/{schema_name(resource)}"}
    operation: Obj = {
        "operationId": f"{action}{resource.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource),
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
            for name in _QUERY_PARAMETERS
        ],
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": schema}}}
        },
    }
    if body_types:
        operation["requestBody"] = {
            "content": {media: {"schema": {"type": "object"}} for media in body_types},
            "required": True,
        }
    return operation


def schema_name(resource: ResourceType) -> str:
    group = resource.group or "core"
    return f"kubemu.{group}.{resource.version}.{resource.kind}"


def _paths(resource: ResourceType) -> dict[str, Obj]:
    root = f"/{_root(resource)}"
    scope = f"{root}/namespaces/{{namespace}}" if resource.namespaced else root
    collection = f"{scope}/{resource.plural}"
    return {
        collection: {
            "get": _operation(resource, "list"),
            "post": _operation(resource, "post", ("application/json",)),
        },
        f"{collection}/{{name}}": {
            "get": _operation(resource, "get"),
            "put": _operation(resource, "put", ("application/json",)),
            "patch": _operation(resource, "patch", _PATCH_TYPES),
            "delete": _operation(resource, "delete"),
        },
    }


@cache
def documents() -> dict[str, Obj]:
    """Group-version path ("api/v1", "apis/apps/v1") → its OpenAPI document."""
    from .validation import openapi_schema  # the schemas are the validation's

    docs: dict[str, Obj] = {}
    for resource in ALL_RESOURCES:
        doc = docs.setdefault(
            _root(resource),
            {
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes (kubemu)", "version": "v1.31.0"},
                "paths": {},
                "components": {"schemas": {}},
            },
        )
        doc["paths"].update(_paths(resource))
        doc["components"]["schemas"][schema_name(resource)] = openapi_schema(resource)
    return docs


@cache
def _hashes() -> dict[str, str]:
    return {
        path: hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
        for path, doc in documents().items()
    }


def index() -> Obj:
    return {
        "paths": {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
            for path, digest in _hashes().items()
        }
    }


def document(path: str) -> Obj | None:
    return documents().get(path.strip("/"))


# ---------------------------------------------------------------------------------------------
# OpenAPI v2 (``/openapi/v2``)
#
# kubectl reads it in two cases only: a kind whose group version the v3 index lacks (all the
# kinds served are in it), and client-side validation of what the v3 verifier cannot vouch
# for, above all a ``kind: List`` (kubectl's ``paramVerifyingSchema``: a List never has
# server-side field validation, so its items are validated against the v2 models). client-go
# asks for the gnostic protobuf form (``OpenAPISchema``: Accept
# ``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``, then ``proto.Unmarshal``).
# The document served has no definitions: kube-openapi's validator skips a kind it has no
# model for (``schemaValidation.validateResource``), and every item is then validated by this
# server when it is created, with the ``fieldValidation=Strict`` kubectl sends, as for any
# other object. Relied on: a real server's v2 document would also reject a List item's
# unknown field before sending it; here the same error comes from the server instead.

# What client-go's Accept names (with "@"), and the media type kube-openapi's handler answers
# with (``subTypeProtobuf``: "@" makes Go's mime.ParseMediaType fail, so it is not echoed).
V2_PROTOBUF_ACCEPT = "com.github.proto-openapi.spec.v2"
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V2_TITLE, _V2_VERSION = "Kubernetes (kubemu)", "v1.31.0"


def v2_json() -> Obj:
    return {
        "swagger": "2.0",
        "info": {"title": _V2_TITLE, "version": _V2_VERSION},
        "paths": {},
        "definitions": {},
    }


def v2_protobuf() -> bytes:
    """The same document as gnostic's ``openapi_v2.Document`` protobuf: swagger (1), info (2:
    title 1, version 2), paths (8, empty)."""
    info = _field(1, _V2_TITLE.encode()) + _field(2, _V2_VERSION.encode())
    return _field(1, b"2.0") + _field(2, info) + _field(8, b"")


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)

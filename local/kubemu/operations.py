"""The API verbs with the API server's rules: conflicts, generateName, finalizers, status."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import random
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from . import pdb as pdbs
from . import validation
from .deletion import Deleter
from .errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    entity_too_large,
    invalid,
    not_found,
    stale_version,
)
from .names import name_problem
from .patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from .resources import NAMESPACES, PDBS, PODS, Obj, ResourceType
from .selectors import parse_field_selector, parse_label_selector
from .store import INDEXES, Store, key_of, new_uid

# The alphabet and length of the apiserver's generateName suffix (no vowels, no look-alikes).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX_LENGTH = 5

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

# Metadata only the server sets; updates and patches cannot change it.
_SERVER_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


@dataclass
class Write:
    """How a write is made (``dryRun``, ``fieldValidation``) and the warnings it earned."""

    dry_run: bool = False
    field_validation: str = "Warn"
    warnings: list[str] = dataclass_field(default_factory=list)


class Operations:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.deleter = Deleter(store)
        self._random = random.Random()

    # --- reads ---------------------------------------------------------------------------

    def get(self, resource: ResourceType, namespace: str, name: str) -> Obj:
        with self.store.lock:
            obj = self.store.get(resource, namespace, name)
            if obj is None:
                raise not_found(resource, name)
            return pdbs.refreshed(self.store, obj) if resource is PDBS else obj

    def list(
        self,
        resource: ResourceType,
        namespace: str | None,
        query: dict[str, str],
    ) -> Obj:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), resource)
        limit = _int_param(query, "limit")
        start_after = _decode_continue(query["continue"]) if query.get("continue") else None
        indexed = {f.field: f.value for f in fields if f.equal}
        for index_resource, index_name in INDEXES:
            if index_resource is resource and (value := labels.pinned_value(index_name)):
                indexed[index_name] = value
        with self.store.lock:
            revision = self.store.revision
            found = [
                obj
                for obj in self.store.candidates(resource, namespace, indexed)
                if labels.matches(obj["metadata"].get("labels") or {})
                and all(f.matches(obj) for f in fields)
            ]
            found.sort(key=key_of)
            if start_after is not None:
                found = [obj for obj in found if key_of(obj) > start_after]
            metadata: Obj = {"resourceVersion": revision}
            if limit and len(found) > limit:
                metadata["continue"] = _encode_continue(key_of(found[limit - 1]), revision)
                metadata["remainingItemCount"] = len(found) - limit
                found = found[:limit]
            if resource is PDBS:
                found = [pdbs.refreshed(self.store, obj) for obj in found]
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": metadata,
            "items": found,
        }

    # --- writes --------------------------------------------------------------------------

    def create(
        self, resource: ResourceType, namespace: str, body: Any, write: Write | None = None
    ) -> Obj:
        write = write or Write()
        obj = _object_body(resource, body)
        metadata = obj["metadata"]
        if resource.namespaced:
            if metadata.get("namespace") not in (None, "", namespace):
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent"
                    " on the request"
                )
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        with self.store.lock:
            if resource.namespaced:
                _require_namespace(self.store, namespace)
            if not metadata.get("name"):
                if not metadata.get("generateName"):
                    raise invalid(
                        resource, "", "metadata.name", "Required value: name or generateName"
                    )
                metadata["name"] = self._generated_name(resource, namespace, metadata)
            problem = name_problem(resource.kind, str(metadata["name"]))
            if problem is not None:
                raise invalid(resource, str(metadata["name"]), "metadata.name", problem)
            if resource is PODS and not (obj.get("spec") or {}).get("containers"):
                raise invalid(resource, metadata["name"], "spec.containers", "Required value")
            if self.store.get(resource, namespace, metadata["name"]) is not None:
                raise already_exists(resource, metadata["name"])
            for field in (*_SERVER_METADATA, "resourceVersion"):
                metadata.pop(field, None)
            metadata["uid"] = new_uid()
            metadata["creationTimestamp"] = self.store.now_rfc3339()
            metadata["generation"] = 1
            _reset_status_on_create(resource, obj)
            write.warnings += validation.check(resource, obj, write.field_validation).warnings
            return obj if write.dry_run else self.store.put(resource, _fits_etcd(obj))

    def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str,
        write: Write | None = None,
    ) -> Obj:
        obj = _object_body(resource, body)
        _check_identity(obj, namespace if resource.namespaced else "", name)
        with self.store.lock:
            stored = self._stored(resource, namespace, name)
            version = obj["metadata"].get("resourceVersion")
            if not version and not resource.unconditional_update:
                raise invalid(
                    resource,
                    name,
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                )
            if version and version != stored["metadata"]["resourceVersion"]:
                raise stale_version(resource, name)
            uid = obj["metadata"].get("uid")
            if uid and uid != stored["metadata"]["uid"]:
                raise conflict(
                    resource,
                    name,
                    f"Precondition failed: UID in precondition: {stored['metadata']['uid']},"
                    f" UID in object meta: {uid}",
                )
            return self._replace(resource, stored, obj, subresource, write or Write())

    def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        content_type: str,
        subresource: str,
        write: Write | None = None,
    ) -> Obj:
        media_type = content_type.split(";")[0].strip().lower()
        accepted = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_MERGE_PATCH] if resource.builtin else [])
        if media_type not in accepted:
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - accepted media types"
                f" include: {', '.join(accepted)}",
            )
        with self.store.lock:
            stored = self._stored(resource, namespace, name)
            if media_type == JSON_PATCH:
                patched = apply_json_patch(stored, body)
            elif media_type == MERGE_PATCH:
                patched = apply_merge_patch(stored, body)
            else:
                patched = apply_strategic_merge_patch(stored, body)
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise bad_request("the patch produced an object without metadata")
            if patched["metadata"].get("resourceVersion") != stored["metadata"]["resourceVersion"]:
                raise stale_version(resource, name)
            _check_identity(patched, namespace if resource.namespaced else "", name)
            return self._replace(resource, stored, patched, subresource, write or Write())

    def delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        options: Any,
        write: Write | None = None,
    ) -> Obj:
        preconditions = (options or {}).get("preconditions") or {}
        with self.store.lock:
            stored = self._stored(resource, namespace, name)
            metadata = stored["metadata"]
            for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                wanted = preconditions.get(field)
                if wanted and wanted != metadata.get(field):
                    raise conflict(
                        resource,
                        name,
                        f"Precondition failed: {label} in precondition: {wanted},"
                        f" {label} in object meta: {metadata.get(field)}",
                    )
            dry_run = (write or Write()).dry_run
            return self.deleter.delete(resource, stored, options, dry_run=dry_run)

    # --- helpers -------------------------------------------------------------------------

    def _stored(self, resource: ResourceType, namespace: str, name: str) -> Obj:
        stored = self.store.get(resource, namespace, name)
        if stored is None:
            raise not_found(resource, name)
        return stored

    def _generated_name(self, resource: ResourceType, namespace: str, metadata: Obj) -> str:
        while True:
            suffix = "".join(self._random.choices(_NAME_ALPHABET, k=_NAME_SUFFIX_LENGTH))
            name = f"{metadata['generateName']}{suffix}"
            if self.store.get(resource, namespace, name) is None:
                return name

    def _replace(
        self, resource: ResourceType, stored: Obj, new: Obj, subresource: str, write: Write
    ) -> Obj:
        """Stores `new` in place of `stored`, keeping what this request may not change."""
        if subresource == "status":
            # The status subresource changes status only.
            new = {**copy.deepcopy(stored), "status": copy.deepcopy(new.get("status", {}))}
        elif resource.has_status:
            new.pop("status", None)
            if "status" in stored:
                new["status"] = copy.deepcopy(stored["status"])
        metadata = new["metadata"]
        for field in _SERVER_METADATA:
            metadata.pop(field, None)
            if field in stored["metadata"]:
                metadata[field] = stored["metadata"][field]
        metadata["resourceVersion"] = stored["metadata"]["resourceVersion"]
        metadata["generation"] = stored["metadata"].get("generation", 1)
        # Defaults and pruning first, so that a write that changes nothing stays a no-op.
        write.warnings += validation.check(resource, new, write.field_validation).warnings
        if _without(new, "metadata", "status") != _without(stored, "metadata", "status"):
            metadata["generation"] += 1
        if new == stored:
            return stored  # a no-op write does not bump the resourceVersion
        if metadata.get("deletionTimestamp"):
            _check_no_new_finalizers(resource, stored, new)
        validation.check_update(resource, stored, new)
        if write.dry_run:
            return new
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            ends = metadata.get("deletionGracePeriodSeconds") or 0
            if not ends:
                # The last finalizer is gone from an object being deleted: it goes away now.
                self.deleter.finish(resource, stored)
                return new
        return self.store.put(resource, _fits_etcd(new))


# etcd's default --max-request-bytes: 1.5 MiB (https://etcd.io/docs/v3.5/dev-guide/limit/).
ETCD_MAX_REQUEST_BYTES = 1572864


def _fits_etcd(obj: Obj) -> Obj:
    """An object etcd would refuse to store ("etcdserver: request is too large") is refused
    here, before anything is stored; the size counted is the object's compact JSON (etcd
    holds it as protobuf, a little smaller: near the limit the emulator refuses first)."""
    if len(json.dumps(obj, separators=(",", ":"))) > ETCD_MAX_REQUEST_BYTES:
        raise entity_too_large("etcdserver: request is too large")
    return obj


def _require_namespace(store: Store, namespace: str) -> None:
    """Namespace lifecycle admission: no object in a namespace that does not exist."""
    found = store.get(NAMESPACES, "", namespace)
    if found is None:
        raise not_found(NAMESPACES, namespace)
    if found["metadata"].get("deletionTimestamp"):
        raise ApiError(
            403,
            f"unable to create new content in namespace {namespace} because it is being terminated",
            details={"name": namespace, "kind": "namespaces"},
        )


def _check_no_new_finalizers(resource: ResourceType, stored: Obj, new: Obj) -> None:
    """ValidateObjectMetaUpdate: no finalizer may be added to an object being deleted."""
    old = set(stored["metadata"].get("finalizers") or [])
    added = [f for f in new["metadata"].get("finalizers") or [] if f not in old]
    if added:
        quoted = ", ".join(f'"{f}"' for f in added)
        raise invalid(
            resource,
            new["metadata"]["name"],
            "metadata.finalizers",
            f"Forbidden: no new finalizers can be added if the object is being deleted,"
            f" found new finalizers []string{{{quoted}}}",
        )


def _object_body(resource: ResourceType, body: Any) -> Obj:
    if not isinstance(body, dict) or not isinstance(body.get("metadata", {}), dict):
        raise bad_request(f"the body must be a {resource.kind} object")
    obj = copy.deepcopy(body)
    obj.setdefault("metadata", {})
    if obj.get("kind", resource.kind) != resource.kind:
        raise bad_request(f"the kind of the body ({obj['kind']}) is not {resource.kind}")
    obj["kind"] = resource.kind
    obj["apiVersion"] = resource.api_version
    return obj


def _check_identity(obj: Obj, namespace: str, name: str) -> None:
    metadata = obj["metadata"]
    if metadata.get("name") != name:
        raise bad_request(
            f"the name of the object ({metadata.get('name')}) does not match the name on the"
            f" URL ({name})"
        )
    if (metadata.get("namespace") or "") not in ("", namespace):
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if namespace:
        metadata["namespace"] = namespace


def _reset_status_on_create(resource: ResourceType, obj: Obj) -> None:
    """What each type's PrepareForCreate does to a client-supplied status."""
    if resource is PODS:
        obj["status"] = {"phase": "Pending"}
    elif resource is NAMESPACES:
        obj["status"] = {"phase": "Active"}
    elif resource is PDBS or not resource.builtin:
        obj.pop("status", None)
    # Nodes keep the status they are created with, as upstream ("nodes allow all fields").


def _without(obj: Obj, *fields: str) -> Obj:
    return {k: v for k, v in obj.items() if k not in fields}


def _int_param(query: dict[str, str], name: str) -> int:
    raw = query.get(name)
    if not raw:
        return 0
    if not raw.isdigit():
        raise bad_request(f"invalid {name} {raw!r}: must be a non-negative integer")
    return int(raw)


def _encode_continue(last: tuple[str, str], revision: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": int(revision), "start": f"{last[0]}/{last[1]}"}
    return base64.urlsafe_b64encode(json.dumps(token).encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, _, name = decoded["start"].partition("/")
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as error:
        raise bad_request(f"continue key is not valid: {error}") from error
    return (namespace, name)

"""Where a rotation's state lives: a ConfigMap in the cluster it rotates.

``lifeboat-rotation-<name>`` in Lifeboat's namespace (``LIFEBOAT_LEASE_NAMESPACE``, beside the
pool Leases), labelled ``lifeboat.dev/rotation=<name>`` and with its phase in
``lifeboat.dev/rotation-phase``; ``data`` holds ``state.json`` (the whole state) and
``summary`` (one line for ``kubectl get``/``describe``).

A ConfigMap holds at most 1 MiB (the API server's validation; etcd refuses a request over
1.5 MiB). Finished nodes are stored compacted (``model.compact``), and a state past
:data:`INLINE_MAX` bytes is stored gzipped in ``binaryData`` (``state.json.gz``) instead of
``data``: a rotation of 2,000 nodes, 100 of them in flight on busy nodes, stays far below
the limit (tests/integration/rotation/test_rotation_state_size.py).

Why a ConfigMap: the cluster is the source of truth for everything a rotation judges, and
its state belongs with it. ``lifeboat status --kubeconfig`` and ``kubectl`` read it with the
operator's cluster credentials, without AWS access; a cluster taken down takes its
rotations with it; one stack serving many clusters needs no per-cluster keys elsewhere; and
the API server's ``resourceVersion`` gives optimistic concurrency for free, the primitive the
pool Leases already rely on. A custom resource would read better in ``kubectl get`` but is a
CRD to install and version for a tool that installs nothing in the cluster but its RBAC;
DynamoDB would need AWS access to read progress and keys per cluster. The Lambda may only
get, create and update ConfigMaps in that one namespace (``deploy/rbac.yaml``).
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

from lifeboat import errors
from lifeboat.kube.client import Conflict, KubeApi
from lifeboat.kube.objects import MutableObj, Obj
from lifeboat.marks import node_marks
from lifeboat.rotation.model import Rotation, StateError, compact, from_json, to_json

PREFIX = "lifeboat-rotation-"
NAME_LABEL = f"{node_marks.DOMAIN}/rotation"
PHASE_LABEL = f"{node_marks.DOMAIN}/rotation-phase"
STATE_KEY = "state.json"
COMPRESSED_KEY = "state.json.gz"
# Past this many bytes of JSON the state is stored gzipped (readable as is below it).
INLINE_MAX = 256 * 1024
SUMMARY_KEY = "summary"
# Tries of a read-modify-write against concurrent writers before the message is retried.
WRITE_ATTEMPTS = 5

T = TypeVar("T")


class Gone(errors.Gone):
    """The rotation's ConfigMap is not there (deleted by an operator, or never created)."""


def configmap_name(rotation: str) -> str:
    return f"{PREFIX}{rotation}"


@dataclass(frozen=True)
class Stored:
    """A rotation as read, with what guards the next write of it."""

    rotation: Rotation
    version: str
    uid: str = ""


def read(configmap: Obj) -> Stored:
    """The rotation a ConfigMap holds; :class:`StateError` naming the object when it
    cannot be read."""
    meta = configmap.get("metadata", {})
    where = f"ConfigMap {meta.get('namespace')}/{meta.get('name')}"
    text = (configmap.get("data") or {}).get(STATE_KEY)
    packed = (configmap.get("binaryData") or {}).get(COMPRESSED_KEY)
    if isinstance(packed, str):
        try:
            text = gzip.decompress(base64.b64decode(packed, validate=True)).decode()
        except (ValueError, OSError, EOFError) as error:
            raise StateError(f"{where}: {COMPRESSED_KEY}: {error}") from None
    if not isinstance(text, str):
        raise StateError(f"{where}: no {STATE_KEY}")
    try:
        rotation = from_json(text)
    except StateError as error:
        raise StateError(f"{where}: {STATE_KEY}: {error}") from None
    return Stored(rotation, str(meta.get("resourceVersion", "")), str(meta.get("uid", "")))


def load(kube: KubeApi, namespace: str, name: str) -> Stored | None:
    found = kube.get_configmap(namespace, configmap_name(name))
    return None if found is None else read(found)


def create(kube: KubeApi, namespace: str, rotation: Rotation) -> Stored | None:
    """Store a new rotation; None when one of that name exists already."""
    try:
        created = kube.create_configmap(namespace, _body(namespace, rotation, None))
    except Conflict:
        return None
    return read(created)


def save(kube: KubeApi, namespace: str, stored: Stored, rotation: Rotation) -> Stored:
    """Replace ``stored`` with ``rotation``; :class:`Conflict` if it changed since read."""
    return read(kube.update_configmap(namespace, _body(namespace, rotation, stored.version)))


def update(
    kube: KubeApi,
    namespace: str,
    name: str,
    change: Callable[[Stored], tuple[Rotation | None, T]],
) -> tuple[Stored, T]:
    """Read-modify-write with retries: ``change`` gets the rotation as read (it may read the
    cluster too) and returns the new rotation (None: nothing to write) and a result. When
    another writer got in between, everything is read and decided again."""
    for _ in range(WRITE_ATTEMPTS):
        stored = load(kube, namespace, name)
        if stored is None:
            raise Gone(f"rotation {name} is gone")
        rotation, result = change(stored)
        if rotation is None:
            return stored, result
        try:
            return save(kube, namespace, stored, rotation), result
        except Conflict:
            continue
    raise Conflict(409, f"rotation {name} kept changing under {WRITE_ATTEMPTS} writes")


def stamped(rotation: Rotation, now: datetime) -> Rotation:
    return replace(rotation, updated=now)


def _body(namespace: str, rotation: Rotation, version: str | None) -> MutableObj:
    metadata: MutableObj = {
        "name": configmap_name(rotation.spec.name),
        "namespace": namespace,
        "labels": {
            "app.kubernetes.io/managed-by": "lifeboat",
            NAME_LABEL: rotation.spec.name,
            PHASE_LABEL: str(rotation.phase),
        },
    }
    if version is not None:
        metadata["resourceVersion"] = version
    state = to_json(compact(rotation), stored=True)
    body: MutableObj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {SUMMARY_KEY: rotation.summary()},
    }
    if len(state) <= INLINE_MAX:
        body["data"][STATE_KEY] = state
    else:
        # mtime=0: the same state gives the same bytes.
        packed = gzip.compress(state.encode(), compresslevel=6, mtime=0)
        body["binaryData"] = {COMPRESSED_KEY: base64.b64encode(packed).decode()}
    return body

"""The object store: objects by (resource, namespace, name), a global resourceVersion, indexes.

Stored objects are never mutated in place: every write stores a new dict. Readers may
therefore hand out references and serialise them after releasing the lock.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .clock import Clock, rfc3339
from .resources import NODECLAIMS, NODES, PODS, Obj, ResourceType

NODEPOOL_LABEL = "karpenter.sh/nodepool"

Key = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped objects


def _pod_node(obj: Obj) -> str | None:
    # Unscheduled pods are indexed under "": `spec.nodeName=` selects them, as upstream.
    node: str = obj.get("spec", {}).get("nodeName") or ""
    return node


def _nodepool(obj: Obj) -> str | None:
    pool: str | None = (obj.get("metadata", {}).get("labels") or {}).get(NODEPOOL_LABEL)
    return pool


# The lookups that must not scan every object of a 15,000-pod cluster.
# (resource, index name) → how to read the indexed value; the names are the selector keys.
INDEXES: dict[tuple[ResourceType, str], Callable[[Obj], str | None]] = {
    (PODS, "spec.nodeName"): _pod_node,
    (NODES, NODEPOOL_LABEL): _nodepool,
    (NODECLAIMS, NODEPOOL_LABEL): _nodepool,
}


# The same, by resource: a write looks up its resource's indexes instead of trying them all.
_INDEXES_OF: dict[ResourceType, list[tuple[str, Callable[[Obj], str | None]]]] = {}
for (_resource, _name), _read in INDEXES.items():
    _INDEXES_OF.setdefault(_resource, []).append((_name, _read))


# Seeded once from the OS; UIDs need uniqueness, not unpredictability.
_uid_random = random.Random()


# The version (4) and variant (RFC 4122) bits of a random UUID, as uuid.UUID(version=4) sets.
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_uid() -> str:
    """A random (version 4) UID, without uuid4's system call per object on large loads, and
    formatted directly (uuid.UUID's checks are a third of seeding a 25,000-object cluster)."""
    h = f"{_uid_random.getrandbits(128) & _UUID4_CLEAR | _UUID4_SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def key_of(obj: Obj) -> Key:
    metadata = obj["metadata"]
    return (metadata.get("namespace") or "", metadata["name"])


# How many changes watches can resume from; an older resourceVersion is 410 Expired.
CHANGE_HISTORY = 50_000


@dataclass(frozen=True, slots=True)
class Change:
    """One write, as a watch reports it: the object before (None when added) and after."""

    revision: int
    type: str  # ADDED, MODIFIED, DELETED
    resource: ResourceType
    old: Obj | None
    new: Obj


Ref = tuple[ResourceType, str, str]  # (resource, namespace, name)


class Store:
    """Thread-safe storage; callers doing read-modify-write hold `lock` around the sequence."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.lock = threading.RLock()
        # Notified on every write (watches wait on it); shares the store's lock.
        self.changed = threading.Condition(self.lock)
        self.changes: deque[Change] = deque(maxlen=CHANGE_HISTORY)
        self.clock = clock or Clock()
        self._revision = 0
        # PDB uid -> the expected pods its exported status said, for PDBs whose pods'
        # controllers a cluster file lacks (see pdb.py); empty unless an emulator is told.
        self.exported_scales: dict[str, int] = {}
        # What is computed from stored objects, with the revision it was computed at (a
        # PDB's status: pdb.refreshed); valid while the revision stays the same.
        self.derived: dict[tuple[object, ...], tuple[object, object]] = {}
        # Pods by (namespace, label key, value): what a PDB's matchLabels narrow to.
        self._pod_labels: dict[tuple[str, str, str], set[Key]] = {}
        self._by_uid: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}
        self._objects: dict[ResourceType, dict[str, dict[str, Obj]]] = {}
        self._index: dict[tuple[ResourceType, str], dict[str, set[Key]]] = {
            spec: {} for spec in INDEXES
        }

    def now_rfc3339(self) -> str:
        return rfc3339(self.clock.now())

    @property
    def revision(self) -> str:
        with self.lock:
            return str(self._revision)

    def next_revision(self) -> str:
        with self.lock:
            self._revision += 1
            return str(self._revision)

    def get(self, resource: ResourceType, namespace: str, name: str) -> Obj | None:
        with self.lock:
            return self._objects.get(resource, {}).get(namespace, {}).get(name)

    def put(self, resource: ResourceType, obj: Obj) -> Obj:
        """Stores `obj` (which the caller hands over) with a fresh resourceVersion."""
        with self.lock:
            self._revision += 1  # next_revision() without taking the lock again
            obj["metadata"]["resourceVersion"] = str(self._revision)
            key = namespace, name = key_of(obj)
            by_namespace = self._objects.setdefault(resource, {}).setdefault(namespace, {})
            old = by_namespace.get(name)
            self._unindex(resource, old)
            by_namespace[name] = obj
            self._reindex(resource, obj, key)
            self._record("ADDED" if old is None else "MODIFIED", resource, old, obj)
            return obj

    def remove(self, resource: ResourceType, namespace: str, name: str) -> Obj | None:
        with self.lock:
            by_namespace = self._objects.get(resource, {}).get(namespace, {})
            obj = by_namespace.pop(name, None)
            self._unindex(resource, obj)
            if obj is not None:
                # A deletion is a write: later reads see a newer revision, and the watch
                # event carries the object at that revision, as upstream.
                gone = {**obj, "metadata": {**obj["metadata"]}}
                gone["metadata"]["resourceVersion"] = self.next_revision()
                self._record("DELETED", resource, obj, gone)
            return obj

    def by_uid(self, uid: str) -> Obj | None:
        with self.lock:
            ref = self._by_uid.get(uid)
            return None if ref is None else self.get(*ref)

    def dependents(self, owner_uid: str) -> list[tuple[ResourceType, Obj]]:
        """Objects with an ownerReference to ``owner_uid``."""
        with self.lock:
            found = [(ref[0], self.get(*ref)) for ref in self._dependents.get(owner_uid, ())]
            return [(resource, obj) for resource, obj in found if obj is not None]

    def _record(self, kind: str, resource: ResourceType, old: Obj | None, new: Obj) -> None:
        self.changes.append(Change(self._revision, kind, resource, old, new))
        self.changed.notify_all()

    def candidates(
        self, resource: ResourceType, namespace: str | None, indexed: dict[str, str]
    ) -> Iterable[Obj]:
        """Objects of `resource` (in `namespace` if given), narrowed by any usable index.

        `indexed` maps selector keys to the values a query pins them to; the caller still
        applies the full selectors to what comes back.
        """
        with self.lock:
            stored = self._objects.get(resource, {})
            for index_name, value in indexed.items():
                index = self._index.get((resource, index_name))
                if index is not None:
                    keys = index.get(value, set())
                    found = (stored.get(ns, {}).get(name) for ns, name in keys)
                    return [o for o in found if o is not None and namespace in (None, key_of(o)[0])]
            if namespace is not None:
                return list(stored.get(namespace, {}).values())
            return [obj for by_name in stored.values() for obj in by_name.values()]

    def pods_labelled(self, namespace: str, labels: Mapping[str, str]) -> list[Obj] | None:
        """The pods of ``namespace`` carrying every one of ``labels`` (None: no labels to
        narrow by; the caller scans the namespace). The caller still applies its selector."""
        if not labels:
            return None
        with self.lock:
            keys = min(
                (self._pod_labels.get((namespace, k, str(v)), set()) for k, v in labels.items()),
                key=len,
            )
            stored = self._objects.get(PODS, {}).get(namespace, {})
            return [obj for ns, name in keys if ns == namespace and (obj := stored.get(name))]

    def all_objects(self, kind: str | None = None) -> list[tuple[ResourceType, Obj]]:
        """Every stored object (of ``kind``: only that kind's resources are read)."""
        with self.lock:
            return [
                (resource, obj)
                for resource, by_namespace in self._objects.items()
                if kind is None or resource.kind == kind
                for by_name in by_namespace.values()
                for obj in by_name.values()
            ]

    def _reindex(self, resource: ResourceType, obj: Obj, key: Key) -> None:
        ref = (resource, key[0], key[1])
        metadata = obj["metadata"]
        if uid := metadata.get("uid"):
            self._by_uid[uid] = ref
        for owner in metadata.get("ownerReferences") or ():
            self._dependents.setdefault(owner.get("uid", ""), set()).add(ref)
        for index_name, read in _INDEXES_OF.get(resource, ()):
            if (value := read(obj)) is not None:
                self._index[(resource, index_name)].setdefault(value, set()).add(key)
        if resource is PODS:
            for label in (metadata.get("labels") or {}).items():
                self._pod_labels.setdefault((key[0], *label), set()).add(key)

    def _unindex(self, resource: ResourceType, obj: Obj | None) -> None:
        if obj is None:
            return
        key = key_of(obj)
        ref = (resource, *key)
        metadata = obj["metadata"]
        if self._by_uid.get(metadata.get("uid", "")) == ref:
            del self._by_uid[metadata["uid"]]
        for owner in metadata.get("ownerReferences") or ():
            self._dependents.get(owner.get("uid", ""), set()).discard(ref)
        for index_name, read in _INDEXES_OF.get(resource, ()):
            if (value := read(obj)) is not None:
                self._index[(resource, index_name)].get(value, set()).discard(key)
        if resource is PODS:
            for label in (metadata.get("labels") or {}).items():
                self._pod_labels.get((key[0], *label), set()).discard(key)

"""The test-facing handle: start/stop the server, inspect and seed the store, inject faults."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from kubernetes import client

from .clock import Clock
from .clusterfile import as_list, load_cluster_file
from .dispatch import Backend, LogEntry, LogTimes
from .gcpause import collector_paused
from .pdb import missing_controllers, refreshed
from .rbac import Authorizer, RbacPolicy
from .resources import (
    NAMESPACES,
    PDBS,
    Obj,
    ResourceType,
    resource_for_kind,
    resource_for_object,
)
from .server import EmulatorHTTPServer
from .store import Store, key_of, new_uid

# The namespaces every cluster starts with; a dump leaves them out, as they come anyway.
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


@dataclass(frozen=True)
class PdbAssumption:
    """A PDB whose pods' controllers are missing, and the exported status then trusted."""

    pdb: str  # namespace/name
    missing: tuple[str, ...]  # "ReplicaSet shop/web-6d4f" ...
    expected_pods: int | None  # the exported status.expectedPods; None: none exported
    disruptions_allowed: int | None  # the exported status.disruptionsAllowed


class Emulator:
    def __init__(
        self,
        objects: Iterable[Obj] = (),
        latency: float = 0.0,
        port: int = 0,
        *,
        take: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """The emulator, seeded with ``objects``: copies of them, or with ``take`` the
        objects themselves, which the caller hands over (it must not change them after, and
        finds the server's metadata added to them): a freshly parsed cluster file of 25,000
        objects then costs no second copy. Either way the objects must be JSON values.
        ``sleep`` waits out the ``latency`` of each request (real time unless injected)."""
        self._store = Store(Clock())
        self._backend = Backend(self._store)
        self._backend.latency = latency
        self._backend.sleep = sleep
        self._port = port
        self._server: EmulatorHTTPServer | None = None
        self._thread: threading.Thread | None = None
        for namespace in SYSTEM_NAMESPACES:
            self._ensure_namespace(namespace)
        # One timestamp for the whole seed: it is one instant on the emulator's clock.
        created = self._store.now_rfc3339()
        ensured: set[str] = set()  # namespaces made sure of while seeding: once each
        with self._store.lock, collector_paused():
            for obj in objects:
                self._store_copy(obj if take else _clone(obj), created, ensured)

    @classmethod
    def from_file(cls, path: str | Path, latency: float = 0.0) -> Emulator:
        return cls(load_cluster_file(path), latency=latency)

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> str:
        if self._server is None:
            self._backend.stopping.clear()  # a restarted emulator serves watches again
            self._server = EmulatorHTTPServer(self._backend, self._port)
            # A short poll interval keeps stop() quick: tests start and stop many emulators.
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.05,), name="kubemu", daemon=True
            )
            self._thread.start()
        return self.url

    def stop(self) -> None:
        self._backend.stopping.set()  # ends open watches
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the emulator is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def api_client(self) -> client.ApiClient:
        """A new client for this emulator, configured as a real one would be for a cluster."""
        configuration = client.Configuration(host=self.url)
        return client.ApiClient(configuration)

    # --- behaviour knobs ---------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The emulator's time: ``emu.clock.advance(30)`` ends a 30 s grace period."""
        return self._store.clock

    @property
    def latency(self) -> float:
        return self._backend.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._backend.latency = seconds

    def fail_next(
        self,
        status: int = 500,
        times: int = 1,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
    ) -> None:
        self._backend.faults.fail_next(status, times, verb, resource, name)

    def set_fault_rate(
        self,
        rate: float = 0.05,
        seed: int = 1,
        statuses: Sequence[int] = (500, 503, 429),
        timeout_rate: float = 0.0,
        timeout_delay: float = 2.0,
    ) -> None:
        self._backend.faults.set_rate(rate, seed, statuses, timeout_rate, timeout_delay)

    def clear_faults(self) -> None:
        self._backend.faults.clear()

    def enforce_rbac(
        self, cluster_role_rules: Sequence[dict[str, Any]] | None, user: str = "lifeboat"
    ) -> None:
        self._backend.authorizer = (
            None if cluster_role_rules is None else Authorizer(cluster_role_rules, user)
        )

    def load_rbac(self, objects: Sequence[dict[str, Any]]) -> None:
        """RBAC objects (ClusterRole, Role and their bindings) for impersonated requests
        (``Impersonate-User``/``Impersonate-Group``, kubectl ``--as``/``--as-group``)."""
        self._backend.policy = RbacPolicy(objects)

    # --- request accounting ------------------------------------------------------------

    @property
    def requests(self) -> Counter[str]:
        return self._backend.stats.requests

    @property
    def requests_by_resource(self) -> Counter[tuple[str, str]]:
        return self._backend.stats.by_resource

    @property
    def request_log(self) -> list[LogEntry]:
        return self._backend.stats.log

    @property
    def request_times(self) -> list[LogTimes]:
        """(arrived, answered) per entry of ``request_log``, in ``time.perf_counter()``
        seconds; answered is None for a request that failed or is not answered yet."""
        with self._backend.stats_lock:
            return list(self._backend.stats.times)

    def timed_request_log(self) -> list[tuple[LogEntry, LogTimes]]:
        """``request_log`` and ``request_times`` read together, consistently."""
        with self._backend.stats_lock:
            return list(zip(self._backend.stats.log, self._backend.stats.times, strict=True))

    @property
    def answers(self) -> Counter[str]:
        """How many answers of each status code the server gave ("200", "429", ...), and
        how many requests it dropped ("dropped"): injected faults included, so a test can
        tell that its faults were met."""
        with self._backend.stats_lock:
            return Counter(self._backend.stats.answers)

    @property
    def seen_permissions(self) -> set[tuple[str, str, str]]:
        return self._backend.stats.seen_permissions

    def reset_counts(self) -> None:
        self._backend.stats.reset()

    # --- direct store access -----------------------------------------------------------

    def objects(self, kind: str | None = None) -> list[Obj]:
        """Copies of the stored objects (of ``kind``), by kind, namespace and name: the
        caller may change them (and ``put_object`` them back)."""
        return _clone(self.view(kind))

    def view(self, kind: str | None = None) -> list[Obj]:
        """The stored objects themselves (of ``kind``), in the order of ``objects``, without
        copying a 15,000-pod cluster for a caller that only reads it. The store never
        changes an object in place (a write stores a new dict), so this is a consistent
        snapshot; the caller must not change the objects either (``objects`` gives copies)."""
        self._backend.operations.deleter.expire()
        with self._store.lock:
            found = [
                self._current(resource, obj) for resource, obj in self._store.all_objects(kind)
            ]
            return sorted(found, key=lambda o: (o["kind"], key_of(o)))

    def get_object(
        self, kind: str, name: str, namespace: str | None = None, api_version: str | None = None
    ) -> Obj | None:
        resource = resource_for_kind(kind, api_version)
        self._backend.operations.deleter.expire()
        with self._store.lock:
            obj = self._store.get(resource, namespace or "", name)
            return None if obj is None else _clone(self._current(resource, obj))

    def put_object(self, obj: Obj) -> Obj:
        """Stores `obj` as given (status included), adding missing server metadata."""
        return _clone(self._store_copy(_clone(obj)))

    def _store_copy(
        self, stored: Obj, created: str | None = None, ensured: set[str] | None = None
    ) -> Obj:
        """Stores ``stored`` (a copy the caller made, or an object handed over); ``ensured``:
        the namespaces known to exist already (seeding), added to as they are made sure of."""
        resource = resource_for_object(stored.get("apiVersion", ""), stored.get("kind", ""))
        if resource is None:
            raise ValueError(f"unsupported object {stored.get('apiVersion')}/{stored.get('kind')}")
        metadata = stored.setdefault("metadata", {})
        if not metadata.get("name"):
            raise ValueError("put_object needs metadata.name")
        if resource.namespaced:
            namespace = metadata.setdefault("namespace", "default")
            # A cluster file lists what is in the namespaces it names: they exist.
            if ensured is None or namespace not in ensured:
                self._ensure_namespace(namespace)
                if ensured is not None:
                    ensured.add(namespace)
        if "uid" not in metadata:
            metadata["uid"] = new_uid()
        if "creationTimestamp" not in metadata:
            metadata["creationTimestamp"] = created or self._store.now_rfc3339()
        metadata.setdefault("generation", 1)
        return self._store.put(resource, stored)

    def trust_exported_pdb_status(self) -> list[PdbAssumption]:
        """For each PDB whose pods' controllers are not in the store (a cluster file that
        lacks them): take the expected pods from the status it was loaded with, as the real
        disruption controller computed them, instead of the fail-safe "no disruption". Says
        what it found and assumed, one entry per such PDB (``expected`` None: the PDB had no
        exported status, so the fail-safe stays)."""
        assumptions: list[PdbAssumption] = []
        with self._store.lock:
            for _, pdb in self._store.all_objects("PodDisruptionBudget"):
                missing = missing_controllers(self._store, pdb)
                if not missing:
                    continue
                status = pdb.get("status") or {}
                expected = status.get("expectedPods")
                if not isinstance(expected, int) or isinstance(expected, bool):
                    expected = None
                else:
                    self._store.exported_scales[pdb["metadata"]["uid"]] = expected
                allowed = status.get("disruptionsAllowed")
                metadata = pdb["metadata"]
                assumptions.append(
                    PdbAssumption(
                        f"{metadata.get('namespace', '')}/{metadata['name']}",
                        tuple(missing),
                        expected,
                        allowed if isinstance(allowed, int) else None,
                    )
                )
        return assumptions

    def ensure_namespace(self, name: str) -> None:
        """Creates the namespace ``name`` unless it exists (what a setup step would apply)."""
        self._ensure_namespace(name)

    def _ensure_namespace(self, name: str) -> None:
        if self._store.get(NAMESPACES, "", name) is None:
            self._store_copy(
                {  # a fresh dict: stored as it is
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                }
            )

    def delete_object(self, kind: str, name: str, namespace: str | None = None) -> bool:
        """Removes an object at once, finalizers or not; False when there was none."""
        removed = self._store.remove(resource_for_kind(kind), namespace or "", name)
        return removed is not None

    def dump(self) -> Obj:
        """All objects as a `kind: List`, in the stable order of dump_cluster_file; the
        namespaces every cluster has are left out."""
        return as_list(
            o
            for o in self.objects()
            if o["kind"] != "Namespace" or o["metadata"]["name"] not in SYSTEM_NAMESPACES
        )

    def _current(self, resource: ResourceType, obj: Obj) -> Obj:
        return refreshed(self._store, obj) if resource is PDBS else obj


_T = TypeVar("_T")


def _clone(value: _T) -> _T:
    """A deep copy; the JSON round trip is several times faster than copy.deepcopy and also
    rejects values the server could not serialise."""
    return cast(_T, json.loads(json.dumps(value)))

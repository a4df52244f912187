"""One writer at a time per NodePool for the count-and-disrupt step.

Several Lambdas run at once. Two of them weighing the same pool's budget at the same time
would each see one free slot and both take it. A ``coordination.k8s.io`` Lease per NodePool
serialises that step; the cluster stays the source of truth (the counts are read inside the
lease, and the taint that makes a node "disrupting" is written before it is released).
Acquisition is a ``resourceVersion``-guarded write, so two workers can never both win.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from typing import Any

from lifeboat.errors import RetryLater
from lifeboat.kube.client import Conflict, KubeApi, NotFound
from lifeboat.model.deadline import RETRY_PATIENCE
from lifeboat.model.instants import format_micro, parse_timestamp

# Longer than the worst case of the section it guards (a few requests, each retried with
# backoff under a 10 s timeout), so a slow API server cannot let a second worker in; a
# holder that died frees it after this long, and waiters retry the message meanwhile.
LEASE_SECONDS = 60


class LockTimeout(RetryLater):
    """The pool's lease stayed busy; the message will be retried."""


class LeaseNamespaceMissing(RetryLater):
    """The Leases' namespace does not exist: the message is retried (and dead-lettered if
    it stays missing) with an error that says how to fix the set-up."""


class PoolLock:
    def __init__(
        self,
        kube: KubeApi,
        namespace: str,
        holder: str,
        *,
        clock: Callable[[], datetime],
        # Waiting for a busy lease is retrying in-process: no longer than any other retry
        # of one message (a third of the function's timeout).
        wait_seconds: float = RETRY_PATIENCE.total_seconds(),
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._kube = kube
        self._namespace = namespace
        self._holder = holder
        self._clock = clock
        self._wait = wait_seconds
        self._sleep = sleep
        self._rng = rng or random.Random()

    @contextmanager
    def hold(self, pool: str) -> Iterator[None]:
        name = f"lifeboat-nodepool-{pool}"
        # Threads of one invocation queue in the process first: polling the API server for
        # a lease a sibling thread holds would only cost requests.
        local = _local_lock(self._kube, name)
        if not local.acquire(timeout=self._wait):
            raise LockTimeout(f"lease {self._namespace}/{name} stayed held in this process")
        try:
            # Unique per hold: another process may hold the lease under our name prefix.
            holder = f"{self._holder}-{uuid.uuid4().hex[:8]}"
            lease = self._acquire(name, holder)
            try:
                yield
            finally:
                self._release(lease)
        finally:
            local.release()

    def _acquire(self, name: str, holder: str) -> dict[str, Any]:
        """Try until the lease is ours or ``wait_seconds`` have passed on the injected clock
        (the one lease expiry is judged by); the seconds slept bound the wait as well, so a
        clock that stands still (replay's ``--at``) cannot keep a waiter here."""
        give_up = self._clock() + timedelta(seconds=self._wait)
        slept = 0.0
        while True:
            lease = self._try_acquire(name, holder)
            if lease is not None:
                return lease
            if self._clock() >= give_up or slept >= self._wait:
                raise LockTimeout(f"lease {self._namespace}/{name} stayed held")
            pause = self._rng.uniform(0.01, 0.1)
            self._sleep(pause)
            slept += pause

    def _try_acquire(self, name: str, holder: str) -> dict[str, Any] | None:
        now = self._clock()
        lease = self._kube.get_lease(self._namespace, name)
        spec = {
            "holderIdentity": holder,
            "leaseDurationSeconds": LEASE_SECONDS,
            "acquireTime": format_micro(now),
            "renewTime": format_micro(now),
        }
        try:
            if lease is None:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": name, "namespace": self._namespace},
                    "spec": spec,
                }
                try:
                    return self._kube.create_lease(self._namespace, body)
                except NotFound:
                    # The API server refuses objects in a namespace that does not exist.
                    raise LeaseNamespaceMissing(
                        f"cannot create lease {self._namespace}/{name}: namespace"
                        f" {self._namespace!r} does not exist (deploy/rbac.yaml creates it;"
                        " or set LIFEBOAT_LEASE_NAMESPACE to an existing namespace)"
                    ) from None
            if _held_by_other(lease, holder, now):
                return None
            previous = lease.get("spec") or {}
            # coordination.k8s.io/v1: leaseTransitions counts changes of holder; client-go's
            # LeaderElector adds one whenever it takes a lease it did not hold.
            transitions = int(previous.get("leaseTransitions") or 0)
            if previous.get("holderIdentity") != holder:
                transitions += 1
            lease["spec"] = {**previous, **spec, "leaseTransitions": transitions}
            return self._kube.update_lease(self._namespace, lease)
        except Conflict:
            return None  # someone else created or took it between our read and write

    def _release(self, lease: dict[str, Any]) -> None:
        lease["spec"] = {**lease.get("spec", {}), "holderIdentity": None}
        # Expired and taken over, or deleted: either way it is no longer ours.
        with suppress(Conflict, NotFound):
            self._kube.update_lease(self._namespace, lease)


_local_locks: weakref.WeakKeyDictionary[KubeApi, dict[str, threading.Lock]] = (
    weakref.WeakKeyDictionary()
)
_local_guard = threading.Lock()


def _local_lock(kube: KubeApi, name: str) -> threading.Lock:
    """One lock per (cluster client, lease) in this process."""
    with _local_guard:
        return _local_locks.setdefault(kube, {}).setdefault(name, threading.Lock())


def _held_by_other(lease: dict[str, Any], holder: str, now: datetime) -> bool:
    spec = lease.get("spec") or {}
    current = spec.get("holderIdentity")
    if not current or current == holder:
        return False
    renewed = parse_timestamp(spec.get("renewTime"))
    if renewed is None:
        return True
    expires = renewed + timedelta(seconds=int(spec.get("leaseDurationSeconds") or LEASE_SECONDS))
    return now < expires

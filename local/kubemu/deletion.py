"""Deletion as the API server and its controllers carry it out.

- Graceful pod termination (``pkg/registry/core/pod/strategy.go`` CheckGracefulDelete): a
  deleted pod stays, Terminating, with ``deletionTimestamp`` = now + grace period and
  ``deletionGracePeriodSeconds``; the grace period is the request's, else the pod's
  ``terminationGracePeriodSeconds``, else 30 s; an unscheduled pod (no ``spec.nodeName``)
  or a Succeeded/Failed one goes at once. When the period is over on the emulator's clock,
  the pod goes, as when the kubelet confirms with a zero-grace delete. A second delete may
  only shorten the period. The confirmation needs a kubelet: on a node whose ``Ready``
  condition is not True (an unreachable or impaired instance) the pod stays Terminating,
  its ``deletionTimestamp`` in the past, until the node is Ready again or gone (the pod
  garbage collector's ``gcOrphaned`` then deletes it).
- Finalizers: an object with finalizers is only marked (``deletionTimestamp``) and goes when
  the last one is removed.
- The garbage collector (``pkg/controller/garbagecollector``), synchronously: with the
  default ``Background`` policy an object's dependents (``ownerReferences`` by uid) are
  deleted once it is gone, unless another owner of theirs still exists (then only the
  reference to the gone owner is dropped); ``Foreground`` keeps the owner, with the
  ``foregroundDeletion`` finalizer, until its dependents are gone; ``Orphan`` removes the
  owner's references from its dependents and keeps them.
"""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta
from typing import Any

from .clock import parse_rfc3339, rfc3339
from .errors import bad_request
from .resources import NAMESPACES, NODES, PODS, Obj, ResourceType, resource_for_object
from .store import Store, key_of

DEFAULT_GRACE_SECONDS = 30
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
_POLICIES = {"Background", "Foreground", "Orphan"}


def propagation_policy(options: Any) -> str:
    options = options if isinstance(options, dict) else {}
    policy = options.get("propagationPolicy")
    if policy is None:
        # The deprecated flag still decides when no policy is given.
        return "Orphan" if options.get("orphanDependents") else "Background"
    if policy not in _POLICIES:
        raise bad_request(f"Unsupported value: {policy!r}: supported values: {sorted(_POLICIES)}")
    return str(policy)


def _grace_seconds(resource: ResourceType, obj: Obj, options: Any) -> int:
    if resource is not PODS:
        return 0
    requested = options.get("gracePeriodSeconds") if isinstance(options, dict) else None
    spec = obj.get("spec") or {}
    grace = requested if requested is not None else spec.get("terminationGracePeriodSeconds")
    grace = DEFAULT_GRACE_SECONDS if grace is None else int(grace)
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0  # nothing runs it: no kubelet will wait for it
    # A negative period means "now" (1 s upstream, so the kubelet still sees it); keep 1.
    return max(grace, 1) if grace != 0 else 0


class Deleter:
    def __init__(self, store: Store) -> None:
        self.store = store
        # (end of grace period, namespace, name, uid) of Terminating pods.
        self._terminating: list[tuple[datetime, str, str, str]] = []
        # (namespace, name) of pods past their grace period on a node that is not Ready:
        # no kubelet confirms them; looked at again on every expire.
        self._unconfirmed: set[tuple[str, str]] = set()

    def delete(
        self, resource: ResourceType, stored: Obj, options: Any, *, dry_run: bool = False
    ) -> Obj:
        """The delete verb on ``stored``; returns what the API answers."""
        policy = propagation_policy(options)
        grace = _grace_seconds(resource, stored, options)
        metadata = stored["metadata"]
        finalizers = list(metadata.get("finalizers") or [])
        if metadata.get("deletionTimestamp"):
            return self._delete_again(resource, stored, grace, dry_run)
        if policy == "Orphan" and self.store.dependents(metadata.get("uid", "")):
            finalizers.append(ORPHAN)
        if policy == "Foreground" and self.store.dependents(metadata.get("uid", "")):
            finalizers.append(FOREGROUND)
        if grace == 0 and not finalizers:
            if not dry_run:
                self.finish(resource, stored)
            return stored
        now = self.store.clock.now()
        deleting = {**stored, "metadata": {**metadata}}
        deleting["metadata"]["deletionTimestamp"] = rfc3339(now + timedelta(seconds=grace))
        deleting["metadata"]["deletionGracePeriodSeconds"] = grace
        if finalizers:
            deleting["metadata"]["finalizers"] = finalizers
        if dry_run:
            return deleting
        deleting = self.store.put(resource, deleting)
        if grace:
            heapq.heappush(
                self._terminating,
                (now + timedelta(seconds=grace), *key_of(deleting), metadata.get("uid", "")),
            )
        if ORPHAN in finalizers:
            self._orphan(deleting)
            deleting = self._drop_finalizer(resource, deleting, ORPHAN)
        if FOREGROUND in finalizers:
            for dependent_resource, dependent in self.store.dependents(metadata.get("uid", "")):
                self.delete(dependent_resource, dependent, {"propagationPolicy": "Foreground"})
            deleting = self._settle_foreground(resource, deleting)
        return deleting

    def _delete_again(self, resource: ResourceType, stored: Obj, grace: int, dry_run: bool) -> Obj:
        """A delete of an object already being deleted: it may only shorten a pod's grace."""
        metadata = stored["metadata"]
        current = metadata.get("deletionGracePeriodSeconds")
        if resource is not PODS or current is None or grace >= current:
            return stored
        if grace == 0 and not metadata.get("finalizers"):
            if not dry_run:
                self.finish(resource, stored)
            return stored
        now = self.store.clock.now()
        shorter = {**stored, "metadata": {**metadata}}
        shorter["metadata"]["deletionTimestamp"] = rfc3339(now + timedelta(seconds=grace))
        shorter["metadata"]["deletionGracePeriodSeconds"] = grace
        if dry_run:
            return shorter
        heapq.heappush(self._terminating, (now + timedelta(seconds=grace), *key_of(stored), ""))
        return self.store.put(resource, shorter)

    def finish(self, resource: ResourceType, obj: Obj) -> None:
        """Removes ``obj`` for good and lets the garbage collector act on what it owned."""
        namespace, name = key_of(obj)
        self.store.remove(resource, namespace, name)
        if resource is NAMESPACES:
            self._empty_namespace(name)
        self._collect(obj)

    def expire(self) -> None:
        """Removes the Terminating pods whose grace period is over on the clock."""
        if not self._terminating and not self._unconfirmed:
            return
        now = self.store.clock.now()
        with self.store.lock:
            due = sorted(self._unconfirmed)
            self._unconfirmed.clear()
            while self._terminating and self._terminating[0][0] <= now:
                _, namespace, name, _ = heapq.heappop(self._terminating)
                due.append((namespace, name))
            for namespace, name in due:
                self._confirm(namespace, name, now)

    def _confirm(self, namespace: str, name: str, now: datetime) -> None:
        """The kubelet's confirmation of a pod whose grace period is over, if one answers."""
        pod = self.store.get(PODS, namespace, name)
        ends = parse_rfc3339((pod or {}).get("metadata", {}).get("deletionTimestamp", ""))
        if pod is None or ends is None or ends > now:
            return  # gone already, or its grace period was changed
        if not self._kubelet_answers(pod):
            self._unconfirmed.add((namespace, name))
            return
        if pod["metadata"].get("finalizers"):
            final = {**pod, "metadata": {**pod["metadata"]}}
            final["metadata"]["deletionGracePeriodSeconds"] = 0
            self.store.put(PODS, final)
        else:
            self.finish(PODS, pod)

    def _kubelet_answers(self, pod: Obj) -> bool:
        """Whether a kubelet is there to confirm the pod's end: its node is Ready, or gone
        (the pod garbage collector then deletes the orphan)."""
        node = self.store.get(NODES, "", str((pod.get("spec") or {}).get("nodeName") or ""))
        if node is None:
            return True
        conditions = (node.get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    # --- the garbage collector -----------------------------------------------------------

    def _collect(self, gone: Obj) -> None:
        uid = gone["metadata"].get("uid", "")
        for resource, dependent in self.store.dependents(uid):
            owners = dependent["metadata"].get("ownerReferences") or []
            alive = [o for o in owners if o.get("uid") != uid and self.store.by_uid(o["uid"])]
            if alive:
                kept = [o for o in owners if o.get("uid") != uid]
                self.store.put(resource, _with_owners(dependent, kept))
            else:
                self.delete(resource, dependent, {"propagationPolicy": "Background"})
        # A foreground deletion waits for its dependents: this may have been the last one.
        for owner in gone["metadata"].get("ownerReferences") or []:
            found = self.store.by_uid(owner.get("uid", ""))
            if found is not None and FOREGROUND in (found["metadata"].get("finalizers") or []):
                owner_resource = resource_for_object(found["apiVersion"], found["kind"])
                if owner_resource is not None:
                    self._settle_foreground(owner_resource, found)

    def _orphan(self, owner: Obj) -> None:
        uid = owner["metadata"].get("uid", "")
        for resource, dependent in self.store.dependents(uid):
            kept = [
                o for o in dependent["metadata"].get("ownerReferences") or [] if o["uid"] != uid
            ]
            self.store.put(resource, _with_owners(dependent, kept))

    def _settle_foreground(self, resource: ResourceType, owner: Obj) -> Obj:
        if self.store.dependents(owner["metadata"].get("uid", "")):
            return owner
        return self._drop_finalizer(resource, owner, FOREGROUND)

    def _drop_finalizer(self, resource: ResourceType, obj: Obj, finalizer: str) -> Obj:
        left = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
        ends = parse_rfc3339(obj["metadata"].get("deletionTimestamp", ""))
        if not left and (ends is None or ends <= self.store.clock.now()):
            self.finish(resource, obj)
            return obj
        updated = {**obj, "metadata": {**obj["metadata"], "finalizers": left}}
        if not left:
            del updated["metadata"]["finalizers"]
        return self.store.put(resource, updated)

    def _empty_namespace(self, namespace: str) -> None:
        """The namespace controller's work, at once: everything in the namespace goes."""
        for resource, obj in self.store.all_objects():
            if resource.namespaced and obj["metadata"].get("namespace") == namespace:
                self.store.remove(resource, namespace, obj["metadata"]["name"])


def _with_owners(obj: Obj, owners: list[Obj]) -> Obj:
    metadata = {**obj["metadata"], "ownerReferences": owners}
    if not owners:
        del metadata["ownerReferences"]
    return {**obj, "metadata": metadata}

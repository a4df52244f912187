"""PodDisruptionBudget status, computed as the disruption controller
(``pkg/controller/disruption/disruption.go``) does.

Expected pods follow ``getExpectedPodCount``: with ``maxUnavailable`` or a percentage
``minAvailable`` they are the sum of the scales of the selected pods' controllers
(``getExpectedScale``: a ReplicaSet's ``spec.replicas``, or its Deployment's when one
controls it, a StatefulSet's; pods without a controller are left out); with an integer
``minAvailable`` they are the number of selected pods. A pod whose controller cannot be
found, or does not implement the scale subresource (a DaemonSet, a Job), makes the sync
fail, and the controller's fail-safe then allows no disruption.

A cluster file is a copy, and a copy may lack the controllers (an export of
``nodes,pods,pdb`` only). An emulator told to (``Store.exported_scales``, filled by
``Emulator.trust_exported_pdb_status``) then takes the expected pods the real controller
computed, from the PDB's exported ``status.expectedPods``, instead of failing safe: what the
cluster itself said, rather than a recomputation from less.
"""

from __future__ import annotations

import math
from typing import Any, cast

from .resources import (
    DEPLOYMENTS,
    PDBS,
    PODS,
    REPLICASETS,
    REPLICATIONCONTROLLERS,
    STATEFULSETS,
    Obj,
    ResourceType,
)
from .selectors import label_selector_from_object, labels_of
from .store import Store


def is_ready(pod: Obj) -> bool:
    """Ready=True; a pod without any condition counts as ready (files often omit them)."""
    conditions = pod.get("status", {}).get("conditions")
    if not conditions:
        return True
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_healthy(pod: Obj) -> bool:
    """What the disruption controller counts in currentHealthy: running, ready, not deleting."""
    return (
        pod.get("status", {}).get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
        and is_ready(pod)
    )


def scaled_value(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)."""
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return math.ceil(int(value[:-1]) * total / 100)
    raise ValueError(f"invalid value for IntOrString: {value!r} is not an int or a percentage")


def selected_pods(store: Store, pdb: Obj) -> list[Obj]:
    raw = pdb.get("spec", {}).get("selector")
    selector = label_selector_from_object(raw)
    namespace = pdb["metadata"].get("namespace", "")
    narrowed = store.pods_labelled(namespace, (raw or {}).get("matchLabels") or {})
    pods = narrowed if narrowed is not None else store.candidates(PODS, namespace, {})
    return [p for p in pods if selector.matches(labels_of(p))]


def controller_of(obj: Obj) -> Obj | None:
    """metav1.GetControllerOf: the ownerReference with ``controller: true``."""
    for owner in obj["metadata"].get("ownerReferences") or []:
        if owner.get("controller"):
            return dict(owner)
    return None


def _owned(store: Store, resource: ResourceType, ref: Obj, namespace: str) -> Obj | None:
    """The controller ``ref`` names, when it is of ``resource`` and its uid matches."""
    group = ref.get("apiVersion", "").rpartition("/")[0]
    if ref.get("kind") != resource.kind or group not in (resource.group, "extensions"):
        return None
    found = store.get(resource, namespace, ref.get("name", ""))
    return found if found is not None and found["metadata"].get("uid") == ref.get("uid") else None


class MissingController(ValueError):
    """A pod names a controller that is not there (``found no controllers for pod``)."""


def _replicas(obj: Obj) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)  # the apps/v1 default


def _controller_scale(store: Store, ref: Obj, namespace: str) -> tuple[str, int] | None:
    """The finders of the disruption controller, in its order."""
    replica_set = _owned(store, REPLICASETS, ref, namespace)
    if replica_set is not None:
        owner = controller_of(replica_set)
        if owner is None or owner.get("kind") != "Deployment":
            return replica_set["metadata"]["uid"], _replicas(replica_set)
        deployment = _owned(store, DEPLOYMENTS, owner, namespace)
        if deployment is not None:
            return deployment["metadata"]["uid"], _replicas(deployment)
        return None
    # getPodReplicationController, before getPodStatefulSet as in finders().
    replication_controller = _owned(store, REPLICATIONCONTROLLERS, ref, namespace)
    if replication_controller is not None:
        return replication_controller["metadata"]["uid"], _replicas(replication_controller)
    stateful_set = _owned(store, STATEFULSETS, ref, namespace)
    if stateful_set is not None:
        return stateful_set["metadata"]["uid"], _replicas(stateful_set)
    # getScaleController: other kinds are asked for their scale subresource.
    kind, group = ref.get("kind", ""), ref.get("apiVersion", "").rpartition("/")[0]
    if (kind, group) in {("DaemonSet", "apps"), ("Job", "batch")}:
        raise ValueError(f"{kind.lower()}s.{group} does not implement the scale subresource")
    return None


def expected_scale(store: Store, pods: list[Obj]) -> int:
    """getExpectedScale: the sum of the scales of the pods' controllers."""
    scales: dict[str, int] = {}
    for pod in pods:
        ref = controller_of(pod)
        if ref is None:
            continue  # unmanaged pods are only reported (an event), not counted
        if ref.get("uid") in scales:
            continue
        found = _controller_scale(store, ref, pod["metadata"].get("namespace", ""))
        if found is None:
            raise MissingController(f'found no controllers for pod "{pod["metadata"]["name"]}"')
        scales[found[0]] = found[1]
    return sum(scales.values())


def needs_scale(pdb: Obj) -> bool:
    """Whether the PDB's expected pods come from its pods' controllers (getExpectedPodCount)."""
    spec = pdb.get("spec") or {}
    min_available = spec.get("minAvailable")
    return spec.get("maxUnavailable") is not None or (
        min_available is not None and not isinstance(min_available, int)
    )


def missing_controllers(store: Store, pdb: Obj) -> list[str]:
    """``Kind namespace/name`` of each controller the PDB's pods name that is not in the store
    (empty when the PDB does not need them or they are all there)."""
    if not needs_scale(pdb):
        return []
    missing: set[str] = set()
    for pod in selected_pods(store, pdb):
        ref = controller_of(pod)
        if ref is None:
            continue
        namespace = pod["metadata"].get("namespace", "")
        try:
            found = _controller_scale(store, ref, namespace)
        except ValueError:
            continue  # a kind without scale: the real controller fails on it too
        if found is None:
            missing.add(f"{ref.get('kind')} {namespace}/{ref.get('name')}")
    return sorted(missing)


def _pod_scale(store: Store, pdb: Obj, pods: list[Obj]) -> int:
    """getExpectedScale, or the exported expected pods where a controller is missing and the
    store was told to trust them."""
    try:
        return expected_scale(store, pods)
    except MissingController:
        exported = store.exported_scales.get(pdb["metadata"].get("uid", ""))
        if exported is None:
            raise
        return exported


def compute_status(pdb: Obj, pods: list[Obj], store: Store) -> Obj:
    spec = pdb.get("spec", {})
    generation = pdb["metadata"].get("generation", 1)
    healthy = sum(1 for pod in pods if is_healthy(pod))
    expected = len(pods)
    try:
        if spec.get("maxUnavailable") is not None:
            expected = _pod_scale(store, pdb, pods)
            desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected))
        elif isinstance(spec.get("minAvailable"), int):
            desired = spec["minAvailable"]
        elif spec.get("minAvailable") is not None:
            expected = _pod_scale(store, pdb, pods)
            desired = scaled_value(spec["minAvailable"], expected)
        else:
            desired = 0
    except ValueError as error:
        # The controller's fail-safe: nothing may be disrupted while the PDB cannot be computed.
        return _status(generation, 0, healthy, 0, expected, "SyncFailed", str(error))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
    return _status(generation, allowed, healthy, desired, expected, reason, "")


def _status(
    generation: int, allowed: int, healthy: int, desired: int, expected: int, reason: str, msg: str
) -> Obj:
    return {
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True" if allowed > 0 else "False",
                "reason": reason,
                "message": msg,
                "observedGeneration": generation,
                "lastTransitionTime": "",
            }
        ],
    }


def refreshed(store: Store, pdb: Obj) -> Obj:
    """The PDB with its status brought up to date, written back when it changed.

    Like the disruption controller's status writes, a change bumps the resourceVersion.
    Nothing but a write changes a status (a pod, a controller, the PDB: each bumps the
    store's revision), so a PDB read again at the same revision is answered from
    ``store.derived`` rather than matched against every pod of its namespace again: a
    simulation reading 200 PDBs between two writes pays for one computation each.
    """
    with store.lock:
        meta = pdb["metadata"]
        key = ("pdb", meta.get("namespace", ""), meta.get("name"))
        version = meta.get("resourceVersion")
        cached = store.derived.get(key)
        if cached is not None and cached[0] == (store.revision, version):
            return cast(Obj, cached[1])
        result = _recomputed(store, pdb)
        store.derived[key] = ((store.revision, result["metadata"].get("resourceVersion")), result)
        return result


def _recomputed(store: Store, pdb: Obj) -> Obj:
    with store.lock:
        status = compute_status(pdb, selected_pods(store, pdb), store)
        old = pdb.get("status") or {}
        old_condition = (old.get("conditions") or [{}])[0]
        new_condition = status["conditions"][0]
        if old_condition.get("status") == new_condition["status"]:
            new_condition["lastTransitionTime"] = old_condition.get("lastTransitionTime", "")
        if not new_condition["lastTransitionTime"]:
            new_condition["lastTransitionTime"] = store.now_rfc3339()
        if status == old:
            return pdb
        return store.put(PDBS, {**pdb, "metadata": dict(pdb["metadata"]), "status": status})

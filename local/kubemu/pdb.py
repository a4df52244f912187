"""PodDisruptionBudget status, computed as the disruption controller does.

The emulator has no controllers, so the number of expected pods is the number of pods the
PDB selects (the real controller asks the pods' controllers for their scale).
"""

from __future__ import annotations

import math
from typing import Any

from .resources import PDBS, PODS, Obj
from .selectors import label_selector_from_object, labels_of
from .store import Store, now_rfc3339


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
    selector = label_selector_from_object(pdb.get("spec", {}).get("selector"))
    namespace = pdb["metadata"].get("namespace", "")
    return [p for p in store.candidates(PODS, namespace, {}) if selector.matches(labels_of(p))]


def compute_status(pdb: Obj, pods: list[Obj]) -> Obj:
    spec = pdb.get("spec", {})
    generation = pdb["metadata"].get("generation", 1)
    expected = len(pods)
    healthy = sum(1 for pod in pods if is_healthy(pod))
    try:
        if spec.get("maxUnavailable") is not None:
            desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected))
        elif spec.get("minAvailable") is not None:
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
    """
    with store.lock:
        status = compute_status(pdb, selected_pods(store, pdb))
        old = pdb.get("status") or {}
        old_condition = (old.get("conditions") or [{}])[0]
        new_condition = status["conditions"][0]
        if old_condition.get("status") == new_condition["status"]:
            new_condition["lastTransitionTime"] = old_condition.get("lastTransitionTime", "")
        if not new_condition["lastTransitionTime"]:
            new_condition["lastTransitionTime"] = now_rfc3339()
        if status == old:
            return pdb
        return store.put(PDBS, {**pdb, "metadata": dict(pdb["metadata"]), "status": status})

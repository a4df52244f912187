"""The pods/eviction subresource, following pkg/registry/core/pod/storage/eviction.go.

Unhealthy pods follow the PDB's `unhealthyPodEvictionPolicy`: with the default
(IfHealthyBudget) a running but not-ready pod may be evicted only while the budget is met;
with AlwaysAllow it always may. Pending, Succeeded, Failed and deleting pods skip the PDB
check entirely, as upstream.
"""

from __future__ import annotations

from typing import Any

from . import pdb as pdbs
from .errors import ApiError, bad_request, success_status
from .operations import Operations, Write
from .resources import PDBS, PODS, Obj
from .selectors import label_selector_from_object, labels_of

_PHASES_IGNORING_PDB = frozenset({"Pending", "Succeeded", "Failed"})


def evict(
    operations: Operations, namespace: str, name: str, body: Any, dry_run: bool = False
) -> Obj:
    if not isinstance(body, dict):
        raise bad_request("the body must be an Eviction object")
    named = (body.get("metadata") or {}).get("name")
    if named and named != name:
        raise bad_request("name in URL does not match name in Eviction object")
    options = body.get("deleteOptions")
    if isinstance(options, dict) and "All" in (options.get("dryRun") or []):
        dry_run = True
    write = Write(dry_run=dry_run)
    store = operations.store
    with store.lock:
        pod = operations.get(PODS, namespace, name)
        if _can_ignore_pdb(pod):
            operations.delete(PODS, namespace, name, options, write)
            return success_status(201)
        budgets = _budgets_for(operations, pod)
        if len(budgets) > 1:
            message = (
                "This pod has more than one PodDisruptionBudget, which the eviction subresource"
                " does not support."
            )
            raise ApiError(
                500,
                f"Internal error occurred: {message}",
                details={"causes": [{"message": message}]},
            )
        if budgets:
            _check_budget(pod, pdbs.refreshed(store, budgets[0]))
        operations.delete(PODS, namespace, name, options, write)
        return success_status(201)


def _can_ignore_pdb(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") in _PHASES_IGNORING_PDB or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def _budgets_for(operations: Operations, pod: Obj) -> list[Obj]:
    namespace = pod["metadata"]["namespace"]
    return [
        budget
        for budget in operations.store.candidates(PDBS, namespace, {})
        if label_selector_from_object(budget.get("spec", {}).get("selector")).matches(
            labels_of(pod)
        )
    ]


def _check_budget(pod: Obj, budget: Obj) -> None:
    """Raises the 429 the API answers when evicting `pod` would break `budget`."""
    status = budget["status"]
    if not pdbs.is_ready(pod):
        policy = budget.get("spec", {}).get("unhealthyPodEvictionPolicy", "IfHealthyBudget")
        if policy == "AlwaysAllow":
            return
        if status["currentHealthy"] >= status["desiredHealthy"] > 0:
            return
    if status["disruptionsAllowed"] > 0:
        return
    raise ApiError(
        429,
        "Cannot evict pod as it would violate the pod's disruption budget.",
        details={
            "causes": [
                {
                    # metav1.StatusCause.Type is serialised under the JSON name "reason".
                    "reason": "DisruptionBudget",
                    "message": (
                        f"The disruption budget {budget['metadata']['name']} needs"
                        f" {status['desiredHealthy']} healthy pods and has"
                        f" {status['currentHealthy']} currently"
                    ),
                }
            ]
        },
    )

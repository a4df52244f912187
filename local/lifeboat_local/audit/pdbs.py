"""Checks on PodDisruptionBudgets: budgets that never let a pod go, budgets that block now,
pods two budgets select, budgets that select nothing, and unhealthy pods a budget holds.

The arithmetic is the disruption controller's (``expected``); what an eviction does with it is
the Eviction API's (pkg/registry/core/pod/storage/eviction.go): a pod selected by more than
one PDB is refused with 500, a Running pod is refused with 429 while its PDB's
``disruptionsAllowed`` is 0, and Pending or finished pods skip the PDB check.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from functools import partial

from lifeboat.kube import nodes
from lifeboat.model.objects import Obj
from lifeboat_local.audit.expected import PdbState, is_ready, pdb_state
from lifeboat_local.audit.findings import Issue
from lifeboat_local.audit.view import ClusterView, key, namespace_of, pod_phase, ref

MAX_NAMES = 3  # pods named in a message before "(+N more)"


def names(pods: Sequence[Obj]) -> str:
    listed = [nodes.name_of(p) for p in pods[:MAX_NAMES]]
    more = f" (+{len(pods) - MAX_NAMES} more)" if len(pods) > MAX_NAMES else ""
    return ", ".join(listed) + more


def _states(view: ClusterView) -> Iterator[tuple[Obj, PdbState]]:
    """Each PDB with its state, computed once per audit whatever the number of checks."""
    for pdb in view.inventory.pdbs:
        yield pdb, view.memo(("pdb-state", key(pdb)), partial(pdb_state, view, pdb))


def never_allows_eviction(view: ClusterView) -> Iterator[Issue]:
    """PDBs that allow no eviction even when all their pods run healthy at full scale."""
    for pdb, state in _states(view):
        if not state.selected or state.steady_allowed != 0:
            continue
        message, fix = _why_never(state)
        yield Issue(ref(pdb), message, fix)


def _why_never(state: PdbState) -> tuple[str, str]:
    """(message, fix) for a PDB that never allows an eviction."""
    controllers = ", ".join(state.scale.controllers) if state.scale else ""
    if state.invalid_value:
        return (
            f"{state.problem}: the API server refuses it, and the disruption controller "
            "allows no eviction under it",
            "use an integer or a percentage between 0% and 100%",
        )
    if state.problem is not None:
        return (
            f"{state.rule}: the disruption controller cannot count the expected pods "
            f"({state.problem}), so it fails safe (SyncFailed) and allows no eviction",
            "use an integer minAvailable (counted from the pods themselves), or drop the PDB",
        )
    if state.field is None:
        return (
            "neither minAvailable nor maxUnavailable: the disruption controller expects 0 pods "
            "and then allows no eviction (policy/v1 sets no default)",
            "set maxUnavailable: 1",
        )
    if state.expected == 0:
        return (
            f"{state.rule}: its pods have no controller, and the disruption controller counts "
            "only controllers' scale for maxUnavailable and percentages: expected 0, no "
            "eviction allowed",
            "use an integer minAvailable for pods without a controller",
        )
    if state.field == "maxUnavailable":
        return (
            f"{state.rule}: no pod may ever be unavailable"
            + (f" ({controllers})" if controllers else ""),
            "allow at least one: maxUnavailable: 1 (or a percentage of at least one pod)",
        )
    rounding = ""
    if isinstance(state.value, str) and state.expected is not None:
        exact = int(state.value.rstrip("%")) * state.expected % 100 == 0
        verb = "is" if exact else "rounds up to"
        rounding = f" ({state.value} of {state.expected} {verb} {state.desired})"
    return (
        f"{state.rule} needs {state.desired} healthy pod(s) and its pods number "
        f"{state.steady_pods} at full scale{rounding}"
        + (f": {controllers}" if controllers else ""),
        f"run more than {state.desired} replica(s), or use maxUnavailable: 1 instead",
    )


def expected_pods_unknown(view: ClusterView) -> Iterator[Issue]:
    """PDBs over pods of custom controllers: their scale subresource decides, unseen here."""
    for pdb, state in _states(view):
        if state.scale is not None and state.scale.uncertain and state.problem is None:
            kinds = ", ".join(state.scale.uncertain)
            yield Issue(
                ref(pdb),
                f"{state.rule}: the expected pods come from the scale subresource of {kinds}; "
                "if it has none, the disruption controller allows no eviction (SyncFailed)",
                "check the PDB's DisruptionAllowed condition; use an integer minAvailable if "
                "it says SyncFailed",
            )


def allows_no_eviction_now(view: ClusterView) -> Iterator[Issue]:
    """PDBs that would allow evictions at full health but allow none now."""
    for pdb, state in _states(view):
        if state.problem is None and state.allowed_now == 0 and (state.steady_allowed or 0) > 0:
            yield Issue(
                ref(pdb),
                f"{state.rule}: allows no eviction now: {state.healthy} healthy, "
                f"{state.desired} required of {state.expected} expected; a drain stalls on it",
                "bring its pods back to Ready (or let the rollout finish) before rotating",
            )


def pods_in_several_pdbs(view: ClusterView) -> Iterator[Issue]:
    """Pods more than one PDB selects: the Eviction API refuses to evict them (500)."""
    groups: dict[tuple[str, ...], list[Obj]] = defaultdict(list)
    budgets: dict[tuple[str, ...], list[Obj]] = {}
    for pod in view.live_pods:
        if pod_phase(pod) == "Pending" or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue  # the Eviction API does not consult PDBs for these
        namespace = namespace_of(pod) or ""
        selecting = view.pdbs_of(pod)
        if len(selecting) > 1:
            group = (namespace, *sorted(nodes.name_of(p) for p in selecting))
            groups[group].append(pod)
            budgets[group] = sorted(selecting, key=nodes.name_of)
    for group, pods in sorted(groups.items()):
        first, *others = budgets[group]
        also = ", ".join(nodes.name_of(p) for p in others)
        yield Issue(
            ref(first),
            f"pod(s) {names(pods)} are also selected by PodDisruptionBudget {also}: the Eviction "
            "API refuses to evict a pod with more than one PDB (500), so drains stall on them",
            "make the PDB selectors disjoint, so each pod has exactly one PDB",
        )


def matches_no_pod(view: ClusterView) -> Iterator[Issue]:
    """PDBs that select no pod: a typo in the selector leaves the workload unprotected."""
    for pdb in view.inventory.pdbs:
        if view.pods_selected_by(pdb):
            continue
        selector = (pdb.get("spec") or {}).get("selector")
        what = "has no selector: selects no pod" if selector is None else "selects no pod"
        yield Issue(
            ref(pdb),
            f"{what} in namespace {namespace_of(pdb)}: it protects nothing",
            "make its selector match the workload's pod labels, or delete it",
        )


def unhealthy_pods_held(view: ClusterView) -> Iterator[Issue]:
    """Running but not Ready pods under a PDB without ``unhealthyPodEvictionPolicy:
    AlwaysAllow``: with the default (IfHealthyBudget) they may be evicted only while the
    budget is met (currentHealthy >= desiredHealthy > 0)."""
    for pdb, state in _states(view):
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
        if policy != "IfHealthyBudget":
            continue
        unhealthy = [
            pod
            for pod in state.selected
            if pod_phase(pod) == "Running"
            and not is_ready(pod)
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
        ]
        if not unhealthy:
            continue
        desired = state.desired
        met = desired is not None and state.healthy >= desired > 0
        now = "met now" if met else "not met now: a drain stalls on them"
        yield Issue(
            ref(pdb),
            f"{len(unhealthy)} running pod(s) not Ready ({names(unhealthy)}); with "
            f"unhealthyPodEvictionPolicy {policy} they may be evicted only while the budget is "
            f"met ({state.healthy} healthy of {desired if desired is not None else '?'}): {now}",
            "set spec.unhealthyPodEvictionPolicy: AlwaysAllow, so broken pods never block a drain",
        )

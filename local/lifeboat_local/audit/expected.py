"""What a PodDisruptionBudget expects and allows: the Kubernetes disruption controller's
arithmetic (kubernetes pkg/controller/disruption), as pure functions over a ``ClusterView``.

Mirrored rules:

* ``getExpectedPodCount``: with ``maxUnavailable``, or ``minAvailable`` as a percentage, the
  expected count is ``getExpectedScale``: the sum of the scales of the controllers of the
  selected pods, each counted once. With an integer ``minAvailable`` it is simply the number
  of selected pods. With neither field it is 0 (policy/v1 defaults neither).
* ``getExpectedScale``: a pod without a controller is skipped ("unmanaged", not counted). A
  ReplicaSet controlled by a Deployment counts the Deployment's ``spec.replicas``; a
  ReplicaSet, StatefulSet or ReplicationController its own. Any other controller is asked for
  its ``scale`` subresource: DaemonSets, Jobs and Nodes (mirror pods) have none, and a
  controller that cannot be found fails too; either way the controller's sync fails and its
  fail-safe sets ``disruptionsAllowed`` to 0 (condition ``SyncFailed``).
* Percentages round up (``intstr.GetScaledValueFromIntOrPercent(..., roundUp=true)``).
* ``countHealthyPods``: selected pods not being deleted and Ready.
* ``updatePdbStatus``: allowed = healthy - desired, and 0 when that is negative or when the
  expected count is 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from lifeboat.kube import nodes
from lifeboat.model.objects import Obj
from lifeboat_local.audit.view import (
    ClusterView,
    controller_of,
    is_terminal,
    namespace_of,
    pod_phase,
)

# Controllers the disruption controller reads spec.replicas of (its dedicated finders, and
# Deployment through the scale subresource when it directly controls a pod).
_SCALED_KINDS: Final = frozenset(
    {"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"}
)
# Built-in controllers without a scale subresource: getScaleController's
# "<resource> does not implement the scale subresource".
_NO_SCALE: Final = {"DaemonSet": "daemonsets.apps", "Job": "jobs.batch", "Node": "nodes"}
_PERCENT: Final = re.compile(r"^([0-9]+)%$")


@dataclass(frozen=True)
class Scale:
    """``getExpectedScale`` for the pods a PDB selects.

    ``count`` is None when the disruption controller cannot compute it: ``problem`` says why in
    its words, or ``uncertain`` names controllers of custom kinds whose scale subresource the
    audit cannot see. ``estimated``: some controllers are of a kind the source did not give, so
    their scale is the number of their live pods.
    """

    count: int | None
    controllers: tuple[str, ...] = ()
    unmanaged: tuple[str, ...] = ()
    problem: str | None = None
    uncertain: tuple[str, ...] = ()
    estimated: bool = False


def replicas(workload: Obj) -> int:
    """``spec.replicas``; the API server defaults an unset value to 1."""
    value = (workload.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def expected_scale(view: ClusterView, pods: Sequence[Obj]) -> Scale:
    """The disruption controller's ``getExpectedScale`` over ``pods``."""
    scales: dict[tuple[str, str], tuple[int, str]] = {}  # controller identity -> (scale, label)
    unmanaged: list[str] = []
    uncertain: list[str] = []
    estimated = False
    for pod in pods:
        owner = controller_of(pod)
        if owner is None:
            unmanaged.append(nodes.name_of(pod))
            continue
        namespace = namespace_of(pod) or ""
        kind, name = str(owner.get("kind")), str(owner.get("name"))
        described = f"{kind} {namespace}/{name}"
        if kind in _NO_SCALE:
            problem = f"{described}: {_NO_SCALE[kind]} does not implement the scale subresource"
            return Scale(None, problem=problem)
        if kind not in _SCALED_KINDS:
            # A custom controller: the real controller asks its scale subresource, which the
            # audit cannot see, and fails the PDB if it has none.
            uncertain.append(described)
            continue
        if not view.inventory.reads(kind):
            count = len(view.pods_by_controller.get((namespace, kind, name), ()))
            scales[(kind, f"{namespace}/{name}")] = (count, f"{described}: {count} pod(s)")
            estimated = True
            continue
        found = _scaled_controller(view, namespace, owner)
        if found is None:
            return Scale(
                None,
                problem=f'found no controllers for pod "{nodes.name_of(pod)}"'
                f" ({described} not found)",
            )
        identity, scale, label = found
        scales[identity] = (scale, label)
    labels = tuple(sorted(label for _, label in scales.values()))
    if uncertain:
        return Scale(None, labels, tuple(unmanaged), uncertain=tuple(sorted(set(uncertain))))
    count = sum(scale for scale, _ in scales.values())
    return Scale(count, labels, tuple(unmanaged), estimated=estimated)


def _scaled_controller(
    view: ClusterView, namespace: str, owner: Obj
) -> tuple[tuple[str, str], int, str] | None:
    """(identity, scale, label) of the controller ``owner`` points at, as the finders
    getPodReplicationController, getPodDeployment, getPodReplicaSet and getPodStatefulSet
    (and getScaleController for a ReplicaSet whose Deployment is gone) find it."""
    kind, name, uid = str(owner.get("kind")), str(owner.get("name")), owner.get("uid")
    workload = view.workload(kind, namespace, name, uid)
    if workload is None:
        return None
    if kind == "ReplicaSet":
        deployment_ref = controller_of(workload)
        if deployment_ref is not None and deployment_ref.get("kind") == "Deployment":
            deployment = view.workload(
                "Deployment", namespace, str(deployment_ref.get("name")), deployment_ref.get("uid")
            )
            if deployment is not None:
                workload, kind = deployment, "Deployment"
    scale = replicas(workload)
    label = f"{kind} {namespace}/{nodes.name_of(workload)}: {scale} replica(s)"
    return (kind, f"{namespace}/{nodes.name_of(workload)}"), scale, label


# ---------------------------------------------------------------------------------------------
# One PDB


def is_ready(pod: Obj) -> bool:
    """podutil.IsPodReady: condition Ready=True. A Running pod a file gives without any
    condition counts as ready (files often omit conditions; the emulator does the same)."""
    conditions = (pod.get("status") or {}).get("conditions")
    if not conditions:
        return pod_phase(pod) == "Running"
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_healthy(pod: Obj) -> bool:
    """countHealthyPods: not being deleted, and Ready."""
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and is_ready(pod)


class InvalidBudgetValue(ValueError):
    """A minAvailable/maxUnavailable the API server would refuse."""


def scaled(value: Any, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true), after the API's own
    validation (ValidatePositiveIntOrPercent, IsNotMoreThan100Percent)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidBudgetValue(f"{value!r} is not an integer or a percentage")
    if isinstance(value, int):
        if value < 0:
            raise InvalidBudgetValue(f"{value} must be greater than or equal to 0")
        return value
    match = _PERCENT.match(value)
    if match is None:
        raise InvalidBudgetValue(f"{value!r} must be an integer or percentage (e.g '5%')")
    percent = int(match.group(1))
    if percent > 100:
        raise InvalidBudgetValue(f"{value!r} must not be greater than 100%")
    return math.ceil(percent * total / 100)


@dataclass(frozen=True)
class PdbState:
    """A PDB as the disruption controller sees it now, and in the steady state where every
    controller runs its full scale and every pod is healthy.

    ``field`` is "maxUnavailable", "minAvailable" or None (neither set) and ``value`` its
    value. ``problem`` set: no eviction is allowed now or ever, because the controller's sync
    fails (``invalid_value`` False) or the API server would refuse the value (True).
    ``steady_allowed`` None: the audit cannot tell (custom controllers' scale).
    ``scale`` is None for an integer ``minAvailable`` (expected = the selected pods).
    """

    field: str | None
    value: Any
    selected: tuple[Obj, ...]
    scale: Scale | None
    expected: int | None
    desired: int | None
    healthy: int
    allowed_now: int
    steady_pods: int | None
    steady_allowed: int | None
    problem: str | None = None
    invalid_value: bool = False

    @property
    def rule(self) -> str:
        """``maxUnavailable 1``, ``minAvailable 50%``, or that neither is set."""
        return (
            f"{self.field} {self.value}"
            if self.field
            else "neither minAvailable nor maxUnavailable"
        )


def pdb_state(view: ClusterView, pdb: Obj) -> PdbState:
    """Evaluate one PDB against the pods it selects."""
    spec = pdb.get("spec") or {}
    selected = tuple(view.pods_selected_by(pdb))
    healthy = sum(1 for pod in selected if is_healthy(pod))
    max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
    if max_unavailable is not None:
        field, value = "maxUnavailable", max_unavailable
    elif min_available is not None:
        field, value = "minAvailable", min_available
    else:  # getExpectedPodCount leaves expected at 0, and updatePdbStatus then allows nothing
        return PdbState(
            None, None, selected, scale=None, expected=0, desired=0, healthy=healthy,
            allowed_now=0, steady_pods=None, steady_allowed=0,
        )  # fmt: skip
    by_scale = field == "maxUnavailable" or isinstance(value, str)
    scale = expected_scale(view, selected) if by_scale else None
    steady = _steady_pods(view, selected, scale)

    def failed(problem: str | None, invalid_value: bool = False) -> PdbState:
        """No eviction ever (a problem), or the audit cannot tell (None)."""
        return PdbState(
            field, value, selected, scale, expected=None, desired=None, healthy=healthy,
            allowed_now=0, steady_pods=steady, steady_allowed=None if problem is None else 0,
            problem=problem, invalid_value=invalid_value,
        )  # fmt: skip

    steady_allowed: int | None
    try:
        if scale is None:  # integer minAvailable: expected = the selected pods
            desired, expected = scaled(value, 0), len(selected)
            if steady is None:  # no readable scale (DaemonSet pods...): the pods as they are
                steady = sum(1 for pod in selected if not is_terminal(pod))
            steady_allowed = _allowed(steady, desired, steady)
        elif scale.count is None:
            return failed(scale.problem)
        else:
            expected = scale.count
            desired = (
                max(0, expected - scaled(value, expected))
                if field == "maxUnavailable"
                else scaled(value, expected)
            )
            steady_allowed = None if steady is None else _allowed(steady, desired, expected)
    except InvalidBudgetValue as error:
        return failed(f"{field} {error}", invalid_value=True)
    return PdbState(
        field, value, selected, scale, expected=expected, desired=desired, healthy=healthy,
        allowed_now=_allowed(healthy, desired, expected), steady_pods=steady,
        steady_allowed=steady_allowed,
    )  # fmt: skip


def _allowed(healthy: int, desired: int, expected: int) -> int:
    """updatePdbStatus: healthy - desired, and 0 when negative or when nothing is expected."""
    return 0 if expected <= 0 else max(0, healthy - desired)


def _steady_pods(view: ClusterView, selected: Sequence[Obj], scale: Scale | None) -> int | None:
    """How many of the selected pods exist once their controllers run their full scale: the
    controllers' scale plus the live pods without a controller (None: unknown scale)."""
    if scale is None:
        scale = expected_scale(view, selected)
    if scale.count is None:
        return None
    unmanaged_live = sum(
        1 for pod in selected if controller_of(pod) is None and not is_terminal(pod)
    )
    return scale.count + unmanaged_live

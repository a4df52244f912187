"""The disruption controller's arithmetic (kubernetes pkg/controller/disruption:
getExpectedPodCount, getExpectedScale and its finders, countHealthyPods, updatePdbStatus)."""

from __future__ import annotations

from typing import Any

import pytest

from lifeboat_local.audit.expected import InvalidBudgetValue, pdb_state, scaled

from .audit_builders import deployment_with_rs, owner, pdb, pod, view, workload


def web_pods(count: int, rs: str = "web-rs", ready: bool = True) -> list[dict[str, Any]]:
    return [pod(f"web-{i}", controller=owner("ReplicaSet", rs), ready=ready) for i in range(count)]


def test_get_expected_scale_reads_the_deployment_not_the_pods() -> None:
    """maxUnavailable: expected = the Deployment's spec.replicas (5), though 3 pods exist."""
    dep, rs = deployment_with_rs("web", replicas=5)
    budget = pdb("web", maxUnavailable=1)
    state = pdb_state(view(dep, rs, budget, *web_pods(3)), budget)
    assert (state.expected, state.desired, state.healthy) == (5, 4, 3)
    assert state.allowed_now == 0  # 3 healthy < 4 desired
    assert state.steady_allowed == 1  # at full scale: 5 healthy - 4
    assert state.scale is not None and state.scale.controllers == (
        "Deployment shop/web: 5 replica(s)",
    )


def test_get_expected_scale_counts_each_controller_once() -> None:
    dep, rs = deployment_with_rs("web", replicas=3)
    budget = pdb("web", maxUnavailable="34%")
    state = pdb_state(view(dep, rs, budget, *web_pods(3)), budget)
    assert state.expected == 3  # not 9
    assert state.desired == 3 - 2  # 34% of 3 = 1.02, rounded up to 2


def test_integer_min_available_expects_the_selected_pods() -> None:
    """getExpectedPodCount: an integer minAvailable sets expectedCount = len(pods)."""
    dep, rs = deployment_with_rs("web", replicas=5)
    budget = pdb("web", minAvailable=2)
    state = pdb_state(view(dep, rs, budget, *web_pods(3)), budget)
    assert (state.expected, state.desired, state.allowed_now) == (3, 2, 1)
    assert state.scale is None
    assert state.steady_pods == 5 and state.steady_allowed == 3


def test_percentages_round_up() -> None:
    """GetScaledValueFromIntOrPercent(roundUp=true): 50% of 1 pod is 1, so nothing may go."""
    dep, rs = deployment_with_rs("web", replicas=1)
    budget = pdb("web", minAvailable="50%")
    state = pdb_state(view(dep, rs, budget, *web_pods(1)), budget)
    assert (state.expected, state.desired, state.steady_allowed) == (1, 1, 0)


def test_pods_without_controller_are_not_counted_for_max_unavailable() -> None:
    """getExpectedScale skips unmanaged pods: expected 0, and updatePdbStatus allows nothing."""
    budget = pdb("bare", maxUnavailable=1)
    state = pdb_state(view(budget, pod("a"), pod("b")), budget)
    assert state.expected == 0 and state.healthy == 2
    assert state.allowed_now == 0 and state.steady_allowed == 0
    assert state.scale is not None and state.scale.unmanaged == ("a", "b")


def test_integer_min_available_counts_pods_without_controller() -> None:
    budget = pdb("bare", minAvailable=1)
    state = pdb_state(view(budget, pod("a"), pod("b")), budget)
    assert (state.expected, state.allowed_now, state.steady_allowed) == (2, 1, 1)


def test_daemonset_pods_have_no_scale_subresource() -> None:
    """getScaleController: "daemonsets.apps does not implement the scale subresource"."""
    ds = workload("DaemonSet", "agent", replicas=None)
    budget = pdb("agent", maxUnavailable=1)
    agent = pod("agent-x", controller=owner("DaemonSet", "agent"))
    state = pdb_state(view(ds, budget, agent), budget)
    assert state.problem is not None
    assert "daemonsets.apps does not implement the scale subresource" in state.problem
    assert state.allowed_now == 0 and state.steady_allowed == 0


def test_integer_min_available_over_daemonset_pods_needs_no_scale() -> None:
    ds = workload("DaemonSet", "agent", replicas=None)
    budget = pdb("agent", minAvailable=1)
    pods = [pod(f"agent-{i}", controller=owner("DaemonSet", "agent")) for i in range(3)]
    state = pdb_state(view(ds, budget, *pods), budget)
    assert state.problem is None and state.steady_allowed == 2


def test_a_missing_controller_fails_the_sync() -> None:
    """With the ReplicaSets read, a pod whose ReplicaSet is gone: "found no controllers"."""
    dep, other_rs = deployment_with_rs("other", replicas=2)
    budget = pdb("web", maxUnavailable=1)
    state = pdb_state(view(dep, other_rs, budget, *web_pods(1)), budget)
    assert state.problem is not None and state.problem.startswith(
        'found no controllers for pod "web-0"'
    )
    assert state.steady_allowed == 0


def test_a_namesake_with_another_uid_is_not_the_controller() -> None:
    dep, rs = deployment_with_rs("web", replicas=2)
    rs["metadata"]["uid"] = "uid-of-a-newer-replicaset"
    budget = pdb("web", maxUnavailable=1)
    state = pdb_state(view(dep, rs, budget, *web_pods(2)), budget)
    assert state.problem is not None and "found no controllers" in state.problem


def test_replicaset_of_a_deleted_deployment_counts_its_own_replicas() -> None:
    """getPodDeployment finds nothing; getScaleController then reads the ReplicaSet's scale."""
    _, rs = deployment_with_rs("web", replicas=4)
    budget = pdb("web", maxUnavailable=1)
    state = pdb_state(view(rs, budget, *web_pods(4)), budget)
    assert (state.expected, state.desired) == (4, 3)


def test_unset_replicas_default_to_one() -> None:
    sts = workload("StatefulSet", "db", replicas=None, labels={"app": "web"})
    budget = pdb("db", maxUnavailable=1)
    state = pdb_state(view(sts, budget, pod("db-0", controller=owner("StatefulSet", "db"))), budget)
    assert state.expected == 1


def test_neither_field_expects_nothing_and_allows_nothing() -> None:
    """policy/v1 defaults neither field: expected 0, so updatePdbStatus allows no eviction."""
    dep, rs = deployment_with_rs("web", replicas=3)
    budget = pdb("web")
    state = pdb_state(view(dep, rs, budget, *web_pods(3)), budget)
    assert (state.expected, state.allowed_now, state.steady_allowed) == (0, 0, 0)


def test_not_ready_and_deleting_pods_are_not_healthy() -> None:
    """countHealthyPods: skip pods being deleted; count only Ready ones."""
    dep, rs = deployment_with_rs("web", replicas=3)
    pods = web_pods(3)
    pods[0]["status"]["conditions"][0]["status"] = "False"
    pods[1]["metadata"]["deletionTimestamp"] = "2026-12-01T14:00:00Z"
    budget = pdb("web", maxUnavailable=1)
    state = pdb_state(view(dep, rs, budget, *pods), budget)
    assert state.healthy == 1 and state.allowed_now == 0


def test_custom_controllers_are_uncertain() -> None:
    """Their scale subresource decides (getScaleController); the audit cannot see it."""
    budget = pdb("ray", maxUnavailable=1)
    head = pod("ray-head", controller=owner("RayCluster", "llm", "ray.io/v1"))
    state = pdb_state(view(workload("Deployment", "x"), budget, head), budget)
    assert state.problem is None and state.steady_allowed is None
    assert state.scale is not None and state.scale.uncertain == ("RayCluster shop/llm",)


def test_without_workloads_scales_are_estimated_from_pods() -> None:
    budget = pdb("web", maxUnavailable=1)
    state = pdb_state(view(budget, *web_pods(3)), budget)
    assert state.scale is not None and state.scale.estimated
    assert (state.expected, state.desired, state.steady_allowed) == (3, 2, 1)


def test_a_kind_not_read_is_estimated_while_others_are_read() -> None:
    """A file with Deployments but no ReplicaSets (kubectl get deploy,pods,pdb): the pods'
    ReplicaSets are estimated from their pods, not reported missing."""
    dep, _ = deployment_with_rs("web", replicas=5)
    budget = pdb("web", maxUnavailable=1)
    state = pdb_state(view(dep, budget, *web_pods(3)), budget)
    assert state.problem is None and state.scale is not None and state.scale.estimated
    assert state.expected == 3


@pytest.mark.parametrize(
    ("value", "total", "result"),
    [
        (0, 9, 0),
        (3, 9, 3),
        ("0%", 9, 0),
        ("10%", 9, 1),
        ("100%", 9, 9),
        ("33%", 3, 1),
        ("34%", 3, 2),
    ],
)
def test_scaled_values(value: int | str, total: int, result: int) -> None:
    assert scaled(value, total) == result


@pytest.mark.parametrize("value", ["5", "101%", -1, "ten", True, 1.5])
def test_scaled_refuses_what_the_api_server_refuses(value: object) -> None:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    with pytest.raises(InvalidBudgetValue):
        scaled(value, 3)

"""PDB checks: budgets that never allow an eviction (the disruption controller's numbers),
pods two budgets select (the Eviction API's 500), budgets that select nothing, budgets that
block now, and unhealthy pods held by the default unhealthyPodEvictionPolicy."""

from __future__ import annotations

from typing import Any

import pytest

from lifeboat_local.audit import pdbs

from .audit_builders import deployment_with_rs, owner, pdb, pod, view


def deployment(replicas: int, ready: int | None = None) -> list[dict[str, Any]]:
    dep, rs = deployment_with_rs("web", replicas=replicas)
    ready = replicas if ready is None else ready
    pods = [
        pod(f"web-{i}", controller=owner("ReplicaSet", "web-rs"), ready=i < ready)
        for i in range(replicas)
    ]
    return [dep, rs, *pods]


@pytest.mark.parametrize(
    ("spec", "replicas", "why"),
    [
        ({"maxUnavailable": 0}, 3, "maxUnavailable 0: no pod may ever be unavailable"),
        ({"maxUnavailable": "0%"}, 3, "maxUnavailable 0%: no pod may ever be unavailable"),
        ({"minAvailable": 3}, 3, "minAvailable 3 needs 3 healthy pod(s) and its pods number 3"),
        ({"minAvailable": 4}, 3, "minAvailable 4 needs 4 healthy pod(s) and its pods number 3"),
        ({"minAvailable": "100%"}, 3, "minAvailable 100% needs 3 healthy pod(s)"),
        ({"minAvailable": "50%"}, 1, "(50% of 1 rounds up to 1)"),
        ({}, 3, "neither minAvailable nor maxUnavailable"),
    ],
)
def test_never_allows_eviction(spec: dict[str, Any], replicas: int, why: str) -> None:
    budget = pdb("web", **spec)
    [issue] = pdbs.never_allows_eviction(view(budget, *deployment(replicas)))
    assert str(issue.object) == "PodDisruptionBudget shop/web"
    assert why in issue.message


@pytest.mark.parametrize(
    ("spec", "replicas"),
    [
        ({"maxUnavailable": 1}, 3),
        ({"minAvailable": 2}, 3),
        ({"minAvailable": "50%"}, 3),
        ({"maxUnavailable": "10%"}, 1),
    ],
)
def test_budgets_that_let_a_pod_go_are_not_flagged(spec: dict[str, Any], replicas: int) -> None:
    budget = pdb("web", **spec)
    assert list(pdbs.never_allows_eviction(view(budget, *deployment(replicas)))) == []


def test_min_available_is_judged_against_the_scale_not_the_pods_now() -> None:
    """minAvailable 3 with 4 replicas of which only 3 exist yet: fine at full scale."""
    dep, rs = deployment_with_rs("web", replicas=4)
    pods = [pod(f"web-{i}", controller=owner("ReplicaSet", "web-rs")) for i in range(3)]
    budget = pdb("web", minAvailable=3)
    assert list(pdbs.never_allows_eviction(view(budget, dep, rs, *pods))) == []


def test_daemonset_budget_fails_the_controllers_sync() -> None:
    budget = pdb("agent", selector={"matchLabels": {"app": "agent"}}, maxUnavailable=1)
    agent = pod("agent-x", labels={"app": "agent"}, controller=owner("DaemonSet", "agent"))
    [issue] = pdbs.never_allows_eviction(view(budget, agent))
    assert "SyncFailed" in issue.message and "daemonsets.apps" in issue.message
    assert "integer minAvailable" in issue.fix


def test_invalid_budget_value_is_reported() -> None:
    budget = pdb("web", maxUnavailable="1")  # a string that is no percentage
    [issue] = pdbs.never_allows_eviction(view(budget, *deployment(3)))
    assert "must be an integer or percentage" in issue.message


def test_pod_in_two_pdbs_is_an_error_naming_both() -> None:
    """eviction.go: "This pod has more than one PodDisruptionBudget..." (500)."""
    first = pdb("web", maxUnavailable=1)
    second = pdb("all-frontend", selector={"matchLabels": {"tier": "fe"}}, maxUnavailable=1)
    pods = [pod(f"web-{i}", labels={"app": "web", "tier": "fe"}) for i in range(2)]
    [issue] = pdbs.pods_in_several_pdbs(view(first, second, *pods))
    assert str(issue.object) == "PodDisruptionBudget shop/all-frontend"
    assert "web-0, web-1" in issue.message and "PodDisruptionBudget web" in issue.message


def test_pending_and_other_namespace_pods_are_not_held_by_two_pdbs() -> None:
    """Pending pods skip the PDB check; PDBs select only in their own namespace."""
    first = pdb("web", maxUnavailable=1)
    second = pdb("web-too", maxUnavailable=1)
    elsewhere = pdb("web", namespace="other", maxUnavailable=1)
    assert list(pdbs.pods_in_several_pdbs(view(first, second, pod("p", phase="Pending")))) == []
    assert list(pdbs.pods_in_several_pdbs(view(first, elsewhere, pod("p")))) == []


def test_empty_selector_selects_every_pod_of_its_namespace() -> None:
    """policy/v1: an empty selector ({}) selects all pods; with another PDB: two PDBs."""
    everything = pdb("all", selector={}, maxUnavailable=1)
    web = pdb("web", maxUnavailable=1)
    assert list(pdbs.matches_no_pod(view(everything, pod("x", labels={"other": "y"})))) == []
    assert len(list(pdbs.pods_in_several_pdbs(view(everything, web, pod("w"))))) == 1


def test_matches_no_pod() -> None:
    typo = pdb("web", selector={"matchLabels": {"app": "wbe"}}, maxUnavailable=1)
    unset = pdb("none", maxUnavailable=1)
    del unset["spec"]["selector"]
    issues = list(pdbs.matches_no_pod(view(typo, unset, pod("web-0"))))
    assert [(str(i.object), i.message.split(" in ")[0]) for i in issues] == [
        ("PodDisruptionBudget shop/web", "selects no pod"),
        ("PodDisruptionBudget shop/none", "has no selector: selects no pod"),
    ]


def test_allows_no_eviction_now_but_would_at_full_health() -> None:
    budget = pdb("web", maxUnavailable=1)
    [issue] = pdbs.allows_no_eviction_now(view(budget, *deployment(3, ready=2)))
    assert "2 healthy, 2 required of 3 expected" in issue.message
    assert list(pdbs.allows_no_eviction_now(view(budget, *deployment(3)))) == []
    # A budget that never allows is reported by never_allows_eviction, not here.
    never = pdb("web", maxUnavailable=0)
    assert list(pdbs.allows_no_eviction_now(view(never, *deployment(3, ready=2)))) == []


def test_unhealthy_pods_held_by_the_default_policy() -> None:
    """IfHealthyBudget (the default): a Running, not Ready pod may go only while
    currentHealthy >= desiredHealthy > 0."""
    budget = pdb("web", minAvailable=2)
    [issue] = pdbs.unhealthy_pods_held(view(budget, *deployment(3, ready=1)))
    assert "1 healthy of 2): not met now: a drain stalls on them" in issue.message
    assert "AlwaysAllow" in issue.fix
    [met] = pdbs.unhealthy_pods_held(view(budget, *deployment(3, ready=2)))
    assert met.message.endswith("met now")


def test_always_allow_releases_unhealthy_pods() -> None:
    budget = pdb("web", minAvailable=2, unhealthyPodEvictionPolicy="AlwaysAllow")
    assert list(pdbs.unhealthy_pods_held(view(budget, *deployment(3, ready=1)))) == []


def test_expected_pods_unknown_for_custom_controllers() -> None:
    budget = pdb("ray", maxUnavailable=1)
    head = pod("ray-head", controller=owner("RayCluster", "llm", "ray.io/v1"))
    [issue] = pdbs.expected_pods_unknown(view(budget, head))
    assert "scale subresource of RayCluster shop/llm" in issue.message
    assert list(pdbs.never_allows_eviction(view(budget, head))) == []

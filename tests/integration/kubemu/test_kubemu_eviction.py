"""Eviction through the emulator's pods/eviction subresource, against PodDisruptionBudgets."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubemu import Emulator
from kubemu.builders import node, pdb, pod, workload
from tests.support.present import error_body, status_part


def evict(emu: Emulator, name: str, namespace: str = "default") -> Any:
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    return client.CoreV1Api(emu.api_client()).create_namespaced_pod_eviction(
        name, namespace, eviction
    )


def seed(emu: Emulator, *objects: dict[str, Any]) -> None:
    for obj in objects:
        emu.put_object(obj)


def gone(emu: Emulator, name: str, namespace: str = "default") -> bool:
    """The pod is gone once its grace period (30 s by default) has passed on the clock."""
    terminating = emu.get_object("Pod", name, namespace)
    if terminating is not None:
        assert terminating["metadata"]["deletionTimestamp"]
        emu.clock.advance(terminating["metadata"]["deletionGracePeriodSeconds"])
    return emu.get_object("Pod", name, namespace) is None


def test_eviction_without_pdb_deletes_the_pod(emulator: Emulator) -> None:
    seed(emulator, pod("p1"))
    result = evict(emulator, "p1")
    assert result.kind == "Status"
    assert gone(emulator, "p1")
    assert emulator.requests_by_resource[("create", "pods/eviction")] == 1


def test_evicted_pod_terminates_for_its_grace_period(emulator: Emulator) -> None:
    """CheckGracefulDelete: the pod's terminationGracePeriodSeconds, on the emulator clock."""
    seeded = pod("p1")
    seeded["spec"]["terminationGracePeriodSeconds"] = 45
    seed(emulator, seeded)
    evict(emulator, "p1")
    terminating = emulator.get_object("Pod", "p1", "default")
    assert terminating is not None
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 45
    emulator.clock.advance(44)
    assert emulator.get_object("Pod", "p1", "default") is not None
    emulator.clock.advance(1)
    assert emulator.get_object("Pod", "p1", "default") is None


def test_a_pod_on_a_node_that_is_not_ready_stays_terminating_until_a_kubelet_answers(
    emulator: Emulator,
) -> None:
    """The API server removes a pod past its grace period only when the kubelet confirms it
    (a zero-grace delete); an unreachable node (Ready Unknown) confirms nothing, so the pod
    stays Terminating. Ready again: the kubelet confirms. Node deleted: the pod garbage
    collector (``gcOrphaned``) deletes it."""
    unreachable = node("n1")
    unreachable["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    seed(emulator, unreachable, pod("p1"), pod("p2"))
    evict(emulator, "p1")
    evict(emulator, "p2")
    emulator.clock.advance(600)
    for name in ("p1", "p2"):
        stuck = emulator.get_object("Pod", name, "default")
        assert stuck is not None and stuck["metadata"]["deletionTimestamp"]
    emulator.put_object(node("n1"))  # Ready again
    emulator.clock.advance(1)
    assert emulator.get_object("Pod", "p1", "default") is None
    assert emulator.get_object("Pod", "p2", "default") is None

    emulator.put_object(unreachable)
    seed(emulator, pod("p3"))
    evict(emulator, "p3")
    emulator.clock.advance(600)
    assert emulator.get_object("Pod", "p3", "default") is not None
    emulator.delete_object("Node", "n1")
    emulator.clock.advance(1)
    assert emulator.get_object("Pod", "p3", "default") is None


def test_unscheduled_pod_is_deleted_at_once(emulator: Emulator) -> None:
    """CheckGracefulDelete: no nodeName, no kubelet to wait for: grace period 0."""
    seed(emulator, pod("p1", node_name=""))
    evict(emulator, "p1")
    assert emulator.get_object("Pod", "p1", "default") is None


def test_dry_run_eviction_changes_nothing(emulator: Emulator) -> None:
    seed(emulator, pod("p1"))
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name="p1", namespace="default"),
        delete_options=client.V1DeleteOptions(dry_run=["All"]),
    )
    client.CoreV1Api(emulator.api_client()).create_namespaced_pod_eviction("p1", "default", body)
    stored = emulator.get_object("Pod", "p1", "default")
    assert stored is not None
    assert "deletionTimestamp" not in stored["metadata"]


def test_eviction_answers_201(emulator: Emulator) -> None:
    seed(emulator, pod("p1"))
    rest = emulator.api_client().rest_client
    # The kubernetes client leaves request() unannotated.
    response = rest.request(  # type: ignore[no-untyped-call]
        "POST",
        f"{emulator.url}/api/v1/namespaces/default/pods/p1/eviction",
        headers={"Content-Type": "application/json"},
        body={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p1"}},
    )
    assert response.status == 201
    assert json.loads(response.read())["status"] == "Success"


def test_eviction_of_missing_pod_is_404(emulator: Emulator) -> None:
    with pytest.raises(ApiException) as caught:
        evict(emulator, "ghost")
    assert caught.value.status == 404


def test_pdb_allows_until_budget_is_spent_then_429(emulator: Emulator) -> None:
    seed(emulator, *(pod(f"p{i}") for i in range(3)), pdb("web", minAvailable=2))
    evict(emulator, "p0")
    with pytest.raises(ApiException) as caught:
        evict(emulator, "p1")
    assert caught.value.status == 429
    body = json.loads(error_body(caught.value))
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert "needs 2 healthy pods and has 2 currently" in body["details"]["causes"][0]["message"]
    assert emulator.get_object("Pod", "p1", "default") is not None


def test_two_matching_pdbs_is_500(emulator: Emulator) -> None:
    seed(emulator, pod("p1"), pdb("a", maxUnavailable=1), pdb("b", maxUnavailable=1))
    with pytest.raises(ApiException) as caught:
        evict(emulator, "p1")
    assert caught.value.status == 500
    assert "more than one PodDisruptionBudget" in json.loads(error_body(caught.value))["message"]


def test_pdb_in_another_namespace_does_not_apply(emulator: Emulator) -> None:
    seed(emulator, pod("p1"), pdb("a", namespace="other", minAvailable=5))
    evict(emulator, "p1")
    assert gone(emulator, "p1")


@pytest.mark.parametrize(
    ("spec", "pods", "desired", "allowed"),
    [
        ({"minAvailable": "50%"}, 3, 2, 1),  # ceil(1.5) = 2
        ({"minAvailable": "100%"}, 4, 4, 0),
        ({"maxUnavailable": "30%"}, 4, 2, 2),  # maxUnavailable ceil(1.2) = 2 → desired 2
        ({"maxUnavailable": 0}, 2, 2, 0),
        ({"minAvailable": 1}, 0, 1, 0),
    ],
)
def test_pdb_status_with_percentages(
    emulator: Emulator, spec: dict[str, Any], pods: int, desired: int, allowed: int
) -> None:
    """The scale is the ReplicaSet's, which here matches its pods (getExpectedPodCount)."""
    owner = workload("ReplicaSet", "web", replicas=pods)
    seed(emulator, owner, *(pod(f"p{i}", owner=owner) for i in range(pods)), pdb("web", **spec))
    budget = client.PolicyV1Api(emulator.api_client()).read_namespaced_pod_disruption_budget(
        "web", "default"
    )
    assert status_part(budget).expected_pods == pods
    assert status_part(budget).desired_healthy == desired
    assert status_part(budget).current_healthy == pods
    assert status_part(budget).disruptions_allowed == allowed


def test_pdb_status_refreshes_on_list(emulator: Emulator) -> None:
    seed(emulator, pod("p1"), pod("p2"), pdb("web", minAvailable=1))
    api = client.PolicyV1Api(emulator.api_client())
    listed = api.list_pod_disruption_budget_for_all_namespaces().items
    assert status_part(listed[0]).disruptions_allowed == 1
    emulator.delete_object("Pod", "p2", "default")
    listed = api.list_namespaced_pod_disruption_budget("default").items
    assert status_part(listed[0]).disruptions_allowed == 0


def test_unhealthy_pods_count_against_the_budget(emulator: Emulator) -> None:
    seed(
        emulator,
        pod("p1"),
        pod("p2", ready=False),
        pod("p3", phase="Pending"),
        pdb("web", minAvailable=1),
    )
    budget = client.PolicyV1Api(emulator.api_client()).read_namespaced_pod_disruption_budget(
        "web", "default"
    )
    assert (status_part(budget).current_healthy, status_part(budget).disruptions_allowed) == (1, 0)
    # Pending pods skip the PDB check entirely.
    evict(emulator, "p3")
    # Running but not ready: IfHealthyBudget lets it go because the budget is met (1 >= 1).
    evict(emulator, "p2")
    with pytest.raises(ApiException) as caught:
        evict(emulator, "p1")
    assert caught.value.status == 429


def test_not_ready_pod_with_unmet_budget_needs_always_allow(emulator: Emulator) -> None:
    seed(emulator, pod("p1", ready=False), pdb("web", minAvailable=1))
    with pytest.raises(ApiException) as caught:
        evict(emulator, "p1")
    assert caught.value.status == 429
    emulator.put_object(pdb("web", minAvailable=1, unhealthyPodEvictionPolicy="AlwaysAllow"))
    evict(emulator, "p1")
    assert gone(emulator, "p1")


def test_evicting_a_pod_with_finalizers_marks_it_deleting(emulator: Emulator) -> None:
    held = pod("p1")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    seed(emulator, held, pod("p2"), pdb("web", minAvailable=1))
    evict(emulator, "p1")
    stored = emulator.get_object("Pod", "p1", "default")
    assert stored is not None
    assert stored["metadata"]["deletionTimestamp"]
    # The deleting pod no longer counts as healthy, so the budget is now spent.
    with pytest.raises(ApiException) as caught:
        evict(emulator, "p2")
    assert caught.value.status == 429


def _budget(emu: Emulator) -> Any:
    return (
        client.PolicyV1Api(emu.api_client())
        .read_namespaced_pod_disruption_budget("web", "default")
        .status
    )


def test_max_unavailable_counts_the_replica_sets_scale_not_its_pods(emulator: Emulator) -> None:
    """getExpectedPodCount: maxUnavailable uses the controller's scale. A ReplicaSet of 3
    with 2 pods left and maxUnavailable 1 needs 2 healthy: no eviction is allowed."""
    owner = workload("ReplicaSet", "web", replicas=3)
    seed(emulator, owner, pod("p0", owner=owner), pod("p1", owner=owner))
    seed(emulator, pdb("web", maxUnavailable=1))
    status = _budget(emulator)
    assert (status.expected_pods, status.desired_healthy, status.disruptions_allowed) == (3, 2, 0)
    with pytest.raises(ApiException) as caught:
        evict(emulator, "p0")
    assert caught.value.status == 429


def test_a_deployments_scale_wins_over_its_replica_set(emulator: Emulator) -> None:
    """getPodDeployment: a ReplicaSet controlled by a Deployment counts the Deployment's."""
    deployment = workload("Deployment", "web", replicas=4)
    replica_set = workload("ReplicaSet", "web-1", replicas=2)
    replica_set["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": deployment["metadata"]["uid"],
            "controller": True,
        }
    ]
    seed(emulator, deployment, replica_set, *(pod(f"p{i}", owner=replica_set) for i in range(2)))
    seed(emulator, pdb("web", minAvailable="50%"))
    assert (_budget(emulator).expected_pods, _budget(emulator).desired_healthy) == (4, 2)


def test_integer_min_available_counts_the_pods(emulator: Emulator) -> None:
    """getExpectedPodCount: an integer minAvailable takes the number of selected pods."""
    owner = workload("ReplicaSet", "web", replicas=5)
    seed(emulator, owner, pod("p0", owner=owner), pod("p1", owner=owner))
    seed(emulator, pdb("web", minAvailable=1))
    assert (_budget(emulator).expected_pods, _budget(emulator).disruptions_allowed) == (2, 1)


def test_bare_pods_are_left_out_of_the_scale(emulator: Emulator) -> None:
    """getExpectedScale: pods without a controller are not counted; with maxUnavailable
    over bare pods nothing is expected, so nothing may be disrupted."""
    seed(emulator, pod("p0"), pod("p1"), pdb("web", maxUnavailable=1))
    assert (_budget(emulator).expected_pods, _budget(emulator).disruptions_allowed) == (0, 0)


def test_a_daemon_set_has_no_scale_and_the_budget_fails_safe(emulator: Emulator) -> None:
    """getScaleController: a DaemonSet does not implement scale; the sync fails and the
    fail-safe allows no disruption."""
    owner = workload("DaemonSet", "web")
    seed(emulator, owner, pod("p0", owner=owner), pdb("web", maxUnavailable=1))
    status = _budget(emulator)
    assert status.disruptions_allowed == 0
    assert status.conditions[0].reason == "SyncFailed"

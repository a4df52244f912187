"""Workload checks: one replica without a PDB, and pods without a controller (a drain evicts
every pod but DaemonSet and mirror pods, and nothing recreates a pod without a controller)."""

from __future__ import annotations

import pytest

from lifeboat_local.audit import workloads

from .audit_builders import deployment_with_rs, owner, pdb, pod, view, workload


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicationController"])
def test_single_replica_without_pdb(kind: str) -> None:
    [issue] = workloads.single_replica_without_pdb(view(workload(kind, "api", replicas=1)))
    assert str(issue.object) == f"{kind} shop/api"
    assert issue.message.startswith("1 replica and no PodDisruptionBudget")


def test_unset_replicas_mean_one() -> None:
    assert (
        len(
            list(
                workloads.single_replica_without_pdb(
                    view(workload("Deployment", "api", replicas=None))
                )
            )
        )
        == 1
    )


def test_a_pdb_over_the_template_labels_covers_it() -> None:
    covered = view(
        workload("Deployment", "api"),
        pdb("api", selector={"matchLabels": {"app": "api"}}, maxUnavailable=1),
    )
    assert list(workloads.single_replica_without_pdb(covered)) == []


def test_a_pdb_in_another_namespace_does_not_cover_it() -> None:
    other = pdb(
        "api", namespace="other", selector={"matchLabels": {"app": "api"}}, maxUnavailable=1
    )
    assert (
        len(list(workloads.single_replica_without_pdb(view(workload("Deployment", "api"), other))))
        == 1
    )


def test_more_replicas_daemonsets_and_deployment_replicasets_are_not_flagged() -> None:
    dep, rs = deployment_with_rs("web", replicas=1)
    objects = [
        workload("Deployment", "big", replicas=2),
        workload("DaemonSet", "agent", replicas=None),
        dep,
        rs,
    ]
    issues = list(workloads.single_replica_without_pdb(view(*objects)))
    assert [str(i.object) for i in issues] == ["Deployment shop/web"]  # not its ReplicaSet too


def test_without_workloads_a_controller_with_one_pod_stands_for_one_replica() -> None:
    lone = pod("api-0", labels={"app": "api"}, controller=owner("StatefulSet", "api"))
    pair = [pod(f"web-{i}", controller=owner("ReplicaSet", "web-rs")) for i in range(2)]
    agent = pod("agent-0", controller=owner("DaemonSet", "agent"))
    [issue] = workloads.single_replica_without_pdb(view(lone, *pair, agent))
    assert str(issue.object) == "StatefulSet shop/api" and "estimated" in issue.message


def test_unmanaged_pod() -> None:
    bare = pod("debug", labels={"run": "debug"})
    [issue] = workloads.unmanaged_pods(view(bare))
    assert str(issue.object) == "Pod shop/debug"
    assert "nothing recreates it (no PodDisruptionBudget covers it)" in issue.message


def test_unmanaged_pod_under_a_pdb_says_the_pdb_cannot_bring_it_back() -> None:
    [issue] = workloads.unmanaged_pods(view(pod("debug"), pdb("web", minAvailable=0)))
    assert "PodDisruptionBudget web delays it but cannot bring it back" in issue.message


def test_mirror_finished_and_controlled_pods_are_not_unmanaged() -> None:
    mirror = pod("kube-proxy-n1", annotations={"kubernetes.io/config.mirror": "abc"})
    done = pod("job-x", phase="Succeeded")
    managed = pod("web-0", controller=owner("ReplicaSet", "web-rs"))
    assert list(workloads.unmanaged_pods(view(mirror, done, managed))) == []

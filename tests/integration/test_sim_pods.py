"""The replay's workload controllers and scheduler (lifeboat_local.sim_pods), against the
rules of the real ones they stand in for: the ReplicaSet controller replaces a deleted or
terminating pod at once (``FilterActivePods``), the StatefulSet controller recreates a pod
under its own name once the old one is gone, DaemonSet pods are not recreated elsewhere,
and kube-scheduler filters nodes (NodeUnschedulable, TaintToleration, NodeSelector,
NodeResourcesFit) before scoring them (LeastAllocated; PreferNoSchedule taints last)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubemu import Emulator
from lifeboat_local.sim_pods import READY_TIME, PodSimulation

T0 = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


def node(
    name: str, cpu: str = "2", *, taints: list[dict[str, str]] | None = None, **labels: str
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T00:00:00Z"}
            ],
        },
    }


def pod(
    name: str, on: str, owner: tuple[str, str], cpu: str = "500m", **spec: Any
) -> dict[str, Any]:
    kind, owner_name = owner
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {"app": owner_name},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "name": owner_name,
                    "uid": f"uid-{owner_name}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": on,
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}
            ],
            **spec,
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pods_of(emu: Emulator, app: str) -> list[dict[str, Any]]:
    return [p for p in emu.objects("Pod") if p["metadata"]["labels"].get("app") == app]


def ready(p: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])
    )


def test_a_deleted_replicaset_pod_is_replaced_scheduled_and_ready_45_s_later() -> None:
    objects = [
        node("a"),
        node("b", cpu="4"),
        pod("web-1", "a", ("ReplicaSet", "web")),
        pod("web-2", "a", ("ReplicaSet", "web")),
    ]
    with Emulator(objects) as emu:
        sim = PodSimulation(emu, T0)
        emu.delete_object("Pod", "web-1", "shop")  # evicted while the clock stood at T0
        steps = sim.advance(T0 + timedelta(seconds=30))
        [new] = [p for p in pods_of(emu, "web") if p["metadata"]["name"] != "web-2"]
        assert new["metadata"]["name"].startswith("web-")
        assert new["metadata"]["ownerReferences"][0]["uid"] == "uid-web"
        assert new["spec"]["nodeName"] == "b"  # the least allocated node that fits
        assert new["metadata"]["creationTimestamp"] == "2026-12-01T14:05:00Z"
        assert not ready(new)  # Ready 45 s after it was scheduled: 14:05:45
        assert [s.action for s in steps] == ["pod-created", "pod-scheduled"]
        steps = sim.advance(T0 + READY_TIME)
        assert [(s.action, s.at) for s in steps] == [("pod-ready", T0 + READY_TIME)]
        assert all(ready(p) for p in pods_of(emu, "web"))
        assert len(pods_of(emu, "web")) == 2  # the desired count, not more


def test_a_terminating_pod_is_replaced_at_once_a_statefulset_pod_only_once_gone() -> None:
    objects = [
        node("a"),
        node("b"),
        pod("web-1", "a", ("ReplicaSet", "web")),
        pod("db-0", "a", ("StatefulSet", "db")),
    ]
    with Emulator(objects) as emu:
        sim = PodSimulation(emu, T0)
        for name in ("web-1", "db-0"):
            terminating = emu.get_object("Pod", name, "shop")
            assert terminating is not None
            terminating["metadata"]["deletionTimestamp"] = "2026-12-01T14:05:30Z"
            emu.put_object(terminating)
        sim.advance(T0 + timedelta(seconds=10))
        assert len(pods_of(emu, "web")) == 2  # the replacement beside the terminating one
        assert [p["metadata"]["name"] for p in pods_of(emu, "db")] == ["db-0"]  # waits
        emu.delete_object("Pod", "db-0", "shop")
        sim.advance(T0 + timedelta(seconds=40))
        [db] = pods_of(emu, "db")
        assert db["metadata"]["name"] == "db-0" and db["spec"]["nodeName"] in ("a", "b")
        assert not db["metadata"].get("deletionTimestamp")


def test_daemonset_and_job_pods_are_not_recreated_elsewhere() -> None:
    objects = [
        node("a"),
        node("b"),
        pod("agent-x", "a", ("DaemonSet", "agent")),
        pod("report-1", "a", ("Job", "report")),
    ]
    with Emulator(objects) as emu:
        sim = PodSimulation(emu, T0)
        emu.delete_object("Pod", "agent-x", "shop")
        emu.delete_object("Pod", "report-1", "shop")
        assert sim.advance(T0 + timedelta(minutes=5)) == []
        assert emu.objects("Pod") == []


def test_the_scheduler_skips_cordoned_tainted_unselected_and_full_nodes() -> None:
    objects = [
        {**node("cordoned", cpu="8"), "spec": {"unschedulable": True}},
        node(
            "tainted",
            cpu="8",
            taints=[{"key": "workload", "value": "batch", "effect": "NoSchedule"}],
        ),
        node("other-zone", cpu="8", zone="b"),
        node("full", cpu="600m", zone="a"),
        node("fits", cpu="2", zone="a"),
        node("source", zone="a"),
        pod("web-1", "source", ("ReplicaSet", "web"), nodeSelector={"zone": "a"}),
        pod("filler", "full", ("ReplicaSet", "filler"), cpu="200m"),
    ]
    with Emulator(objects) as emu:
        sim = PodSimulation(emu, T0)
        source = emu.get_object("Node", "source")
        assert source is not None
        source["spec"]["unschedulable"] = True
        emu.put_object(source)
        emu.delete_object("Pod", "web-1", "shop")
        sim.advance(T0 + timedelta(seconds=30))
        [new] = pods_of(emu, "web")
        assert new["spec"]["nodeName"] == "fits"


def test_a_pod_tolerating_a_taint_may_go_there_and_prefer_no_schedule_comes_last() -> None:
    toleration = [
        {"key": "workload", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
    ]
    objects = [
        node(
            "batch", cpu="8", taints=[{"key": "workload", "value": "batch", "effect": "NoSchedule"}]
        ),
        node(
            "marked",
            cpu="16",
            taints=[{"key": "lifeboat.dev/rotation", "effect": "PreferNoSchedule"}],
        ),
        node("source"),
        pod("job-1", "source", ("ReplicaSet", "job"), tolerations=toleration),
    ]
    with Emulator(objects) as emu:
        sim = PodSimulation(emu, T0)
        emu.delete_object("Pod", "job-1", "shop")
        sim.advance(T0 + timedelta(seconds=30))
        # "marked" has the most room but a PreferNoSchedule taint; "source" and "batch" fit,
        # and "batch" (tolerated) has more free CPU.
        assert pods_of(emu, "job")[0]["spec"]["nodeName"] == "batch"


def test_a_pod_no_node_fits_stays_pending_until_new_capacity_joins() -> None:
    objects = [
        node("small", cpu="500m"),
        node("source"),
        pod("big-1", "source", ("ReplicaSet", "big"), cpu="1"),
    ]
    with Emulator(objects) as emu:
        sim = PodSimulation(emu, T0)
        emu.delete_object("Pod", "big-1", "shop")
        emu.delete_object("Node", "source")
        steps = sim.advance(T0 + timedelta(seconds=30))
        assert [s.action for s in steps] == ["pod-created", "pod-pending"]
        [pending] = pods_of(emu, "big")
        assert pending["status"]["phase"] == "Pending" and "nodeName" not in pending["spec"]
        assert sim.advance(T0 + timedelta(seconds=60)) == []  # reported once
        joined = node("new", cpu="4")
        joined["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-01T14:06:10Z"
        emu.put_object(joined)
        steps = sim.advance(T0 + timedelta(seconds=90))
        [scheduled] = [s for s in steps if s.action == "pod-scheduled"]
        assert (scheduled.node, scheduled.at) == ("new", T0 + timedelta(seconds=70))

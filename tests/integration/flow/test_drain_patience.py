"""The drain's patience with PodDisruptionBudgets (``Drainer._evict_pods``): an eviction the
API server refuses with 429 (``pkg/registry/core/pod/storage/eviction.go``: "Cannot evict
pod as it would violate the pod's disruption budget") is retried for ``drain_patience``
seconds, never past the notice's deadline, then handed to a later wake-up.

Production waits 20 s (``lifeboat.runtime.service.DRAIN_PATIENCE``); these tests use that
patience on
an injected clock whose ``sleep`` moves it, so nothing waits in real time, and the one clock
the loop reads is the injected one.

The node is the sample cluster's node group node ``ip-10-0-3-16.ec2.internal`` (instance
``i-0a1b2c3d4e5f60006``, no NodeClaim: Lifeboat drains it itself); its pod
``kube-system/coredns-5d78c9869d-4xkq2`` is covered by the PDB ``kube-system/coredns``, which
the tests close (``maxUnavailable: 0``) and open again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.notice import LifecycleHook
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.runtime.service import DRAIN_PATIENCE
from lifeboat_local.directory import directory_from_objects
from tests.support.clock import InjectedTime
from tests.support.events import aws_event
from tests.support.paths import EVENTS

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
# The sample lifecycle action (at 14:04) lets the instance go at 15:04: its heartbeat timeout.
INSTANCE_GOES = datetime(2026, 12, 1, 15, 4, tzinfo=UTC)
NODE = "ip-10-0-3-16.ec2.internal"
COREDNS = "coredns-5d78c9869d-4xkq2"


@pytest.fixture
def cluster() -> Iterator[tuple[Emulator, list[dict[str, Any]]]]:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emulator:
        set_coredns_budget(emulator, max_unavailable=0)
        yield emulator, objects


def set_coredns_budget(emulator: Emulator, *, max_unavailable: int) -> None:
    budget = emulator.get_object("PodDisruptionBudget", "coredns", "kube-system")
    assert budget is not None
    budget["spec"]["maxUnavailable"] = max_unavailable
    emulator.put_object(budget)


@dataclass
class RecordingLifecycle:
    """The Auto Scaling calls of the lifecycle hook (a seam: moto does not implement them)."""

    calls: list[str] = field(default_factory=list)

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        self.calls.append(f"complete {result}")

    def heartbeat(self, hook: LifecycleHook) -> None:
        self.calls.append("heartbeat")


def drain(
    cluster: tuple[Emulator, list[dict[str, Any]]],
    time: InjectedTime,
    patience: float,
    lifecycle: RecordingLifecycle | None = None,
) -> Report:
    emulator, objects = cluster
    pipeline = Pipeline(
        lifecycle=lifecycle,
        clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=1))),
        directory=directory_from_objects(objects, cluster="prod"),
        settings=Settings(clusters=("prod",)),
        clock=time.clock,
        sleep=time.sleep,
        drain_patience=patience,
    )
    event = aws_event("asg-termination", instance="i-0a1b2c3d4e5f60006")
    [result] = pipeline.process([event])
    assert result.error is None, result.error
    [report] = result.reports
    return report


def coredns_left(emulator: Emulator) -> bool:
    """The pod is still there and not being deleted (an eviction deletes it gracefully)."""
    pod = emulator.get_object("Pod", COREDNS, "kube-system")
    return pod is not None and not pod["metadata"].get("deletionTimestamp")


def pods_remaining(report: Report) -> int:
    """How many pods the report says PDBs still hold (``decision_report``'s reason)."""
    held = re.search(r"(\d+) pod\(s\) held by PodDisruptionBudgets", report.reason)
    return int(held.group(1)) if held else 0


def evicted(report: Report) -> list[str]:
    return [a["pod"] for a in report.actions if a["type"] == "evict"]


def test_a_blocked_eviction_is_retried_with_backoff_until_the_budget_allows_it(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    emulator, _ = cluster

    def budget_opens(sleeps: int) -> None:
        if sleeps == 2:  # another pod became ready meanwhile: one disruption allowed
            set_coredns_budget(emulator, max_unavailable=1)

    time = InjectedTime(NOW, on_sleep=budget_opens)
    report = drain(cluster, time, DRAIN_PATIENCE)

    assert time.slept == [0.5, 1.0]
    assert f"kube-system/{COREDNS}" in evicted(report)
    assert not coredns_left(emulator)
    assert pods_remaining(report) == 0


def test_a_budget_that_never_allows_it_is_waited_on_for_the_patience_and_no_longer(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    emulator, _ = cluster
    time = InjectedTime(NOW)
    report = drain(cluster, time, DRAIN_PATIENCE)

    # Backoff 0.5, 1, 2, 4, then 5 s; the last pause is cut to end at the patience.
    assert time.slept == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 2.5]
    assert sum(time.slept) == DRAIN_PATIENCE
    assert time.now == NOW + timedelta(seconds=DRAIN_PATIENCE)
    assert coredns_left(emulator)
    assert pods_remaining(report) == 1
    assert f"kube-system/{COREDNS}" not in evicted(report)


@pytest.mark.parametrize(
    ("left", "slept"), [(3.0, [0.5, 1.0, 1.5]), (0.7, [0.5, 0.2]), (0.3, [0.3])]
)
def test_the_wait_ends_at_the_notices_deadline_when_that_comes_first(
    cluster: tuple[Emulator, list[dict[str, Any]]], left: float, slept: list[float]
) -> None:
    time = InjectedTime(INSTANCE_GOES - timedelta(seconds=left))
    report = drain(cluster, time, DRAIN_PATIENCE)

    assert time.slept == pytest.approx(slept)
    assert time.now == INSTANCE_GOES
    assert pods_remaining(report) == 1


def test_a_drain_held_by_a_pdb_keeps_the_instance_alive_and_completes_nothing(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    """The lifecycle action completes only once no pod is left (or the instance would go
    with the pod still on it): until then the hook gets a heartbeat."""
    lifecycle = RecordingLifecycle()
    report = drain(cluster, InjectedTime(NOW), 0.0, lifecycle)

    assert pods_remaining(report) == 1
    assert lifecycle.calls == ["heartbeat"]
    assert not [a for a in report.actions if a["type"] == "complete-lifecycle-action"]


def test_a_drain_that_empties_the_node_heartbeats_while_the_evicted_pods_terminate(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    """Every pod evicted, but still terminating within its grace period: CONTINUE waits for
    them (NTH issue #355: the instance would go under their preStop hooks), so the hook gets
    a heartbeat; the drain's follow-up completes it once they are gone
    (tests/integration/flow/test_lifecycle_completion.py)."""
    emulator, _ = cluster
    set_coredns_budget(emulator, max_unavailable=1)
    lifecycle = RecordingLifecycle()
    report = drain(cluster, InjectedTime(NOW), 0.0, lifecycle)

    assert pods_remaining(report) == 0
    assert lifecycle.calls == ["heartbeat"]


def test_without_patience_a_blocked_eviction_is_tried_once_and_left_for_a_wake_up(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    emulator, _ = cluster
    time = InjectedTime(NOW)
    report = drain(cluster, time, 0.0)

    assert time.slept == []
    assert pods_remaining(report) == 1
    evictions = [e for e in emulator.request_log if "eviction" in str(e)]
    assert len(evictions) == 2  # coredns (refused) and metrics-server, once each


def test_a_clock_that_stands_still_cannot_keep_the_drain_waiting(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    """Replay's ``--at`` clock does not move; the seconds slept bound the wait too."""
    time = InjectedTime(NOW)
    frozen = InjectedTime(NOW)
    emulator, objects = cluster
    pipeline = Pipeline(
        clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=1))),
        directory=directory_from_objects(objects, cluster="prod"),
        settings=Settings(clusters=("prod",)),
        clock=frozen.clock,
        sleep=time.sleep,
        drain_patience=DRAIN_PATIENCE,
    )
    event = aws_event("asg-termination", instance="i-0a1b2c3d4e5f60006")
    [result] = pipeline.process([event])

    assert result.error is None
    assert sum(time.slept) == DRAIN_PATIENCE
    assert pods_remaining(result.reports[0]) == 1

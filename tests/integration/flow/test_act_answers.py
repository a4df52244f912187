"""How ``lifeboat.flow.act`` reads three answers of the API server, through the pipeline on the
real kubernetes client over HTTP to the emulator (the survivors of ``make mutants`` on
``act.py``):

- an eviction answered 404 (``Eviction.GONE``: the pod went between the list and the
  eviction) is not a PodDisruptionBudget refusal (429) and is never waited on;
- a node patch answered 409 (a stale read; ``PATCH_ATTEMPTS`` = 3) is rebuilt from a fresh
  read and sent again, up to three attempts in all;
- the unread taint of an involuntary notice answered 404 (no such node) stops at once: the
  second, unguarded variant is not sent (one request saved when two minutes is all there is).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import Eviction, KubeApi, KubeError, RetryPolicy
from lifeboat.kube.objects import MutableObj
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import AllRecordsFailed, handle_batch
from lifeboat.runtime.service import DRAIN_PATIENCE
from lifeboat_local.directory import directory_from_objects
from tests.support.clock import InjectedTime
from tests.support.events import aws_event, sqs_batch
from tests.support.fakes import LambdaContext
from tests.support.paths import EVENTS

NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
SPOT_NODE = "ip-10-0-1-11.ec2.internal"  # i-0a1b2c3d4e5f60001, NodePool general
MAINTAINED_NODE = "ip-10-0-2-14.ec2.internal"  # i-0a1b2c3d4e5f60004, NodePool batch
GROUP_NODE = "ip-10-0-3-16.ec2.internal"  # i-0a1b2c3d4e5f60006, node group, no NodeClaim
COREDNS = "coredns-5d78c9869d-4xkq2"  # on GROUP_NODE, covered by the PDB kube-system/coredns


class ScriptedKube(KubeApi):
    """The real client; records node patches, and runs ``before_evict`` / fails the first
    ``conflicts`` node patches with 409 as the API server would answer a stale read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.node_patches: list[str] = []
        self.evictions: list[Eviction] = []
        self.conflicts = 0
        self.before_evict: Callable[[str, str], None] = lambda _namespace, _name: None

    def patch_node(self, name: str, operations: list[MutableObj]) -> MutableObj:
        self.node_patches.append(name)
        if self.conflicts:
            self.conflicts -= 1
            raise KubeError(409, "the object has been modified", method="PATCH", path=name)
        return super().patch_node(name, operations)

    def evict_pod(self, namespace: str, name: str) -> Eviction:
        self.before_evict(namespace, name)
        answer = super().evict_pod(namespace, name)
        self.evictions.append(answer)
        return answer


@pytest.fixture
def cluster() -> Iterator[tuple[Emulator, list[dict[str, Any]]]]:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emulator:
        emulator.ensure_namespace("lifeboat")  # the per-NodePool Leases of voluntary notices
        yield emulator, objects


def run(
    cluster: tuple[Emulator, list[dict[str, Any]]],
    kube: ScriptedKube,
    event: dict[str, Any],
    time: InjectedTime | None = None,
) -> dict[str, Any]:
    _, objects = cluster
    time = time or InjectedTime(NOW)
    pipeline = Pipeline(
        clusters=OneCluster(kube),
        directory=directory_from_objects(objects, cluster="prod"),
        settings=Settings(clusters=("prod",)),
        clock=time.clock,
        sleep=time.sleep,
        drain_patience=DRAIN_PATIENCE,
        ledger=MemoryLedger(),
    )
    return handle_batch(sqs_batch(event), LambdaContext(), pipeline, clock=time.clock)


def test_an_eviction_answered_404_is_a_pod_gone_not_one_a_budget_holds(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    """``pkg/registry/core/pod/storage/eviction.go`` answers 404 for a pod that no longer
    exists and 429 only for a budget's refusal: the drain waits on the 429s alone."""
    emulator, _ = cluster
    budget = emulator.get_object("PodDisruptionBudget", "coredns", "kube-system")
    assert budget is not None
    budget["spec"]["maxUnavailable"] = 0  # were the pod there, the budget would hold it
    emulator.put_object(budget)
    kube = ScriptedKube(emulator.api_client(), RetryPolicy(attempts=1))

    def coredns_goes_first(namespace: str, name: str) -> None:
        if name == COREDNS:
            assert emulator.delete_object("Pod", name, namespace)

    kube.before_evict = coredns_goes_first
    time = InjectedTime(NOW)
    event = aws_event("asg-termination", instance="i-0a1b2c3d4e5f60006")

    response = run(cluster, kube, event, time)

    assert response == {"batchItemFailures": []}
    assert Eviction.GONE in kube.evictions
    assert Eviction.BLOCKED not in kube.evictions
    assert time.slept == []  # nothing held: no PDB backoff for a pod already gone


def test_a_node_patch_answered_409_twice_succeeds_on_its_third_attempt(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    emulator, _ = cluster
    kube = ScriptedKube(emulator.api_client(), RetryPolicy(attempts=1))
    kube.conflicts = 2
    health = aws_event("scheduled-change", instance="i-0a1b2c3d4e5f60004", event_id="health-1")

    response = run(cluster, kube, health)

    assert response == {"batchItemFailures": []}
    assert kube.node_patches[:3] == [MAINTAINED_NODE] * 3
    node = emulator.get_object("Node", MAINTAINED_NODE)
    assert node is not None and node["spec"]["unschedulable"] is True
    assert "lifeboat.dev/scheduled-change" in [t["key"] for t in node["spec"]["taints"]]


def test_a_node_patch_answered_409_three_times_gives_up(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    """The bound is three attempts, not more: the message fails and goes back to the queue
    (the batch's only record, so ``handle_batch`` raises for Lambda to retry it)."""
    emulator, _ = cluster
    kube = ScriptedKube(emulator.api_client(), RetryPolicy(attempts=1))
    kube.conflicts = 3
    health = aws_event("scheduled-change", instance="i-0a1b2c3d4e5f60004", event_id="health-1")

    with pytest.raises(AllRecordsFailed):
        run(cluster, kube, health)

    assert kube.node_patches == [MAINTAINED_NODE] * 3
    node = emulator.get_object("Node", MAINTAINED_NODE)
    assert node is not None and not node["spec"].get("unschedulable")


def test_an_unread_taint_answered_404_sends_no_second_variant(
    cluster: tuple[Emulator, list[dict[str, Any]]],
) -> None:
    emulator, _ = cluster
    assert emulator.delete_object("Node", SPOT_NODE)  # gone; EC2 still names it
    kube = ScriptedKube(emulator.api_client(), RetryPolicy(attempts=1))
    spot = aws_event("spot-interruption", instance="i-0a1b2c3d4e5f60001", event_id="spot-1")

    run(cluster, kube, spot)

    assert kube.node_patches == [SPOT_NODE]

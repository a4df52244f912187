"""The ``TaintEffect`` setting (``LIFEBOAT_TAINT_EFFECT``) end to end: an SQS batch through
``lifeboat.runtime.handler.handle_batch`` and the pipeline, on the real kubernetes client over HTTP
to the emulator, on both of Lifeboat's taint paths.

- The fast path of an involuntary notice: the node is patched before it is read
  (``Actor.taint_unread`` with ``node_patches.unread_taint_variants``).
- The read-then-patch path of a voluntary notice (``NodeMarker.taint`` with
  ``node_patches.taint_operations``).

Each test records the JSON patches sent to the node, so a path that sent ``NoSchedule``
and had another step correct it afterwards is caught too: the node must never carry an
effect other than the one configured.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.objects import MutableObj
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from lifeboat_local.directory import directory_from_objects
from tests.support.events import aws_event, sqs_batch
from tests.support.fakes import LambdaContext
from tests.support.paths import EVENTS

# The sample cluster's clock: a Tuesday afternoon (NodePool batch allows one disruption).
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
SPOT_NODE = "ip-10-0-1-11.ec2.internal"  # i-0a1b2c3d4e5f60001, NodePool general
MAINTAINED_NODE = "ip-10-0-2-14.ec2.internal"  # i-0a1b2c3d4e5f60004, NodePool batch


class PatchRecordingKube(KubeApi):
    """The real client, remembering the taints each node patch wrote."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.node_patches: list[tuple[str, list[MutableObj]]] = []

    def patch_node(self, name: str, operations: list[MutableObj]) -> MutableObj:
        self.node_patches.append((name, operations))
        return super().patch_node(name, operations)


def taints_written(operations: list[MutableObj]) -> list[dict[str, Any]]:
    """The taints an RFC 6902 patch adds or replaces (a list, or one appended with ``/-``)."""
    written: list[dict[str, Any]] = []
    for op in operations:
        if op["op"] not in ("add", "replace") or not op["path"].startswith("/spec/taints"):
            continue
        value = op["value"]
        written += value if isinstance(value, list) else [value]
    return written


@pytest.fixture
def cluster() -> Iterator[tuple[Emulator, list[dict[str, Any]]]]:
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    with Emulator(objects) as emulator:
        emulator.ensure_namespace("lifeboat")  # the per-NodePool Leases of voluntary notices
        yield emulator, objects


def run_handler(
    emulator: Emulator, objects: list[dict[str, Any]], effect: str, event: dict[str, Any]
) -> tuple[PatchRecordingKube, dict[str, Any]]:
    kube = PatchRecordingKube(emulator.api_client(), RetryPolicy(attempts=2))
    pipeline = Pipeline(
        clusters=OneCluster(kube),
        directory=directory_from_objects(objects, cluster="prod"),
        settings=Settings(clusters=("prod",), taint_effect=effect),
        clock=lambda: NOW,
        ledger=MemoryLedger(),
    )
    response = handle_batch(sqs_batch(event), LambdaContext(), pipeline, clock=lambda: NOW)
    return kube, response


def lifeboat_taints(node: dict[str, Any] | None) -> list[tuple[str, str]]:
    assert node is not None
    return [
        (t["key"], t["effect"])
        for t in node["spec"].get("taints", [])
        if t["key"].startswith("lifeboat.dev/")
    ]


@pytest.mark.parametrize("effect", ["NoExecute", "NoSchedule"])
def test_a_spot_warning_taints_with_the_configured_effect_on_the_unread_fast_path(
    cluster: tuple[Emulator, list[dict[str, Any]]], effect: str
) -> None:
    emulator, objects = cluster
    spot = aws_event("spot-interruption", instance="i-0a1b2c3d4e5f60001", event_id="spot-1")

    kube, response = run_handler(emulator, objects, effect, spot)

    assert response == {"batchItemFailures": []}
    node = emulator.get_object("Node", SPOT_NODE)
    assert lifeboat_taints(node) == [("lifeboat.dev/spot-interruption", effect)]
    assert node is not None and node["spec"]["unschedulable"] is True
    # The first request that touched the node was the unread patch (guarded by the
    # instance's providerID), and it already carried the configured effect.
    first_name, first_ops = kube.node_patches[0]
    assert first_name == SPOT_NODE
    assert first_ops[0] == {
        "op": "test",
        "path": "/spec/providerID",
        "value": "aws:///us-east-1a/i-0a1b2c3d4e5f60001",
    }
    sent = [t for _, ops in kube.node_patches for t in taints_written(ops)]
    ours = [t for t in sent if t["key"] == "lifeboat.dev/spot-interruption"]
    assert ours and all(t["effect"] == effect for t in ours)


@pytest.mark.parametrize("effect", ["NoExecute", "NoSchedule"])
def test_scheduled_maintenance_taints_with_the_configured_effect_on_the_read_then_patch_path(
    cluster: tuple[Emulator, list[dict[str, Any]]], effect: str
) -> None:
    emulator, objects = cluster
    health = aws_event("scheduled-change", instance="i-0a1b2c3d4e5f60004", event_id="health-1")

    kube, response = run_handler(emulator, objects, effect, health)

    assert response == {"batchItemFailures": []}
    node = emulator.get_object("Node", MAINTAINED_NODE)
    assert lifeboat_taints(node) == [("lifeboat.dev/scheduled-change", effect)]
    assert node is not None and node["spec"]["unschedulable"] is True
    # A voluntary notice never takes the unread path: its patch tests the node as read.
    assert kube.node_patches
    assert all(ops[0]["path"] != "/spec/providerID" for _, ops in kube.node_patches)
    sent = [t for _, ops in kube.node_patches for t in taints_written(ops)]
    ours = [t for t in sent if t["key"] == "lifeboat.dev/scheduled-change"]
    assert ours and all(t["effect"] == effect for t in ours)

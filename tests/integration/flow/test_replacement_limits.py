"""Issue 34, item 4: a replacement within its NodePool's ``spec.limits``, for every kind.

- Usage: Karpenter's provisioner weighs limits against its cluster state
  (``Cluster.NodePoolResourcesFor``), never against ``status.resources``; a pool whose status
  Karpenter has not written (a cluster file written by hand) has its usage summed from its
  Nodes and NodeClaims (:mod:`lifeboat.karpenter.pool_usage`), for an involuntary notice too
  (it got no replacement before: "Karpenter has not counted its usage yet").
- Instance types: ``filterByRemainingResources`` (scheduler.go) offers a new claim only the
  types whose capacity fits ``limits - usage``; Lifeboat's claim says it in
  ``karpenter.k8s.aws/instance-cpu`` and ``instance-memory`` bounds
  (:mod:`lifeboat.karpenter.limits`).

Through the real ``kubernetes`` client to the emulator, the sample's Spot interruption of
``general-7xkqz`` (m5.large, 2 cpu, 7934456Ki) in pool ``general`` (six such nodes: 12 cpu,
51693672Ki of memory).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups
from lifeboat_local.directory import directory_from_objects
from tests.support.paths import EVENTS

NOW = datetime(2026, 12, 1, 14, 2, 30, tzinfo=UTC)
OLD_CLAIM = "general-7xkqz"


def _spot(limits: dict[str, str], *, counted: bool) -> Iterator[tuple[Report, Emulator]]:
    objects = copy.deepcopy(load_cluster_file(EVENTS / "cluster.yaml"))
    for obj in objects:
        if obj["kind"] == "NodePool" and obj["metadata"]["name"] == "general":
            obj["spec"]["limits"] = dict(limits)
            if not counted:
                del obj["status"]["resources"]
    with Emulator(copy.deepcopy(objects)) as emu:
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(objects),
            settings=Settings(),
            clock=lambda: NOW,
            wakeups=MemoryWakeups(),
            ledger=MemoryLedger(),
        )
        event = json.loads((EVENTS / "spot-interruption.json").read_text())
        [result] = pipeline.process([json.dumps(event)])
        assert result.error is None, result.error
        [report] = result.reports
        yield report, emu


def _replacement(report: Report, emu: Emulator) -> dict[str, Any]:
    [create] = [a for a in report.actions if a["type"] == "create-nodeclaim"]
    assert "error" not in create, create
    claim = emu.get_object("NodeClaim", create["name"])
    assert claim is not None
    return claim


def _bounds(claim: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    return {
        r["key"]: (r["operator"], r["values"])
        for r in claim["spec"]["requirements"]
        if r["key"].startswith("karpenter.k8s.aws/instance-") and r["operator"] == "Lt"
    }


def test_an_involuntary_notice_on_a_pool_without_status_counts_usage_from_cluster_state() -> None:
    """Limits 14 cpu and 60Gi, no ``status.resources``: usage from the pool's Nodes and
    claims (12 cpu, 51693672Ki); the old node leaves, so 4 cpu and 19155344Ki remain: the
    replacement allows at most 4 vCPUs and 20223 MiB of instance memory (Karpenter's
    capacity 20223 - ceil(20223 x 0.075) = 18706 MiB fits what remains)."""
    for report, emu in _spot({"cpu": "14", "memory": "60Gi"}, counted=False):
        assert report.outcome == "acted"
        assert "no replacement" not in report.reason
        claim = _replacement(report, emu)
        assert _bounds(claim) == {
            "karpenter.k8s.aws/instance-cpu": ("Lt", ["5"]),
            "karpenter.k8s.aws/instance-memory": ("Lt", ["20224"]),
        }


@pytest.mark.parametrize("counted", [True, False], ids=["status", "cluster-state"])
def test_a_pool_at_its_limit_gets_a_replacement_like_the_node_that_leaves(counted: bool) -> None:
    """At the limit (12 cpu used of 12): the old node's 2 cpu come back; instance-cpu < 3.
    The old type (m5.large) stays allowed."""
    for report, emu in _spot({"cpu": "12"}, counted=counted):
        claim = _replacement(report, emu)
        assert _bounds(claim) == {"karpenter.k8s.aws/instance-cpu": ("Lt", ["3"])}


@pytest.mark.parametrize("counted", [True, False], ids=["status", "cluster-state"])
def test_a_pool_past_its_limit_gets_no_replacement_and_its_claim_still_goes(
    counted: bool,
) -> None:
    """``Provisioner.Create`` refuses once ``Limits.ExceededBy(usage)``: 12 cpu used of 11.
    The instance goes anyway: the old claim is still deleted."""
    for report, emu in _spot({"cpu": "11"}, counted=counted):
        assert report.outcome == "acted"
        assert "no replacement: NodePool general is past its limit cpu: 12 used of 11" in (
            report.reason
        )
        assert "create-nodeclaim" not in [a["type"] for a in report.actions]
        old = emu.get_object("NodeClaim", OLD_CLAIM)
        assert old is not None and old["metadata"].get("deletionTimestamp")


def test_limits_far_away_leave_the_claim_as_before() -> None:
    """The sample's limit (1000 cpu) is above the largest EC2 instance (896 vCPUs): no
    bound is written, the claim is as without limits."""
    for report, emu in _spot({"cpu": "1000"}, counted=True):
        assert _bounds(_replacement(report, emu)) == {}


def test_limits_on_resources_no_label_describes_are_named_in_the_note() -> None:
    """``pods`` has no instance-type label: not narrowed per type; the action's note says so."""
    for report, emu in _spot({"cpu": "14", "pods": "1000"}, counted=False):
        [create] = [a for a in report.actions if a["type"] == "create-nodeclaim"]
        assert "limits not narrowed per instance type: pods" in create["note"]
        assert _bounds(_replacement(report, emu)) == {
            "karpenter.k8s.aws/instance-cpu": ("Lt", ["5"])
        }

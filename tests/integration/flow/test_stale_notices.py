"""A notice past its age limit is never forced (issue 23.2): a backlog or a DLQ redrive of a
Health event three days past its start, or of a Spot warning long past its deadline, is
judged from the present state as a voluntary notice (budgets, do-not-disrupt), once; a stop
warning whose instance is running again changes nothing.

Through the pipeline, the official client over HTTP and the emulator loaded with the sample
cluster; the clock is injected.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubemu import Emulator, load_cluster_file
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi, RetryPolicy
from lifeboat.model.instances import StaticInstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings
from lifeboat.wakeup.codec import MemoryWakeups
from lifeboat_local.directory import directory_from_objects

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events"
OBJECTS = load_cluster_file(EVENTS / "cluster.yaml")
SPOT = (EVENTS / "spot-interruption.json").read_text()  # 14:02, deadline 14:04
SCHEDULED = (EVENTS / "scheduled-change.json").read_text()  # starts 2026-12-08 09:00
STATE_CHANGE = (EVENTS / "state-change.json").read_text()  # i-...0003 stopping, 14:03
SPOT_NODE = "ip-10-0-1-11.ec2.internal"


def _objects(
    budget: str, pool: str = "general", do_not_disrupt: str | None = None
) -> list[dict[str, Any]]:
    objects = copy.deepcopy(OBJECTS)
    for obj in objects:
        if obj["kind"] == "NodePool" and obj["metadata"]["name"] == pool:
            obj["spec"]["disruption"]["budgets"] = [{"nodes": budget}]
        if obj["kind"] == "Node" and obj["metadata"]["name"] == do_not_disrupt:
            obj["metadata"].setdefault("annotations", {})["karpenter.sh/do-not-disrupt"] = "true"
    return objects


def _run(
    objects: list[dict[str, Any]], body: str, now: datetime, *, running: str | None = None
) -> tuple[list[Report], Emulator]:
    directory = directory_from_objects(objects)
    if running is not None:
        [info] = directory.describe([running]).values()
        directory = StaticInstanceDirectory(
            [
                *directory.describe([i for i in _instances(objects) if i != running]).values(),
                replace(info, state="running"),
            ]
        )
    emu = Emulator(objects).__enter__()
    pipeline = Pipeline(
        clusters=OneCluster(KubeApi(emu.api_client(), RetryPolicy(attempts=2, base_delay=0.01))),
        directory=directory,
        settings=Settings(),
        clock=lambda: now,
        wakeups=MemoryWakeups(),
        ledger=MemoryLedger(),
        workers=4,
    )
    [result] = pipeline.process([body])
    return list(result.reports), emu


def _instances(objects: list[dict[str, Any]]) -> list[str]:
    return [
        o["spec"]["providerID"].rsplit("/", 1)[-1]
        for o in objects
        if o["kind"] == "Node" and o.get("spec", {}).get("providerID")
    ]


def test_a_health_event_three_days_past_its_start_is_never_forced() -> None:
    """Regression: a redriven Health event past its start forced every named node out,
    ignoring the pool's budget and do-not-disrupt."""
    blocked = "ip-10-0-3-15.ec2.internal"  # i-...0005, NodePool batch
    objects = _objects("1", pool="batch", do_not_disrupt=blocked)
    start = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)
    reports, emu = _run(objects, SCHEDULED, start + timedelta(days=3))
    try:
        by_node = {r.node: r for r in reports}
        assert set(by_node) == {"ip-10-0-2-14.ec2.internal", blocked}
        assert [r.forced for r in reports] == [False, False], [r.reason for r in reports]
        assert all("stale" in r.reason for r in reports)
        # The budget of 1 lets one go; the node marked do-not-disrupt is let go, not forced.
        assert by_node["ip-10-0-2-14.ec2.internal"].outcome is Outcome.ACTED
        assert by_node[blocked].outcome is Outcome.IGNORED
        assert "never forced" in by_node[blocked].reason
        node = emu.get_object("Node", blocked)
        assert node is not None and not node["spec"].get("unschedulable")
    finally:
        emu.__exit__(None, None, None)


def test_a_spot_warning_long_past_its_deadline_is_not_forced_past_a_budget_of_0() -> None:
    """Regression: a backlogged Spot warning acted as if fresh. Its instance is still
    there, so it is judged now: the pool allows no disruption, so it is let go."""
    reports, emu = _run(_objects("0"), SPOT, datetime(2026, 12, 1, 14, 30, tzinfo=UTC))
    try:
        [report] = reports
        assert report.outcome is Outcome.IGNORED and not report.forced
        assert "stale" in report.reason and "never forced" in report.reason
        node = emu.get_object("Node", SPOT_NODE)
        assert node is not None and not node["spec"].get("unschedulable")
        assert not node["spec"].get("taints")
    finally:
        emu.__exit__(None, None, None)


def test_a_fresh_spot_warning_still_acts_whatever_the_budget() -> None:
    reports, emu = _run(_objects("0"), SPOT, datetime(2026, 12, 1, 14, 5, tzinfo=UTC))
    try:
        [report] = reports
        assert report.outcome is Outcome.ACTED, report.reason
        assert "stale" not in report.reason
    finally:
        emu.__exit__(None, None, None)


def test_a_stop_warning_whose_instance_runs_again_changes_nothing() -> None:
    """Regression: a stale stop warning replaced a node that was Ready again."""
    reports, emu = _run(
        copy.deepcopy(OBJECTS),
        STATE_CHANGE,
        datetime(2026, 12, 1, 14, 4, tzinfo=UTC),
        running="i-0a1b2c3d4e5f60003",
    )
    try:
        [report] = reports
        assert report.outcome is Outcome.IGNORED, report.reason
        assert "running again" in report.reason
        assert emu.requests_by_resource[("patch", "nodes")] == 0
    finally:
        emu.__exit__(None, None, None)

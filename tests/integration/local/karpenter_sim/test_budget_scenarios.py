"""Budgets, windows, do-not-disrupt and deferred work, end to end through ``lifeboat replay``.

Each test runs the command line (``lifeboat_local.cli.main``) on the sample cluster
(events/cluster.yaml) with event files written into tmp_path from the samples. The sample
cluster: NodePool ``general`` has 6 nodes and the budgets "20%" always (2 nodes) and "0"
Mon-Fri 09:00-17:00 UTC; NodePool ``batch`` has 2 nodes and the budget "1". 2026-12-01 is a
Tuesday.

With ``--follow`` the replay moves a simulated clock from wake-up to wake-up, and through
what a simulated Karpenter (lifeboat_local.karpenter_sim) does meanwhile: a claim launches
5 s after it is created and its Node is Ready 60 s after; a deleted claim's node is drained
(pods move to where they fit, their replacement) and removed 90 s after the deletion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubemu import dump_cluster_file, load_cluster_file
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat_local.cli import main
from lifeboat_local.common import parse_instant
from lifeboat_local.karpenter_sim import TERMINATE_TIME
from tests.support.replaying import (
    CLUSTER,
    EVENING,
    EVENTS,
    IN_WINDOW,
    Lines,
    at_of,
    only,
    rebalance_event,
    replay,
    run_with_timeout,
    spot_event,
    types,
)

# -- (a), (b), (f): the business-hours window -------------------------------------------------


def test_rebalance_inside_the_window_is_deferred_to_its_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = replay(
        capsys, EVENTS / "rebalance-recommendation.json", "--cluster", CLUSTER, "--at", IN_WINDOW
    )
    (line,) = lines
    assert line["outcome"] == "deferred"
    assert line["deferred_until"] == "2026-12-01T17:00:00Z"
    assert line["node"] == "ip-10-0-1-12.ec2.internal"
    assert line["nodepool"] == "general"
    assert 'budget[1] "0" (window "0 9 * * mon-fri" for 8h0m0s)' in line["reason"]
    # Marked as pending (PreferNoSchedule), neither cordoned nor replaced.
    assert line["actions"] == [
        {
            "type": "taint",
            "key": "lifeboat.dev/rebalance-recommendation",
            "effect": "PreferNoSchedule",
        }
    ]


def test_rebalance_after_the_window_acts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "after.yaml"
    lines = replay(
        capsys,
        EVENTS / "rebalance-recommendation.json",
        "--cluster",
        CLUSTER,
        "--at",
        EVENING,
        "--state-out",
        state,
    )
    (line,) = lines
    assert line["outcome"] == "acted"
    assert line["deferred_until"] is None
    assert 'budget[0] "20%" of 6 nodes = 2, 0 disrupting' in line["reason"]
    # The hand-over: the replacement is created and the old claim deleted at once.
    assert types(line) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    assert line["actions"][0]["effect"] == "NoSchedule"
    assert line["actions"][4] == {"type": "delete-nodeclaim", "name": "general-b4wpl"}

    objects = load_cluster_file(state)
    node = next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == line["node"])
    assert node["spec"]["unschedulable"] is True
    assert node_marks.lifeboat_taint(node) == {
        "key": "lifeboat.dev/rebalance-recommendation",
        "effect": "NoSchedule",
    }
    replacement = next(
        o
        for o in objects
        if o["kind"] == "NodeClaim" and o["metadata"]["name"] == line["actions"][3]["name"]
    )
    assert nodes.labels_of(replacement)[nodes.NODEPOOL_LABEL] == "general"
    assert nodes.labels_of(replacement)[node_marks.REPLACES_LABEL] == "general-b4wpl"
    old = next(
        o for o in objects if o["kind"] == "NodeClaim" and o["metadata"]["name"] == "general-b4wpl"
    )
    # Deleted: Karpenter's termination finalizer keeps it while it drains the node.
    assert old["metadata"]["deletionTimestamp"]


def test_follow_acts_on_the_deferred_rebalance_when_the_window_closes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = run_with_timeout(
        lambda: replay(
            capsys,
            EVENTS / "rebalance-recommendation.json",
            "--cluster",
            CLUSTER,
            "--at",
            IN_WINDOW,
            "--follow",
        )
    )
    first, *timeline = lines
    assert first["outcome"] == "deferred"
    assert "at" not in first  # decided at --at, before the clock moved
    ats = [at_of(line) for line in timeline]
    assert ats == sorted(ats)
    acted = [line for line in timeline if line["outcome"] == "acted"]
    # 17:00 exactly: the wake-up was scheduled for the window's end, nothing earlier acted.
    assert acted[0]["at"] == "2026-12-01T17:00:00Z"
    assert types(acted[0]) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    assert all(at_of(line) >= at_of(acted[0]) for line in timeline)
    # One decision does it all: no follow-up for the replacement.
    assert len(acted) == 1


# -- (c): the 20 % used up --------------------------------------------------------------------


def test_third_rebalance_waits_for_capacity_when_twenty_percent_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [rebalance_event(tmp_path, f"i-0a1b2c3d4e5f6000{n}") for n in (2, 3, 7)]
    lines = replay(capsys, *files, "--cluster", CLUSTER, "--at", EVENING)
    assert [line["outcome"] for line in lines] == ["acted", "acted", "deferred"]
    assert 'budget[0] "20%" of 6 nodes = 2, 1 disrupting' in lines[1]["reason"]
    third = lines[2]
    assert third["instance_id"] == "i-0a1b2c3d4e5f60007"
    # No time is known at which the pool allows it: it waits for capacity (null), and is
    # looked at again every few minutes until then.
    assert third["deferred_until"] is None
    assert 'budget[0] "20%" of 6 nodes = 2, 2 disrupting' in third["reason"]
    assert "waiting for disrupting nodes to finish" in third["reason"]
    assert types(third) == ["taint"]
    assert third["actions"][0]["effect"] == "PreferNoSchedule"


# -- (d), (e): scheduled maintenance in pool batch ---------------------------------------------


def test_scheduled_change_acts_on_one_batch_node_and_defers_the_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = replay(
        capsys, EVENTS / "scheduled-change.json", "--cluster", CLUSTER, "--at", IN_WINDOW
    )
    first, second = only(lines, "i-0a1b2c3d4e5f60004"), only(lines, "i-0a1b2c3d4e5f60005")
    assert (first["nodepool"], second["nodepool"]) == ("batch", "batch")
    assert first["outcome"] == "acted"
    assert types(first) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    assert second["outcome"] == "deferred"
    assert 'budget[0] "1" = 1, 1 disrupting' in second["reason"]
    # Waits for capacity, but never past startTime minus the 30-minute lead; startTime
    # (09:00 on the 8th, sent 13:30) keeps its offset from the instant it is handled (14:05).
    assert second["deferred_until"] == "2026-12-08T09:05:00Z"
    assert "acting at 2026-12-08T09:05:00Z regardless" in second["reason"]


def test_follow_acts_on_the_deferred_batch_node_once_the_first_is_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "after.yaml"
    lines = run_with_timeout(
        lambda: replay(
            capsys,
            EVENTS / "scheduled-change.json",
            "--cluster",
            CLUSTER,
            "--at",
            IN_WINDOW,
            "--follow",
            "--state-out",
            state,
        )
    )
    initial = [line for line in lines if "at" not in line]
    timeline = [line for line in lines if "at" in line]
    assert lines == initial + timeline  # the decisions at --at come first
    assert [line["outcome"] for line in initial] == ["acted", "deferred"]
    ats = [at_of(line) for line in timeline]
    assert ats == sorted(ats), "the timeline is not in time order"
    assert ats[0] >= parse_instant(IN_WINDOW)

    def acted(instance: str, action: str) -> dict[str, Any]:
        (line,) = [
            item
            for item in timeline
            if item["instance_id"] == instance
            and item["outcome"] == "acted"
            and action in types(item)
        ]
        return line

    second = acted("i-0a1b2c3d4e5f60005", "create-nodeclaim")
    assert types(second) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    # Within the budget again (not forced by the deadline) ...
    assert 'NodePool batch allows it (budget[0] "1" = 1, 0 disrupting)' in second["reason"]
    # ... once the first node went (its claim deleted at --at, then the simulated drain and
    # termination), at its 5-minute recheck ...
    assert at_of(second) >= parse_instant(IN_WINDOW) + TERMINATE_TIME
    # ... and well before AWS's startTime minus the lead.
    assert at_of(second) < parse_instant("2026-12-08T08:30:00Z")
    assert second is timeline[-1]
    # Never two batch nodes disrupted at once: the second started after the first went.
    assert len(lines) < 20

    objects = load_cluster_file(state)
    batch_nodes = [
        o
        for o in objects
        if o["kind"] == "Node" and nodes.labels_of(o).get(nodes.NODEPOOL_LABEL) == "batch"
    ]
    by_name = {nodes.name_of(n): n for n in batch_nodes}
    # --follow runs until the simulated cluster settles: both old nodes are gone, their
    # claims too; the two replacements joined, Ready, with the pool's template, and hold the
    # pods that were on the old nodes (the hand-over).
    assert "ip-10-0-2-14.ec2.internal" not in by_name
    assert "ip-10-0-3-15.ec2.internal" not in by_name
    assert len(by_name) == 2
    pods_on = {
        o["spec"]["nodeName"]
        for o in objects
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("nightly-report")
    }
    assert pods_on == set(by_name)
    for node in by_name.values():
        assert nodes.is_ready(node)
        assert not node_marks.is_disrupting(node)
        assert {"key": "workload", "value": "batch", "effect": "NoSchedule"} in nodes.taints(node)
    claims = {nodes.name_of(o): o for o in objects if o["kind"] == "NodeClaim"}
    assert "batch-q2vtn" not in claims
    assert "batch-zk8rm" not in claims


def test_follow_prints_a_readable_timeline_in_time_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def run() -> Lines:
        code = main(
            [
                "replay",
                str(EVENTS / "scheduled-change.json"),
                "--cluster",
                str(CLUSTER),
                "--at",
                IN_WINDOW,
                "--follow",
            ]
        )
        assert code == 0
        return [{"text": line} for line in capsys.readouterr().out.splitlines()]

    lines = [item["text"] for item in run_with_timeout(run)]
    assert lines[0].split() == ["TIME", "(UTC)", "WHAT", "KIND", "INSTANCE", "NODE", "POOL"]
    rows = [line.split() for line in lines[1:] if not line.startswith(" ")]
    assert rows[0][:3] == [IN_WINDOW, "acted", "scheduled-change"]
    assert rows[1][:3] == [IN_WINDOW, "deferred", "scheduled-change"]
    stamps = [row[0] for row in rows]
    assert all(len(stamp) == 20 and stamp.endswith("Z") for stamp in stamps)
    assert stamps == sorted(stamps)
    assert all(len(line) <= 160 for line in lines)


# -- (g): a budget that does not parse blocks the pool ----------------------------------------


def test_unparseable_budget_blocks_the_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = load_cluster_file(CLUSTER)
    general = next(o for o in objects if o["kind"] == "NodePool" and nodes.name_of(o) == "general")
    budgets = general["spec"]["disruption"]["budgets"]
    assert budgets[1]["schedule"] == "0 9 * * mon-fri"
    budgets[1]["schedule"] = "0 0 * * tue-mon"
    cluster = tmp_path / "broken.yaml"
    dump_cluster_file(objects, cluster)

    lines = replay(
        capsys,
        rebalance_event(tmp_path, "i-0a1b2c3d4e5f60002"),
        spot_event(tmp_path, "i-0a1b2c3d4e5f60003", "2026-12-01T17:59:00Z"),
        "--cluster",
        cluster,
        "--at",
        EVENING,  # outside the would-be window: only the parse error blocks
        "--same-instant",  # both judged at EVENING
    )
    rebalance, spot = lines
    assert rebalance["outcome"] == "deferred"
    assert rebalance["deferred_until"] is None
    assert "NodePool general blocked" in rebalance["reason"]
    assert "budget[1]" in rebalance["reason"]
    assert "beginning of range" in rebalance["reason"]
    assert "tue-mon" in rebalance["reason"]
    # Involuntary notices are not held back by budgets, valid or not.
    assert spot["outcome"] == "acted"
    assert "delete-nodeclaim" in types(spot)


# -- (h): do-not-disrupt ----------------------------------------------------------------------


def test_do_not_disrupt_pod_defers_a_rebalance_but_not_a_spot_interruption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance = "i-0a1b2c3d4e5f60008"
    lines = replay(
        capsys,
        rebalance_event(tmp_path, instance),
        spot_event(tmp_path, instance, "2026-12-01T17:59:00Z"),
        "--cluster",
        CLUSTER,
        "--at",
        EVENING,  # the budget allows it: only the pod blocks
        "--same-instant",  # both judged at EVENING
    )
    rebalance, spot = lines
    assert rebalance["node"] == spot["node"] == "ip-10-0-1-18.ec2.internal"
    assert rebalance["outcome"] == "deferred"
    assert rebalance["deferred_until"] is None
    assert "pod data/spark-etl-driver-0" in rebalance["reason"]
    assert "karpenter.sh/do-not-disrupt=true" in rebalance["reason"]
    assert spot["kind"] == "spot-interruption"
    assert spot["outcome"] == "acted"
    assert types(spot) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    assert spot["actions"][-1]["name"] == "general-t6gdw"

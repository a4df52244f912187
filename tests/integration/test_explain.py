"""``lifeboat explain``: the real decide() on the real emulator, and nothing written."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import lifeboat_local.source
from kubemu import Emulator
from lifeboat.selectors import selector_matches
from lifeboat_local.cli import build_parser
from lifeboat_local.explain import run
from lifeboat_local.replay import run as replay
from tests.support.events import aws_event
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

CLUSTER = SAMPLE_CLUSTER
WRITE_VERBS = ("create", "update", "patch", "delete")
TUESDAY = "2026-12-01T14:05:00Z"
SATURDAY = "2026-12-05T12:00:00Z"


@pytest.fixture
def emulators(monkeypatch: pytest.MonkeyPatch) -> list[Emulator]:
    """Every emulator the command starts, kept for a look at its request counters."""
    started: list[Emulator] = []

    class Recording(Emulator):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(lifeboat_local.source, "Emulator", Recording)
    return started


def explain(*argv: str) -> tuple[int, str]:
    args = build_parser().parse_args(["explain", *argv])
    out = io.StringIO()
    return run(args, out), out.getvalue()


def explain_json(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    status, text = explain(*argv, "--json")
    return status, [json.loads(line) for line in text.splitlines()]


def rebalance_event(tmp_path: Path, instance: str, time: str = "2026-12-01T14:01:30Z") -> Path:
    event = aws_event(
        "rebalance-recommendation", instance=instance, event_id=f"explain-{instance}", time=time
    )
    path = tmp_path / f"rebalance-{instance}.json"
    path.write_text(json.dumps(event))
    return path


def test_rebalance_in_the_freeze_names_the_window_and_changes_nothing(
    emulators: list[Emulator],
) -> None:
    event = str(EVENTS / "rebalance-recommendation.json")
    status, text = explain(event, "--cluster", str(CLUSTER), "--at", TUESDAY)
    assert status == 0
    assert "rebalance-recommendation, voluntary" in text
    assert "node:        ip-10-0-1-12.ec2.internal (Ready, schedulable, not disrupting)" in text
    assert "NodeClaim:   general-b4wpl" in text
    assert "NodePool:    general: 6 node(s), 0 disrupting" in text
    assert 'budget[0] nodes "20%", always: ACTIVE; limit 2' in text
    assert (
        'budget[1] nodes "0", schedule "0 9 * * mon-fri" for 8h0m0s: ACTIVE, '
        "window ends 2026-12-01T17:00:00Z; limit 0"
    ) in text
    assert "gives up at 2026-12-02T14:01:30Z" in text
    assert "decision:    DEFERRED until 2026-12-01T17:00:00Z" in text
    assert "next permitted at 2026-12-01T17:00:00Z" in text
    # The shop/checkout PDB covers the checkout pod on this node.
    assert "PDB:         shop/checkout minAvailable 66%: disruptionsAllowed 1" in text
    assert "on this node: checkout-7c9d8f6b5-v8kqn" in text
    [emulator] = emulators
    assert emulator.requests["get"] + emulator.requests["list"] > 0
    assert {verb: emulator.requests[verb] for verb in WRITE_VERBS} == dict.fromkeys(WRITE_VERBS, 0)


def test_json_has_budgets_pool_and_decision() -> None:
    event = str(EVENTS / "rebalance-recommendation.json")
    status, [entry] = explain_json(event, "--cluster", str(CLUSTER), "--at", TUESDAY)
    assert status == 0
    assert (entry["kind"], entry["voluntary"], entry["deadline"]) == (
        "rebalance-recommendation",
        True,
        None,
    )
    pool = entry["pool"]
    assert (pool["name"], pool["nodes"], pool["disrupting"]) == ("general", 6, 0)
    assert (pool["limit"], pool["allowed"], pool["binding_budget"]) == (0, 0, 1)
    budget = pool["budgets"][1]
    assert budget["schedule"] == "0 9 * * mon-fri"
    assert budget["duration"] == "8h0m0s"
    assert budget["active"]
    assert budget["window_ends"] == "2026-12-01T17:00:00Z"
    assert entry["decision"]["outcome"] == "deferred"
    assert entry["decision"]["deferred_until"] == "2026-12-01T17:00:00Z"
    assert entry["decision"]["steps"] == ["mark-pending"]


def test_do_not_disrupt_pod_blocks_the_rebalance(tmp_path: Path, emulators: list[Emulator]) -> None:
    event = rebalance_event(tmp_path, "i-0a1b2c3d4e5f60008", "2026-12-05T11:58:00Z")
    # On a Saturday the budget allows it: only the do-not-disrupt pod stands in the way.
    status, text = explain(str(event), "--cluster", str(CLUSTER), "--at", SATURDAY)
    assert status == 0
    assert "node:        ip-10-0-1-18.ec2.internal" in text
    assert (
        "do-not-disrupt: pod data/spark-etl-driver-0 has karpenter.sh/do-not-disrupt=true" in text
    )
    assert "allowed now: 2" in text
    assert "decision:    DEFERRED" in text
    assert "blocked by pod data/spark-etl-driver-0" in text
    [emulator] = emulators
    assert sum(emulator.requests[verb] for verb in WRITE_VERBS) == 0
    _, [entry] = explain_json(str(event), "--cluster", str(CLUSTER), "--at", SATURDAY)
    assert entry["do_not_disrupt"]["blocking"] == (
        "pod data/spark-etl-driver-0 has karpenter.sh/do-not-disrupt=true"
    )


def test_disrupting_nodes_are_named(tmp_path: Path) -> None:
    cluster = CLUSTER.read_text().replace(
        "    providerID: aws:///us-east-1c/i-0a1b2c3d4e5f60003\n  status:",
        "    providerID: aws:///us-east-1c/i-0a1b2c3d4e5f60003\n"
        "    taints:\n    - key: karpenter.sh/disrupted\n      effect: NoSchedule\n  status:",
    )
    assert "karpenter.sh/disrupted" in cluster
    path = tmp_path / "cluster.yaml"
    path.write_text(cluster)
    event = str(rebalance_event(tmp_path, "i-0a1b2c3d4e5f60002", "2026-12-05T11:58:00Z"))
    status, [entry] = explain_json(event, "--cluster", str(path), "--at", SATURDAY)
    assert status == 0
    assert entry["pool"]["disrupting"] == 1
    assert entry["pool"]["disrupting_nodes"] == [
        {"node": "ip-10-0-2-13.ec2.internal", "why": "taint karpenter.sh/disrupted:NoSchedule"}
    ]
    assert entry["pool"]["allowed"] == 1
    assert entry["decision"]["outcome"] == "acted"


def test_involuntary_and_node_group_with_pdbs() -> None:
    status, text = explain(
        str(EVENTS / "asg-termination.json"), "--cluster", str(CLUSTER), "--at", TUESDAY
    )
    assert status == 0
    assert "involuntary (never waits for budgets)" in text
    assert "NodeClaim:   none (not Karpenter-managed: drained by Lifeboat)" in text
    assert "PDB:         kube-system/coredns maxUnavailable 1" in text
    assert "on this node: coredns-5d78c9869d-4xkq2" in text
    assert "decision:    ACTED" in text
    assert "steps:       taint-and-cordon, evict, complete-lifecycle-action" in text


@pytest.mark.parametrize("sample", sorted(p.name for p in EVENTS.glob("*.json")))
def test_same_outcome_as_replay(sample: str) -> None:
    """explain runs the same decide() as replay: same outcome and deferral for each sample.

    Only the first notice of a file is compared: explain changes nothing, so a later notice
    of the same file (scheduled-change names two batch nodes) does not see the slot the
    first one took in replay."""
    _, entries = explain_json(str(EVENTS / sample), "--cluster", str(CLUSTER), "--at", TUESDAY)
    args = build_parser().parse_args(
        ["replay", str(EVENTS / sample), "--cluster", str(CLUSTER), "--at", TUESDAY, "--json"]
    )
    out = io.StringIO()
    replay(args, out)
    reports = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(entries) == len(reports)
    first, report = entries[0], reports[0]
    assert (first["decision"]["outcome"], first["decision"]["deferred_until"]) == (
        report["outcome"],
        report["deferred_until"],
    )
    assert first["kind"] == report["kind"]
    assert first["instance_id"] == report["instance_id"]


def test_unknown_instance_and_malformed_event(tmp_path: Path) -> None:
    unknown = rebalance_event(tmp_path, "i-0fffffffffffffff0")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"detail-type": "EC2 Spot Instance Interruption Warning"}))
    status, entries = explain_json(
        str(unknown), str(broken), "--cluster", str(CLUSTER), "--at", TUESDAY
    )
    assert status == 2
    assert entries[0]["decision"]["outcome"] == "ignored"
    assert "i-0fffffffffffffff0 is unknown" in entries[0]["decision"]["reason"]
    assert entries[1]["decision"]["outcome"] == "rejected"


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"app": "a"}, False),
        ({}, {"app": "a"}, True),
        ({"matchLabels": {"app": "a"}}, {"app": "a", "x": "y"}, True),
        ({"matchLabels": {"app": "a"}}, {"app": "b"}, False),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]},
            {"tier": "web"},
            True,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"app": "a"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"app": "a"}, True),
        (
            {
                "matchLabels": {"app": "a"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}],
            },
            {"app": "a", "tier": "db"},
            False,
        ),
    ],
)
def test_pdb_selector_matching(
    selector: dict[str, Any] | None, labels: dict[str, str], expected: bool
) -> None:
    assert selector_matches(selector, labels) is expected

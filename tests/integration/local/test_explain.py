"""``lifeboat explain``: the Lambda's pipeline judging each notice in its batch, on a disposable
copy of the cluster; the facts read at the moment of each decision; nothing written to the
cluster given (a cluster file, or a live cluster behind a kubeconfig)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat.kube.selectors import selector_matches
from lifeboat_local.cli import build_parser
from lifeboat_local.explain import run
from lifeboat_local.replay import run as replay
from tests.support.events import aws_event
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.paths import EVENTS, ROOT, SAMPLE_CLUSTER

CLUSTER = SAMPLE_CLUSTER
WRITE_VERBS = ("create", "update", "patch", "delete")
TUESDAY = "2026-12-01T14:05:00Z"
SATURDAY = "2026-12-05T12:00:00Z"


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


def test_rebalance_in_the_freeze_names_the_window_and_changes_nothing() -> None:
    event = str(EVENTS / "rebalance-recommendation.json")
    before = CLUSTER.read_bytes()
    status, text = explain(event, "--cluster", str(CLUSTER), "--at", TUESDAY)
    assert CLUSTER.read_bytes() == before
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
    # A day's patience from the instant it is handled at, as if it arrived then.
    assert "gives up at 2026-12-02T14:05:00Z" in text
    assert "decision:    DEFERRED until 2026-12-01T17:00:00Z" in text
    assert "next permitted at 2026-12-01T17:00:00Z" in text
    # The shop/checkout PDB covers the checkout pod on this node.
    assert "PDB:         shop/checkout minAvailable 66%: disruptionsAllowed 1" in text
    assert "on this node: checkout-7c9d8f6b5-v8kqn" in text
    # What carrying the decision out did to the copy: the PreferNoSchedule mark of a deferral.
    assert "would do:    taint lifeboat.dev/rebalance-recommendation:PreferNoSchedule" in text
    assert "nothing was changed" in text


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


def test_do_not_disrupt_pod_blocks_the_rebalance(tmp_path: Path) -> None:
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


def replay_json(*argv: str) -> list[dict[str, Any]]:
    args = build_parser().parse_args(["replay", *argv, "--json"])
    out = io.StringIO()
    replay(args, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def same_decisions(entries: list[dict[str, Any]], reports: list[dict[str, Any]]) -> None:
    assert len(entries) == len(reports)
    for entry, report in zip(entries, reports, strict=True):
        decision = entry["decision"]
        assert (entry["kind"], entry["instance_id"]) == (report["kind"], report["instance_id"])
        assert (decision["outcome"], decision["deferred_until"]) == (
            report["outcome"],
            report["deferred_until"],
        )
        assert decision["reason"] == report["reason"]
        assert [a["type"] for a in decision["actions"]] == [a["type"] for a in report["actions"]]


@pytest.mark.parametrize("sample", sorted(p.name for p in EVENTS.glob("*.json")))
def test_same_decisions_as_replay_for_every_notice(sample: str) -> None:
    """explain and replay run the same pipeline: every notice of every sample gets the same
    outcome, deferral, reason and actions, later notices of a batch included."""
    argv = (str(EVENTS / sample), "--cluster", str(CLUSTER), "--at", TUESDAY)
    _, entries = explain_json(*argv)
    same_decisions(entries, replay_json(*argv))


def test_a_batch_is_judged_in_order_the_second_node_of_a_budget_1_pool_waits() -> None:
    """The AWS Health retirement names both nodes of pool batch (budget "1"): the first takes
    the pool's one slot (Karpenter's GetAllowedDisruptionsByReason: allowed = limit minus
    disrupting), so the second is deferred, as replay and the Lambda would. explain shows the
    second notice's facts as they were when it was decided: the first node disrupting."""
    argv = (str(EVENTS / "scheduled-change.json"), "--cluster", str(CLUSTER), "--at", TUESDAY)
    status, [first, second] = explain_json(*argv)
    assert status == 0
    assert first["decision"]["outcome"] == "acted"
    assert first["pool"]["disrupting"] == 0
    assert second["decision"]["outcome"] == "deferred"
    # The retirement's start (08 Dec 09:00, sent 13:30) keeps its offset from --at (14:05):
    # 09:35, less the 30-minute lead.
    assert second["decision"]["deferred_until"] == "2026-12-08T09:05:00Z"
    assert second["pool"]["disrupting"] == 1
    assert second["pool"]["allowed"] == 0
    assert second["pool"]["disrupting_nodes"] == [
        {
            "node": "ip-10-0-2-14.ec2.internal",
            # The first claim is deleted at once (the hand-over to Karpenter): the node
            # counts as Karpenter counts it, its NodeClaim being deleted.
            "why": "NodeClaim batch-q2vtn deleting",
        }
    ]
    _, text = explain(*argv)
    acted, deferred = text.split("\n\nEvent ")
    assert "decision:    ACTED" in acted
    assert "decision:    DEFERRED until 2026-12-08T09:05:00Z" in deferred
    assert "disrupting: ip-10-0-2-14.ec2.internal" in deferred


def test_earlier_files_take_their_slots_as_in_replay(tmp_path: Path) -> None:
    """Files are judged in order against one copy, as replay runs them: two rebalance
    recommendations on a Saturday (budget 20 % of 6 = 2) and a third one wait for capacity."""
    files = [
        str(rebalance_event(tmp_path, instance, "2026-12-05T11:58:00Z"))
        for instance in ("i-0a1b2c3d4e5f60002", "i-0a1b2c3d4e5f60003", "i-0a1b2c3d4e5f60007")
    ]
    argv = (*files, "--cluster", str(CLUSTER), "--at", SATURDAY)
    _, entries = explain_json(*argv)
    assert [e["decision"]["outcome"] for e in entries] == ["acted", "acted", "deferred"]
    assert [e["pool"]["disrupting"] for e in entries] == [0, 1, 2]
    same_decisions(entries, replay_json(*argv))


def test_unknown_instance_and_malformed_event(tmp_path: Path) -> None:
    unknown = rebalance_event(tmp_path, "i-0fffffffffffffff0")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"detail-type": "EC2 Spot Instance Interruption Warning"}))
    status, entries = explain_json(
        str(unknown), str(broken), "--cluster", str(CLUSTER), "--at", TUESDAY
    )
    assert status == 2
    assert entries[0]["decision"]["outcome"] == "ignored"
    assert entries[0]["decision"]["by"] == "routing"
    assert "i-0fffffffffffffff0 is unknown" in entries[0]["decision"]["reason"]
    assert entries[1]["decision"]["outcome"] == "rejected"
    assert (entries[1]["file"], entries[1]["record"]) == (str(broken), None)


def test_a_rejected_record_of_an_sqs_batch_is_named_by_file_and_index(tmp_path: Path) -> None:
    spot = json.loads((EVENTS / "spot-interruption.json").read_text())
    broken = json.loads(json.dumps(spot))
    del broken["detail"]["instance-id"]
    batch = tmp_path / "batch.json"
    records = [{"messageId": f"m{i}", "body": json.dumps(e)} for i, e in enumerate([spot, broken])]
    batch.write_text(json.dumps({"Records": records}))
    status, [good, bad] = explain_json(str(batch), "--cluster", str(CLUSTER), "--at", TUESDAY)
    assert status == 2
    assert (good["record"], good["decision"]["outcome"]) == (0, "acted")
    assert (bad["file"], bad["record"], bad["kind"]) == (str(batch), 1, "spot-interruption")
    assert bad["decision"]["reason"] == "detail.instance-id: field required"
    _, text = explain(str(batch), "--cluster", str(CLUSTER), "--at", TUESDAY)
    assert (
        f"Message in {batch} Records[1] (spot-interruption): REJECTED -- "
        "detail.instance-id: field required"
    ) in text


def test_a_live_cluster_is_copied_and_never_written(tmp_path: Path) -> None:
    """Through a kubeconfig explain lists the live cluster once and judges on a local copy:
    the live API sees only GET and LIST, and the decisions are those of the cluster file."""
    argv = (str(EVENTS / "scheduled-change.json"), "--at", TUESDAY)
    with Emulator(load_cluster_file(CLUSTER)) as live:
        before = live.dump()
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", live.url)
        status, entries = explain_json(*argv, "--kubeconfig", str(kubeconfig))
        writes = {verb: live.requests[verb] for verb in WRITE_VERBS}
        assert live.dump() == before
    assert status == 0
    assert writes == dict.fromkeys(WRITE_VERBS, 0)
    assert live.requests["list"] >= 5  # nodes, pods, PDBs, NodePools, NodeClaims
    _, from_file = explain_json(*argv, "--cluster", str(CLUSTER))
    assert [e["decision"] for e in entries] == [e["decision"] for e in from_file]
    assert [e["decision"]["outcome"] for e in entries] == ["acted", "deferred"]


def test_production_settings_cordon_a_rebalance_instead_of_replacing() -> None:
    """samconfig's production environment sets KindActions=rebalance-recommendation=cordon;
    explain, like the Lambda deployed with it, cordons and starts no replacement."""
    argv: tuple[str, ...] = (
        str(EVENTS / "rebalance-recommendation.json"),
        "--cluster",
        str(CLUSTER),
    )
    argv += ("--at", "2026-12-01T18:05:00Z", "--config-file", str(ROOT / "samconfig.toml"))
    _, [default] = explain_json(*argv[:-2])
    _, [production] = explain_json(*argv, "--config-env", "production")
    assert default["decision"]["steps"] == [
        "taint-and-cordon",
        "create-nodeclaim",
        "delete-nodeclaim",
    ]
    assert production["decision"]["steps"] == ["taint-and-cordon"]
    assert [a["type"] for a in production["decision"]["actions"]] == ["taint", "cordon", "label"]


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


def test_an_unknown_instance_within_the_grace_period_goes_back_to_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With LIFEBOAT_UNKNOWN_INSTANCE_GRACE_SECONDS the Lambda returns such a message to the
    queue (routing.NotYetKnown); explain says so, as replay does, and exits 1."""
    monkeypatch.setenv("LIFEBOAT_UNKNOWN_INSTANCE_GRACE_SECONDS", "3600")
    event = rebalance_event(tmp_path, "i-0fffffffffffffff0", "2026-12-01T14:01:30Z")
    status, [entry] = explain_json(str(event), "--cluster", str(CLUSTER), "--at", TUESDAY)
    assert status == 1
    assert entry["decision"]["outcome"] == "retried"
    assert "i-0fffffffffffffff0 is unknown" in entry["decision"]["reason"]
    assert entry["decision"]["reason"].endswith("the message would go back to the queue")

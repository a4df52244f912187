"""Issue 22, item 4: the ``when-ready`` hand-over of voluntary notices, through ``lifeboat replay
--json`` (with its Karpenter simulation) and the pipeline on the emulator.

It follows Karpenter's own replace-then-delete (pkg/controllers/disruption/queue.go):
``Queue.waitOrTerminate`` deletes a drifted claim only once every replacement NodeClaim has
the ``Initialized`` condition, and rolls the command back (``CompleteCommand`` unmarks the
candidate) when they do not within ``minRetryDuration`` (10 minutes). Until the hand-over the
replacement carries ``karpenter.sh/do-not-disrupt: "true"``, which
``StateNode.ValidateNodeDisruptable`` (pkg/controllers/state/statenode.go) refuses as a
candidate, reading the NodeClaim's annotations before registration and the Node's after;
``Registration.syncNode`` (pkg/controllers/nodeclaim/lifecycle/registration.go) copies the
claim's annotations onto the Node, so the hand-over removes it from both.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, dump_cluster_file, load_cluster_file
from lifeboat.events.notice import MalformedMessage
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.karpenter.nodepool_hash import HASH_ANNOTATION, nodepool_hash
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.marks import handover
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings, SettingsError, load_settings
from lifeboat.wakeup.codec import MemoryWakeups, Task, decode, encode
from lifeboat_local.cli import main
from lifeboat_local.common import parse_instant
from lifeboat_local.directory import directory_from_objects
from tests.support.replaying import (
    EVENING,
    find,
    rebalance_event,
    run_with_timeout,
    sample,
    sample_cluster,
    spot_event,
    types,
)

CLUSTER = Path(__file__).resolve().parents[3] / "events" / "cluster.yaml"
INSTANCE, CLAIM, NODE = "i-0a1b2c3d4e5f60002", "general-b4wpl", "ip-10-0-1-12.ec2.internal"
Lines = list[dict[str, Any]]
Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def when_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIFEBOAT_HAND_OVER", "when-ready")


def _replay(capsys: pytest.CaptureFixture[str], *args: str | Path) -> Lines:
    def run() -> Lines:
        code = main(["replay", *map(str, args), "--json"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        # The tools say which settings apply (LIFEBOAT_HAND_OVER from the environment).
        assert "voluntary hand-over when-ready" in captured.err
        return [json.loads(line) for line in captured.out.splitlines()]

    lines: Lines = run_with_timeout(run)
    return lines


def _annotations(objects: list[Obj], kind: str, name: str) -> dict[str, str]:
    return dict(nodes.annotations_of(find(objects, kind, name)))


def _initialized_at(claim: Obj) -> datetime:
    (condition,) = [c for c in claim["status"]["conditions"] if c["type"] == "Initialized"]
    return parse_instant(condition["lastTransitionTime"])


def test_the_old_claim_is_kept_until_the_replacement_is_initialized(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Queue.waitOrTerminate: the candidate is deleted only once its replacement has the
    Initialized condition; before that a look finds it not initialized and keeps the claim."""
    state = tmp_path / "after.yaml"
    event = rebalance_event(tmp_path, INSTANCE)
    lines = _replay(
        capsys, event, "--cluster", CLUSTER, "--at", EVENING, "--follow", "--state-out", state
    )
    first, *later = lines
    assert first["outcome"] == "acted"
    # No delete yet; the old node is held out of Karpenter's own disruption meanwhile.
    assert types(first) == ["taint", "cordon", "label", "create-nodeclaim", "hold-node"]
    (create,) = [a for a in first["actions"] if a["type"] == "create-nodeclaim"]
    assert create["protection"] == "karpenter.sh/do-not-disrupt until initialized"
    waits = [line for line in later if line["outcome"] == "deferred"]
    assert waits and all("not initialized yet" in line["reason"] for line in waits)
    (handed,) = [line for line in later if "delete-nodeclaim" in types(line)]
    assert types(handed) == ["unprotect-nodeclaim", "delete-nodeclaim"]
    assert handed["actions"][1]["name"] == CLAIM
    objects = load_cluster_file(state)
    replacement = find(objects, "NodeClaim", create["name"])
    ready = _initialized_at(replacement)
    assert all(parse_instant(line["at"]) < ready for line in waits)
    # Looked at every 30 s: handed over at the first look once it is initialized.
    assert ready <= parse_instant(handed["at"]) < ready + timedelta(seconds=30)
    # The old node was drained onto the replacement and removed.
    assert CLAIM not in {o["metadata"]["name"] for o in objects if o["kind"] == "NodeClaim"}


def test_the_protection_is_on_claim_and_node_until_the_hand_over_then_removed_from_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Registration.syncNode copies the claim's annotations to the Node (lo.Assign, never
    removing), and StateNode.Annotations reads the Node's once registered: do-not-disrupt is
    removed from both at the hand-over, with Lifeboat's marker. The old node carries it while
    it waits too (tainted by Lifeboat only, it would stay a drift candidate)."""
    event = rebalance_event(tmp_path, INSTANCE)
    before = tmp_path / "before.yaml"
    (line,) = _replay(capsys, event, "--cluster", CLUSTER, "--at", EVENING, "--state-out", before)
    (create,) = [a for a in line["actions"] if a["type"] == "create-nodeclaim"]
    waiting = load_cluster_file(before)
    for kind, name in (("NodeClaim", create["name"]), ("Node", NODE)):
        protected = _annotations(waiting, kind, name)
        assert protected[nodes.DO_NOT_DISRUPT] == "true", kind
        assert protected[handover.PROTECTED_ANNOTATION] == "true", kind
    after = tmp_path / "after.yaml"
    _replay(capsys, event, "--cluster", CLUSTER, "--at", EVENING, "--follow", "--state-out", after)
    objects = load_cluster_file(after)
    claim = find(objects, "NodeClaim", create["name"])
    node_name = claim["status"]["nodeName"]
    for kind, name in (("NodeClaim", create["name"]), ("Node", node_name)):
        annotations = _annotations(objects, kind, name)
        assert nodes.DO_NOT_DISRUPT not in annotations, kind
        assert handover.PROTECTED_ANNOTATION not in annotations, kind


def test_a_template_do_not_disrupt_is_the_operators_and_stays() -> None:
    """A NodePool template that says do-not-disrupt is not Lifeboat's to remove."""
    claim: Obj = {"metadata": {"name": "c", "annotations": {nodes.DO_NOT_DISRUPT: "true"}}}
    protected = handover.protect(claim)
    assert handover.PROTECTED_ANNOTATION not in nodes.annotations_of(protected)
    assert handover.unprotect_operations(protected) == []


def test_an_involuntary_notice_is_still_handed_over_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A Spot interruption's instance goes in two minutes whatever Lifeboat does: the old
    claim is deleted as the replacement is created, unprotected (when-ready is for
    voluntary kinds only)."""
    event = spot_event(tmp_path, INSTANCE, "2026-12-01T18:04:00Z")
    state = tmp_path / "after.yaml"
    (line,) = _replay(capsys, event, "--cluster", CLUSTER, "--at", EVENING, "--state-out", state)
    assert types(line) == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    (create,) = [a for a in line["actions"] if a["type"] == "create-nodeclaim"]
    assert "protection" not in create
    annotations = _annotations(load_cluster_file(state), "NodeClaim", create["name"])
    assert nodes.DO_NOT_DISRUPT not in annotations


def _rebalance_body() -> str:
    event = sample("rebalance-recommendation.json")
    event["time"] = "2026-12-01T17:59:00Z"
    event["detail"]["instance-id"] = INSTANCE
    return json.dumps(event)


def test_a_replacement_that_never_initializes_is_given_up_after_ten_minutes() -> None:
    """Queue.waitOrTerminate gives a command's replacements minRetryDuration (10 minutes),
    then CompleteCommand rolls it back: no Karpenter runs here, so the replacement never
    launches. Each look keeps the old claim; after 10 minutes the hand-over is given up: the
    old claim kept, its node back in service (taint, cordon and load balancer exclusion
    off), the replacement's protection removed, and nothing more scheduled."""
    start = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
    clock = [start]
    wakeups = MemoryWakeups()
    objects = sample_cluster()
    with Emulator(objects) as emulator:
        kube = KubeApi(emulator.api_client())
        pipeline = Pipeline(
            clusters=OneCluster(kube),
            directory=directory_from_objects(objects),
            settings=load_settings(),
            clock=lambda: clock[0],
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        reports: list[Report] = []
        (result,) = pipeline.process([_rebalance_body()])
        reports += result.reports
        (replacement,) = [a["name"] for a in reports[0].actions if a["type"] == "create-nodeclaim"]
        for _ in range(100):
            due = wakeups.next_due()
            if due is None:
                break
            clock[0] = due
            for result in pipeline.process([encode(w) for w in wakeups.pop_due(due)]):
                assert result.error is None
                reports += result.reports
        assert wakeups.next_due() is None  # the chain ends
        waiting, final = reports[1:-1], reports[-1]
        assert waiting and all(r.outcome is Outcome.DEFERRED for r in waiting)
        assert clock[0] - start >= handover.PATIENCE
        assert clock[0] - start < handover.PATIENCE + timedelta(seconds=31)
        assert final.outcome is Outcome.IGNORED
        assert "not initialized within 10m" in final.reason and "kept" in final.reason
        assert [a["type"] for a in final.actions] == [
            "unprotect-nodeclaim",
            "uncordon",
            "untaint",
        ]
        assert [a["type"] for a in reports[0].actions][-1] == "hold-node"
        old = kube.get_nodeclaim(CLAIM)
        assert old is not None and not nodes.is_deleting(old)
        node = kube.get_node(NODE)
        assert node is not None
        assert not node["spec"].get("unschedulable")
        assert not [t for t in nodes.taints(node) if str(t["key"]).startswith("lifeboat.dev/")]
        assert nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL not in nodes.labels_of(node)
        assert nodes.DO_NOT_DISRUPT not in nodes.annotations_of(node)  # held no longer
        claim = kube.get_nodeclaim(replacement)
        assert claim is not None
        assert nodes.DO_NOT_DISRUPT not in nodes.annotations_of(claim)


def test_a_hand_over_wake_up_without_its_replacement_is_rejected() -> None:
    """Anyone who may send to the queue can write a wake-up: a hand-over names the old
    claim, its uid, the replacement and when it started."""
    notice = {"kind": "rebalance-recommendation", "event_id": "e", "instance_id": INSTANCE}
    message = {
        "lifeboat-wakeup": 1,
        "task": str(Task.HAND_OVER),
        "notice": {**notice, "event_time": "2026-12-01T18:00:00+00:00"},
        "due": "2026-12-01T18:00:30+00:00",
        "old_nodeclaim": CLAIM,
        "old_nodeclaim_uid": "u-1",
    }
    with pytest.raises(MalformedMessage, match="task hand-over"):
        decode(message)


def test_the_setting_names_its_values() -> None:
    assert Settings().hand_over == "at-once"
    assert load_settings({"LIFEBOAT_HAND_OVER": "when-ready"}).hand_over == "when-ready"
    with pytest.raises(SettingsError, match="LIFEBOAT_HAND_OVER='later'"):
        load_settings({"LIFEBOAT_HAND_OVER": "later"})


def test_the_old_node_is_held_out_of_karpenters_drift_while_it_waits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """StateNode.ValidateNodeDisruptable: the held old node is no candidate; without the
    hold, a drifted pool's node tainted by Lifeboat only would get a second replacement from
    Karpenter's drift. Here every claim of general is drifted, and Karpenter's simulated
    drift runs: the old claim is deleted by Lifeboat's hand-over, never by a drift command."""
    objects = sample_cluster()
    pool = find(objects, "NodePool", "general")
    pool["spec"]["template"]["metadata"]["annotations"] = {"example.com/revision": "2"}
    pool["metadata"]["annotations"][HASH_ANNOTATION] = nodepool_hash(pool)
    cluster = tmp_path / "drifted.yaml"
    dump_cluster_file(objects, cluster)
    state = tmp_path / "after.yaml"
    event = rebalance_event(tmp_path, INSTANCE)
    args = ("--cluster", cluster, "--at", EVENING, "--follow", "--wide", "--state-out", state)
    code = main(["replay", str(event), *map(str, args)])
    out = capsys.readouterr().out
    assert code == 0
    assert "hand-over when ready" in out
    drift_commands = [line for line in out.splitlines() if "  disrupting  " in line]
    assert drift_commands  # Karpenter's drift ran on the pool
    assert not [line for line in drift_commands if f"NodeClaim {CLAIM}:" in line]
    assert CLAIM not in {o["metadata"]["name"] for o in load_cluster_file(state)}


def test_an_old_claim_gone_while_waiting_frees_the_replacement() -> None:
    """Someone else deleted the old claim (an operator, Karpenter's expiry): nothing is left
    to hand over, but the replacement must not keep do-not-disrupt for ever."""
    clock = [datetime(2026, 12, 1, 18, 0, tzinfo=UTC)]
    wakeups = MemoryWakeups()
    objects = sample_cluster()
    with Emulator(objects) as emulator:
        kube = KubeApi(emulator.api_client())
        pipeline = Pipeline(
            clusters=OneCluster(kube),
            directory=directory_from_objects(objects),
            settings=load_settings(),
            clock=lambda: clock[0],
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        (result,) = pipeline.process([_rebalance_body()])
        (replacement,) = [
            a["name"] for a in result.reports[0].actions if a["type"] == "create-nodeclaim"
        ]
        old = kube.get_nodeclaim(CLAIM)
        assert old is not None
        assert emulator.delete_object("NodeClaim", CLAIM)  # gone, finalizers and all
        due = wakeups.next_due()
        assert due is not None
        clock[0] = due
        (woken,) = pipeline.process([encode(w) for w in wakeups.pop_due(due)])
        (report,) = woken.reports
        assert report.outcome is Outcome.IGNORED and "already gone" in report.reason
        assert [a["type"] for a in report.actions] == ["unprotect-nodeclaim"]
        claim = kube.get_nodeclaim(replacement)
        assert claim is not None and nodes.DO_NOT_DISRUPT not in nodes.annotations_of(claim)
        assert wakeups.next_due() is None


def test_a_dry_run_reports_the_when_ready_hand_over_it_would_make(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIFEBOAT_DRY_RUN", "true")
    (line,) = _replay(
        capsys, rebalance_event(tmp_path, INSTANCE), "--cluster", CLUSTER, "--at", EVENING
    )
    assert line["reason"].startswith("dry run, nothing changed")
    assert types(line) == ["taint", "cordon", "label", "create-nodeclaim", "hold-node"]
    assert "is deleted once replacement" in line["reason"]


def test_the_when_ready_hand_over_needs_only_what_rbac_grants() -> None:
    """deploy/rbac.yaml enforced by the emulator: the hand-over (create protected, hold,
    look, release claim and Node, delete) is refused nothing, and uses patch on NodeClaims
    (granted for it alone: test_rbac's GRANTED_BUT_UNUSED)."""
    from lifeboat_local.karpenter_sim import KarpenterSimulation
    from tests.integration.flow.test_rbac import load_rbac

    rbac = load_rbac()
    start = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
    clock = [start]
    wakeups = MemoryWakeups()
    objects = sample_cluster()
    with Emulator(objects) as emulator:
        emulator.enforce_rbac(rbac.cluster_rules + rbac.role_rules)
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client())),
            directory=directory_from_objects(objects),
            settings=Settings(lease_namespace=rbac.lease_namespace, hand_over="when-ready"),
            clock=lambda: clock[0],
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        karpenter = KarpenterSimulation(emulator, start, disruption=False)
        reports: list[Report] = []
        for result in pipeline.process([_rebalance_body()]):
            assert result.error is None, result.error
            reports += result.reports
        for _ in range(20):
            due = wakeups.next_due()
            if due is None:
                break
            clock[0] = due
            karpenter.advance(due)
            for result in pipeline.process([encode(w) for w in wakeups.pop_due(due)]):
                assert result.error is None, result.error
                reports += result.reports
        assert "delete-nodeclaim" in [a["type"] for a in reports[-1].actions]
        verbs = {(resource, verb) for _, resource, verb in emulator.seen_permissions}
        assert ("nodeclaims", "patch") in verbs and ("nodes", "patch") in verbs
        assert emulator.seen_permissions <= rbac.granted()


def test_a_redelivered_hand_over_look_deletes_the_old_claim_once() -> None:
    """SQS delivers at least once: the same look again finds the old claim being deleted
    and reports it as already handed over (``existing``), sending no second DELETE."""
    from lifeboat_local.karpenter_sim import KarpenterSimulation

    start = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
    clock = [start]
    wakeups = MemoryWakeups()
    objects = sample_cluster()
    with Emulator(objects) as emulator:
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client())),
            directory=directory_from_objects(objects),
            settings=Settings(hand_over="when-ready"),
            clock=lambda: clock[0],
            wakeups=wakeups,
            ledger=MemoryLedger(),
        )
        karpenter = KarpenterSimulation(emulator, start, disruption=False)
        pipeline.process([_rebalance_body()])
        handed: list[str] = []
        for _ in range(20):
            due = wakeups.next_due()
            if due is None:
                break
            clock[0] = due
            karpenter.advance(due)
            batch = [encode(w) for w in wakeups.pop_due(due)]
            (result,) = pipeline.process(batch)
            (report,) = result.reports
            if any(a["type"] == "delete-nodeclaim" for a in report.actions):
                handed = batch
                break
        assert handed
        assert emulator.requests_by_resource[("delete", "nodeclaims")] == 1
        emulator.reset_counts()
        (again,) = pipeline.process(handed)
        (report,) = again.reports
        deletes = [a for a in report.actions if a["type"] == "delete-nodeclaim"]
        assert deletes == [{"type": "delete-nodeclaim", "name": CLAIM, "existing": True}]
        assert emulator.requests_by_resource[("delete", "nodeclaims")] == 0

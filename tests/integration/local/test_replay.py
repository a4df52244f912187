"""``lifeboat replay`` end to end (its public JSON contract): the real command-line entry, the
real pipeline, the Kubernetes emulator, the sample cluster and sample events."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lifeboat_local.cli import main
from tests.conftest import CliRun
from tests.support import cyaml
from tests.support.events import sample
from tests.support.paths import EVENTS, ROOT, SAMPLE_CLUSTER

CLUSTER = SAMPLE_CLUSTER
AT = "2026-12-01T14:05:00Z"
EVENTBRIDGE_SAMPLES = sorted(EVENTS.glob("*.json"))
SQS_SAMPLES = sorted((EVENTS / "sqs").glob("*.json"))

CONTRACT_KEYS = {
    "event_id",
    "kind",
    "instance_id",
    "node",
    "nodepool",
    "outcome",
    "reason",
    "deferred_until",
    "recheck_at",
    "actions",
}
ORIGIN_KEYS = {"file", "record"}
KINDS = {
    "spot-interruption",
    "rebalance-recommendation",
    "scheduled-change",
    "state-change",
    "asg-termination",
    "capacity-reservation-interruption",
    "capacity-block-expiry",
    "unsupported",
}
OUTCOMES = {"acted", "deferred", "ignored", "rejected"}
ACTION_TYPES = {
    "taint",
    "cordon",
    "label",
    "create-nodeclaim",
    "delete-nodeclaim",
    "evict",
    "complete-lifecycle-action",
}
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
SPOT_NODE = "ip-10-0-1-11.ec2.internal"
MNG_NODE = "ip-10-0-3-16.ec2.internal"


@pytest.fixture
def lifeboat(cli: Callable[..., CliRun]) -> Callable[..., CliRun]:
    """``lifeboat`` run in-process, its output captured (tests/conftest.py's ``cli``)."""
    return cli


def replay_args(*events: str | Path, state_out: Path | None = None) -> list[str | Path]:
    # Every event at AT: these tests ask what Lifeboat does with them all at one instant.
    args: list[str | Path] = ["replay", *events, "--cluster", CLUSTER, "--at", AT, "--json"]
    args.append("--same-instant")
    if state_out is not None:
        args += ["--state-out", state_out]
    return args


def load_state(path: Path) -> list[dict[str, Any]]:
    document = cyaml.safe_load(path.read_text())
    items: list[dict[str, Any]] = document["items"]
    return items


def of_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def write_event(tmp_path: Path, name: str, event: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(event))
    return path


def without_origin(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records without the fields naming where each came from (file, record index)."""
    return [{k: v for k, v in r.items() if k not in ORIGIN_KEYS} for r in records]


def without_generated_names(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    masked = copy.deepcopy(records)
    for record in masked:
        for action in record["actions"]:
            if action["type"] == "create-nodeclaim" and action.get("name"):
                action["name"] = re.sub(r"-[a-z0-9]{5}$", "-<generated>", action["name"])
    return masked


# -- the output contract -------------------------------------------------------------------


def test_every_sample_gives_json_lines_with_the_contract_keys_and_where_it_came_from(
    lifeboat: Callable[..., CliRun],
) -> None:
    run = lifeboat(*replay_args(*EVENTBRIDGE_SAMPLES))
    assert run.code == 0, run.err
    records = run.records
    # One record per (event, instance): the scheduled change names two instances.
    # The retirement names two instances, the Capacity Block's warning three.
    assert len(records) == len(EVENTBRIDGE_SAMPLES) + 3
    for record in records:
        # The contract's keys, extended by the file (and SQS record) the message came from.
        assert set(record) == CONTRACT_KEYS | ORIGIN_KEYS
        assert Path(record["file"]).name in {p.name for p in EVENTBRIDGE_SAMPLES}
        assert record["record"] is None  # not an SQS batch
        assert record["kind"] in KINDS
        assert record["outcome"] in OUTCOMES
        assert isinstance(record["reason"], str)
        assert record["reason"]
        assert record["deferred_until"] is None or ISO_UTC.match(record["deferred_until"])
        # A deferral always says when it looks again; nothing else has a next look.
        deferred = record["outcome"] == "deferred"
        assert (record["recheck_at"] is not None) is deferred
        assert record["recheck_at"] is None or ISO_UTC.match(record["recheck_at"])
        assert {a["type"] for a in record["actions"]} <= ACTION_TYPES
    assert {r["kind"] for r in records} == KINDS - {"unsupported"}
    assert len({r["event_id"] for r in records}) == len(EVENTBRIDGE_SAMPLES)


def test_a_deferral_says_the_latest_instant_it_acts_and_when_it_looks_again(
    lifeboat: Callable[..., CliRun],
) -> None:
    """Issue 38.2: the demo's second retirement said "deferred until 2026-12-08T09:05Z"
    while it is acted on that afternoon: the 5-minute look-again showed only in explain.
    ``deferred_until`` is the latest instant Lifeboat acts (the retirement's start less the
    lead), ``recheck_at`` the next look (decide's RECHECK_INTERVAL after --at); the
    rebalance frozen until 17:00 acts then at the latest, and looks again then too."""
    retirement, rebalance = (
        EVENTS / "scheduled-change.json",
        EVENTS / "rebalance-recommendation.json",
    )
    run = lifeboat(*replay_args(retirement, rebalance))
    by_instance = {r["instance_id"]: r for r in run.records}
    waiting = by_instance["i-0a1b2c3d4e5f60005"]
    assert waiting["outcome"] == "deferred"
    assert waiting["deferred_until"] == "2026-12-08T09:05:00Z"
    assert waiting["recheck_at"] == "2026-12-01T14:10:00Z"
    frozen = by_instance["i-0a1b2c3d4e5f60002"]
    assert frozen["deferred_until"] == frozen["recheck_at"] == "2026-12-01T17:00:00Z"
    text = lifeboat("replay", retirement, "--cluster", CLUSTER, "--at", AT)
    assert "until 2026-12-08T09:05:00Z, looks again 2026-12-01T14:10:00Z" in text.out


def test_text_output_is_one_readable_line_per_decision(lifeboat: Callable[..., CliRun]) -> None:
    run = lifeboat("replay", EVENTS / "spot-interruption.json", "--cluster", CLUSTER, "--at", AT)
    assert run.code == 0
    lines = run.out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("acted")
    assert "spot-interruption" in lines[0]
    assert SPOT_NODE in lines[0]
    assert "delete-nodeclaim general-7xkqz" in lines[0]


# -- the Spot interruption, end to end -----------------------------------------------------


def test_spot_interruption_replaces_the_nodeclaim(
    lifeboat: Callable[..., CliRun], tmp_path: Path
) -> None:
    state_out = tmp_path / "after.yaml"
    run = lifeboat(*replay_args(EVENTS / "spot-interruption.json", state_out=state_out))
    assert run.code == 0
    [record] = run.records
    assert record["outcome"] == "acted"
    assert record["kind"] == "spot-interruption"
    assert record["instance_id"] == "i-0a1b2c3d4e5f60001"
    assert (record["node"], record["nodepool"]) == (SPOT_NODE, "general")
    assert record["deferred_until"] is None
    types = [a["type"] for a in record["actions"]]
    assert types == ["taint", "cordon", "label", "create-nodeclaim", "delete-nodeclaim"]
    assert record["actions"][0] == {
        "type": "taint",
        "key": "lifeboat.dev/spot-interruption",
        "effect": "NoSchedule",
    }
    created = record["actions"][3]["name"]
    assert record["actions"][4] == {"type": "delete-nodeclaim", "name": "general-7xkqz"}

    after = load_state(state_out)
    node = of_kind(after, "Node")[SPOT_NODE]
    assert node["spec"]["unschedulable"] is True
    assert {"key": "lifeboat.dev/spot-interruption", "effect": "NoSchedule"} in node["spec"][
        "taints"
    ]

    claims = of_kind(after, "NodeClaim")
    # Deleted: Karpenter's termination finalizer keeps it until the instance is gone.
    assert claims["general-7xkqz"]["metadata"]["deletionTimestamp"]
    assert claims["general-7xkqz"]["metadata"]["finalizers"] == ["karpenter.sh/termination"]
    assert created in claims
    claim = claims[created]
    assert created.startswith("general-")
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "general"
    assert claim["metadata"]["labels"]["lifeboat.dev/replaces"] == "general-7xkqz"
    assert (
        claim["metadata"]["ownerReferences"][0]["uid"]
        == (of_kind(after, "NodePool")["general"]["metadata"]["uid"])
    )
    assert claim["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "default",
    }
    assert {
        "key": "node.kubernetes.io/instance-type",
        "operator": "NotIn",
        "values": ["m5.large"],
    } in claim["spec"]["requirements"]
    # Everything else in the cluster is as it was.
    before = cyaml.safe_load(CLUSTER.read_text())["items"]
    assert set(of_kind(before, "NodeClaim")) <= set(claims)
    assert set(claims) - set(of_kind(before, "NodeClaim")) == {created}
    deleting = {n for n, c in claims.items() if c["metadata"].get("deletionTimestamp")}
    assert deleting == {"general-7xkqz"}


def test_sqs_batches_give_the_same_decisions_as_eventbridge_events(
    lifeboat: Callable[..., CliRun],
) -> None:
    assert [p.name for p in SQS_SAMPLES] == [p.name for p in EVENTBRIDGE_SAMPLES]
    direct = lifeboat(*replay_args(*EVENTBRIDGE_SAMPLES))
    batched = lifeboat(*replay_args(*SQS_SAMPLES))
    assert direct.code == batched.code == 0
    assert [
        r["record"] for r in batched.records if r["file"].endswith("/spot-interruption.json")
    ] == [0]
    assert without_origin(batched.records) == without_origin(direct.records)
    assert {r["outcome"] for r in batched.records} >= {"acted", "deferred"}


def test_raw_lifecycle_hook_message_drains_and_completes(lifeboat: Callable[..., CliRun]) -> None:
    """The action is completed once the evicted pods have terminated (their 30 s grace
    period, ``CheckGracefulDelete``), by the drain's follow-up, not in the evicting step."""
    run = lifeboat(*replay_args(EVENTS / "raw" / "asg-lifecycle-hook.json"), "--follow")
    assert run.code == 0
    first, *later = run.records
    assert first["kind"] == "asg-termination"
    assert first["outcome"] == "acted"
    assert first["node"] == MNG_NODE
    assert [a["type"] for a in first["actions"]].count("evict") == 2
    assert "complete-lifecycle-action" not in [a["type"] for a in first["actions"]]
    assert "2 evicted pod(s) still terminating" in first["reason"]
    assert later[-1]["actions"] == [{"type": "complete-lifecycle-action", "result": "CONTINUE"}]


def test_lifecycle_test_notification_is_ignored(lifeboat: Callable[..., CliRun]) -> None:
    run = lifeboat(*replay_args(EVENTS / "raw" / "asg-test-notification.json"))
    assert run.code == 0
    [record] = run.records
    assert record["outcome"] == "ignored"
    assert "test notification" in record["reason"].lower()
    assert record["actions"] == []


# -- idempotency, bad input, usage errors --------------------------------------------------


def test_duplicate_delivery_acts_once(lifeboat: Callable[..., CliRun], tmp_path: Path) -> None:
    state_out = tmp_path / "after.yaml"
    spot = EVENTS / "spot-interruption.json"
    run = lifeboat(
        *replay_args(spot, EVENTS / "sqs" / "spot-interruption.json", spot, state_out=state_out)
    )
    assert run.code == 0
    first, *again = run.records
    assert first["outcome"] == "acted"
    assert [r["outcome"] for r in again] == ["ignored", "ignored"]
    assert all("duplicate" in r["reason"] for r in again)
    assert all(r["actions"] == [] for r in again)

    claims = of_kind(load_state(state_out), "NodeClaim")
    replacements = [
        c for c in claims.values() if c["metadata"]["labels"].get("lifeboat.dev/replaces")
    ]
    assert len(replacements) == 1
    before = of_kind(cyaml.safe_load(CLUSTER.read_text())["items"], "NodeClaim")
    # One created; the one deleted waits on Karpenter's termination finalizer.
    assert len(claims) == len(before) + 1
    assert claims["general-7xkqz"]["metadata"]["deletionTimestamp"]
    events = list(of_kind(load_state(state_out), "Event").values())
    assert len([e for e in events if e["involvedObject"]["name"] == SPOT_NODE]) == 1


def test_malformed_file_is_rejected_naming_the_field_and_the_rest_is_processed(
    lifeboat: Callable[..., CliRun], tmp_path: Path
) -> None:
    broken = sample("spot-interruption.json")
    del broken["detail"]["instance-id"]
    bad = write_event(tmp_path, "bad.json", broken)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    run = lifeboat(*replay_args(bad, garbage, EVENTS / "state-change.json"))
    assert run.code == 2
    rejected, unparsable, good = run.records
    assert rejected["outcome"] == "rejected"
    assert "instance-id" in rejected["reason"]
    assert unparsable["outcome"] == "rejected"
    assert "JSON" in unparsable["reason"]
    assert good["outcome"] == "acted"
    assert good["kind"] == "state-change"


def test_missing_event_file_is_a_usage_error(lifeboat: Callable[..., CliRun]) -> None:
    run = lifeboat(*replay_args(EVENTS / "spot-interruption.json", EVENTS / "no-such.json"))
    assert run.code == 1
    assert "no-such.json" in run.err
    assert run.out == ""


def test_bad_at_is_a_usage_error(lifeboat: Callable[..., CliRun]) -> None:
    run = lifeboat(
        "replay", EVENTS / "spot-interruption.json", "--cluster", CLUSTER, "--at", "yesterday"
    )
    assert run.code == 1
    assert "--at" in run.err


def test_missing_cluster_is_a_usage_error(lifeboat: Callable[..., CliRun]) -> None:
    run = lifeboat("replay", EVENTS / "spot-interruption.json", "--at", AT)
    assert run.code == 1
    assert "--cluster" in run.err


def test_unreadable_cluster_file_is_a_usage_error(
    lifeboat: Callable[..., CliRun], tmp_path: Path
) -> None:
    run = lifeboat("replay", EVENTS / "spot-interruption.json", "--cluster", tmp_path / "no.yaml")
    assert run.code == 1
    assert "--cluster" in run.err


def test_instance_not_in_the_cluster_is_ignored(
    lifeboat: Callable[..., CliRun], tmp_path: Path
) -> None:
    stranger = sample("spot-interruption.json")
    stranger["detail"]["instance-id"] = "i-0fffffffffffffff0"
    run = lifeboat(*replay_args(write_event(tmp_path, "stranger.json", stranger)))
    assert run.code == 0
    [record] = run.records
    assert record["outcome"] == "ignored"
    assert "i-0fffffffffffffff0" in record["reason"]
    assert record["node"] is None
    assert record["actions"] == []


# -- managed node group: Lifeboat drains ---------------------------------------------------


def test_managed_node_group_termination_drains_through_evictions(
    lifeboat: Callable[..., CliRun], tmp_path: Path
) -> None:
    state_out = tmp_path / "after.yaml"
    run = lifeboat(*replay_args(EVENTS / "asg-termination.json", state_out=state_out))
    assert run.code == 0
    [record] = run.records
    assert record["outcome"] == "acted"
    assert record["nodepool"] is None
    assert [a["type"] for a in record["actions"]] == [
        "taint",
        "cordon",
        "label",
        "evict",
        "evict",
    ]
    assert "evicted pod(s) still terminating" in record["reason"]
    evicted = {a["pod"] for a in record["actions"] if a["type"] == "evict"}
    assert evicted == {
        "kube-system/coredns-5d78c9869d-4xkq2",
        "kube-system/metrics-server-6f9b8c7d5-2hxvw",
    }
    after = load_state(state_out)
    on_node = [p for p in of_kind(after, "Pod").values() if p["spec"]["nodeName"] == MNG_NODE]
    # An evicted pod is deleted gracefully: the API server keeps it, Terminating (with a
    # deletionTimestamp), for its grace period (registry/core/pod: an eviction is a delete
    # with the pod's terminationGracePeriodSeconds); the DaemonSet pod stays as it was.
    staying = {p["metadata"]["name"] for p in on_node if not p["metadata"].get("deletionTimestamp")}
    going = {p["metadata"]["name"] for p in on_node if p["metadata"].get("deletionTimestamp")}
    assert staying == {"aws-node-m2v8t"}
    assert going == {"coredns-5d78c9869d-4xkq2", "metrics-server-6f9b8c7d5-2hxvw"}
    node = of_kind(after, "Node")[MNG_NODE]
    assert node["spec"]["unschedulable"] is True


def test_drain_respects_a_pod_disruption_budget(
    lifeboat: Callable[..., CliRun], tmp_path: Path
) -> None:
    # The other coredns replica is not ready: evicting this one would leave none, and the
    # coredns PDB (maxUnavailable 1) forbids it.
    cluster = cyaml.safe_load(CLUSTER.read_text())
    other = of_kind(cluster["items"], "Pod")["coredns-5d78c9869d-9mzl7"]
    other["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    cluster_file = tmp_path / "cluster.yaml"
    cluster_file.write_text(cyaml.safe_dump(cluster))
    state_out = tmp_path / "after.yaml"
    run = lifeboat(
        "replay", EVENTS / "asg-termination.json", "--cluster", cluster_file, "--at", AT,
        "--json", "--state-out", state_out,
    )  # fmt: skip
    assert run.code == 0
    [record] = run.records
    assert record["outcome"] == "acted"
    evicted = [a["pod"] for a in record["actions"] if a["type"] == "evict"]
    assert evicted == ["kube-system/metrics-server-6f9b8c7d5-2hxvw"]
    assert "PodDisruptionBudget" in record["reason"]
    # The instance must not go while a pod is held: no lifecycle completion yet.
    assert "complete-lifecycle-action" not in [a["type"] for a in record["actions"]]
    pods = of_kind(load_state(state_out), "Pod")
    assert pods["coredns-5d78c9869d-4xkq2"]["spec"]["nodeName"] == MNG_NODE


# -- Kubernetes Events, determinism, the installed command ---------------------------------


def test_an_event_is_recorded_on_each_affected_node(
    lifeboat: Callable[..., CliRun], tmp_path: Path
) -> None:
    state_out = tmp_path / "after.yaml"
    run = lifeboat(*replay_args(*EVENTBRIDGE_SAMPLES, state_out=state_out))
    assert run.code == 0
    events = list(of_kind(load_state(state_out), "Event").values())
    expected_reasons = {
        ("spot-interruption", "acted"): "SpotInterruption",
        ("state-change", "acted"): "InstanceStateChange",
        ("asg-termination", "acted"): "AutoScalingTermination",
        ("capacity-reservation-interruption", "acted"): "CapacityReservationInterruption",
        ("capacity-block-expiry", "acted"): "CapacityBlockExpiry",
        ("scheduled-change", "acted"): "ScheduledMaintenance",
        ("scheduled-change", "deferred"): "ScheduledMaintenanceDeferred",
        ("rebalance-recommendation", "deferred"): "RebalanceRecommendationDeferred",
    }
    affected = [r for r in run.records if r["node"]]
    assert len(affected) == len(run.records)
    for record in affected:
        on_node = [e for e in events if e["involvedObject"]["name"] == record["node"]]
        assert len(on_node) == 1, record["node"]
        event = on_node[0]
        assert event["involvedObject"]["kind"] == "Node"
        assert event["reason"] == expected_reasons[(record["kind"], record["outcome"])]
        assert record["reason"] in event["message"]
        assert event["source"]["component"] == "lifeboat"
        # Involuntary notices warn; voluntary ones, acted on within budgets or deferred, don't.
        involuntary = record["kind"] not in ("rebalance-recommendation", "scheduled-change")
        assert event["type"] == ("Warning" if involuntary else "Normal")
    # And one on each training pod of the ending Capacity Block's nodes (issue 37).
    pod_events = [e for e in events if e["involvedObject"]["kind"] == "Pod"]
    assert sorted(e["involvedObject"]["name"] for e in pod_events) == [
        "llm-train-0",
        "llm-train-1",
        "llm-train-2",
    ]
    assert {e["reason"] for e in pod_events} == {"CapacityBlockExpiring"}
    assert len(events) == len(affected) + len(pod_events)


def test_replay_is_deterministic_apart_from_generated_names(
    lifeboat: Callable[..., CliRun],
) -> None:
    first = lifeboat(*replay_args(*EVENTBRIDGE_SAMPLES))
    second = lifeboat(*replay_args(*EVENTBRIDGE_SAMPLES))
    assert first.code == second.code == 0
    assert without_generated_names(first.records) == without_generated_names(second.records)


@pytest.fixture
def installed_lifeboat() -> Path:
    command = Path(sys.executable).parent / "lifeboat"
    if not command.exists():
        pytest.skip(f"{command} is not installed (pip install -e .)")
    return command


def test_installed_command(installed_lifeboat: Path, tmp_path: Path) -> None:
    broken = sample("spot-interruption.json")
    broken["detail"] = "not an object"
    bad = write_event(tmp_path, "bad.json", broken)
    done = subprocess.run(
        [installed_lifeboat, *replay_args(EVENTS / "spot-interruption.json", bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 2, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["outcome"] for r in records] == ["acted", "rejected"]
    assert "detail" in records[1]["reason"]


@pytest.mark.parametrize(
    "content",
    ["[]", "42", "null", '"text"', '{"Records": [5]}', '{"Records": [{"messageId": "m"}]}'],
)
def test_a_file_that_is_json_but_not_an_event_is_rejected_not_a_crash(
    tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    status = main(["replay", str(bad), "--cluster", str(CLUSTER), "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert status == 2
    assert [line["outcome"] for line in lines] == ["rejected"]
    assert lines[0]["reason"].startswith("body")


@pytest.mark.parametrize("where", ["missing-dir/out.yaml", "a-file/out.yaml", "."])
def test_an_unwritable_state_out_is_a_usage_error_before_any_work(
    tmp_path: Path, lifeboat: Callable[..., CliRun], where: str
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    target = tmp_path / where
    # The cluster file does not exist either: the output is checked first, before any work.
    run = lifeboat(
        "replay", EVENTS / "spot-interruption.json", "--cluster", tmp_path / "no-cluster.yaml",
        "--state-out", target,
    )  # fmt: skip
    assert run.code == 1
    assert run.out == ""
    [error] = [line for line in run.err.splitlines() if "error:" in line]
    assert f"--state-out {target}" in error
    assert "no-cluster.yaml" not in run.err


def test_a_state_out_that_fails_to_write_is_one_line_after_the_decisions(
    lifeboat: Callable[..., CliRun],
) -> None:
    """/dev/full passes every check (it exists and is writable) and fails on write: ENOSPC,
    as a full disk would. The decisions are printed; the failure is one line; exit 1."""
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full here")
    run = lifeboat(*replay_args(EVENTS / "spot-interruption.json", state_out=full))
    assert run.code == 1
    assert [r["outcome"] for r in run.records] == ["acted"]
    assert run.err.splitlines() == [
        "lifeboat: error: --state-out /dev/full: No space left on device"
    ]

"""``lifeboat rotate`` (its checks and ``--out``), ``lifeboat status`` (from a replay's state
file and from a live cluster through a kubeconfig) and ``lifeboat replay --follow`` of the
sample rotation."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat_local.exits import EXIT_NOT_DONE
from tests.conftest import CliRun
from tests.support import cyaml
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.rotation_rig import EVENTS, LEGACY, ROTATION

CLUSTER = EVENTS / "cluster.yaml"
AT = "2026-12-01T14:05:00Z"
REQUEST = ROTATION / "legacy-to-karpenter.json"


# -- replay and status -------------------------------------------------------------------------


def test_replay_follows_the_sample_rotation_to_its_end(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    state = tmp_path / "after.yaml"
    run = cli(
        "replay",
        REQUEST,
        "--cluster",
        CLUSTER,
        "--at",
        AT,
        "--follow",
        "--json",
        "--state-out",
        state,
    )
    assert run.code == 0, run.err
    records = [json.loads(line) for line in run.out.splitlines()]
    assert {r["kind"] for r in records} == {"rotation"}
    started = [r["node"] for r in records if any(a["type"] == "cordon" for a in r["actions"])]
    assert started == LEGACY
    assert (
        records[-1]["reason"] == "rotation legacy-to-karpenter: completed: 3 of 3 node(s) rotated"
    )
    # Completed in the look that found the last node's pods Ready elsewhere, minutes after
    # the request (each node about a minute: drain, then the gate).
    [last_gate] = [
        r
        for r in records
        if r["reason"].endswith(f"{LEGACY[-1]} drained")
        or (LEGACY[-1] in r["reason"] and "health gate passed" in r["reason"])
    ]
    assert records[-1]["at"] == last_gate["at"]
    assert "2026-12-01T14:07:00Z" < records[-1]["at"] <= "2026-12-01T14:10:00Z"

    status = cli("status", "--cluster", state)
    assert status.code == 0
    lines = status.out.splitlines()
    assert lines[0] == "rotation legacy-to-karpenter: completed (3 of 3 node(s) rotated)"
    assert (
        "nodes: eks.amazonaws.com/nodegroup=legacy; at most 1 in flight; health gate 600s"
        in lines[2]
    )
    rows = [line.split() for line in lines if line.strip().startswith("ip-10-0-4-")]
    assert [(row[0], row[2]) for row in rows] == [(name, "done") for name in LEGACY]

    as_json = cli("status", "legacy-to-karpenter", "--cluster", state, "--json")
    [rotation] = json.loads(as_json.out)["rotations"]
    assert rotation["phase"] == "completed"
    assert [n["phase"] for n in rotation["nodes"]] == ["done"] * 3
    # A done node is stored compacted (issue 23.4): what moved is in its note, its
    # workloads are not kept once nothing waits for them.
    assert rotation["nodes"][0]["workloads"] == []
    assert "run Ready elsewhere" in rotation["nodes"][0]["note"]


def test_status_of_a_live_cluster_through_a_kubeconfig(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    state = tmp_path / "running.yaml"
    assert cli("replay", REQUEST, "--cluster", CLUSTER, "--at", AT, "--state-out", state).code == 0
    with Emulator(load_cluster_file(state)) as emu:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emu.url)
        run = cli("status", "--kubeconfig", kubeconfig)
        assert run.code == EXIT_NOT_DONE, run.err  # a node not done yet: not time to scale down
        assert run.out.startswith("rotation legacy-to-karpenter: running\n")
        assert "next look: 2026-12-01T14:05:30Z" in run.out
        assert "1 in flight (ip-10-0-4-21.ec2.internal: draining), 2 pending" in run.out
        assert [e for e in emu.request_log if e[0] != "list"] == []  # it only listed


def test_status_names_what_it_cannot_find_or_read(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    empty = cli("status", "--cluster", CLUSTER)
    assert (empty.code, empty.out) == (
        0,
        f"no rotation in namespace lifeboat of cluster file {CLUSTER}\n",
    )
    missing = cli("status", "nope", "--cluster", CLUSTER)
    assert missing.code == 1 and "no rotation nope in namespace lifeboat" in missing.err
    assert "it holds none" in missing.err
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        cyaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "lifeboat-rotation-x",
                    "namespace": "lifeboat",
                    "labels": {"lifeboat.dev/rotation": "x"},
                },
                "data": {"state.json": "{}"},
            }
        )
    )
    # Issue 38.7: a name the file does not hold lists those it does (it said "no rotation").
    typo = cli("status", "y", "--cluster", broken)
    assert typo.code == 1
    assert typo.err.rstrip().endswith(
        f"no rotation y in namespace lifeboat of cluster file {broken}; the rotations there: x"
    )
    assert typo.out == ""
    run = cli("status", "--cluster", broken)
    assert run.code == EXIT_NOT_DONE  # what it cannot read it cannot call done
    assert (
        run.out
        == "unreadable: ConfigMap lifeboat/lifeboat-rotation-x: state.json: spec: Field required\n"
    )


# -- rotate ------------------------------------------------------------------------------------


def test_rotate_out_writes_an_event_replay_acts_on(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    event = tmp_path / "rotation.json"
    run = cli(
        "rotate",
        "legacy-2",
        "--node-group",
        "legacy",
        "--label",
        "topology.kubernetes.io/zone=us-east-1b",
        "--max-in-flight",
        "2",
        "--out",
        event,
    )
    assert run.code == 0, run.err
    written: dict[str, Any] = json.loads(event.read_text())
    uid = written["detail"]["uid"]  # generated: what the rotation's commands name
    assert run.out == (
        f"wrote Lifeboat Rotation Requested for rotation legacy-2 (uid {uid}) to {event}\n"
    )
    assert written["detail"] == {
        "rotation": "legacy-2",
        "uid": uid,
        "selector": {
            "labels": {
                "eks.amazonaws.com/nodegroup": "legacy",
                "topology.kubernetes.io/zone": "us-east-1b",
            }
        },
        "maxInFlight": 2,
        "healthGate": {"timeoutSeconds": 600},
    }
    replayed = cli("replay", event, "--cluster", CLUSTER, "--at", AT, "--json")
    records = [json.loads(line) for line in replayed.out.splitlines()]
    assert [(r["outcome"], r["node"]) for r in records] == [
        ("acted", None),
        ("acted", "ip-10-0-4-22.ec2.internal"),  # the one legacy node in us-east-1b
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "a new rotation needs --node-group, --label or --ami"),
        (
            ["--node-group", "legacy", "--cancel"],
            "--cancel names a rotation; it takes no node selector",
        ),
        (["--pause"], "--pause needs --uid (the rotation's uid: `lifeboat status legacy`"),
        (["--pause", "--uid", "not a uid"], "--uid: string should match pattern"),
        (["--label", "team"], "--label 'team': expected KEY=VALUE"),
        (
            ["--node-group", "legacy", "--max-in-flight", "0"],
            "--max-in-flight: input should be greater than or equal to 1",
        ),
        (
            ["--node-group", "legacy", "--health-timeout", "5"],
            "--health-timeout: input should be greater than or equal to 30",
        ),
        (["--ami", "ami-nothex"], "--ami.0: string should match pattern"),
        (["--label", "bad key=x"], "--label/--node-group: key 'bad key': name part must consist"),
    ],
)
def test_rotate_refuses_what_the_lambda_would_reject_naming_the_flag(
    cli: Callable[..., CliRun], tmp_path: Path, args: list[str], message: str
) -> None:
    run = cli("rotate", "legacy", *args, "--out", tmp_path / "x.json")
    assert run.code == 1
    assert message in run.err
    assert not (tmp_path / "x.json").exists()


def test_rotate_refuses_a_bad_name(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    run = cli("rotate", "Legacy_Nodes", "--node-group", "legacy", "--out", tmp_path / "x.json")
    assert run.code == 1 and "ROTATION: string should match pattern" in run.err


def test_rotate_and_status_are_in_the_commands_help() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "lifeboat_local.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0
    assert "rotate" in run.stdout and "status" in run.stdout

"""``lifeboat replay --kubeconfig``: a live cluster (here the emulator behind a kubeconfig),
a dry run unless ``--apply``, instances found by listing the cluster's nodes once."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat_local.cli import build_parser, main
from lifeboat_local.replay import run as replay
from tests.support import cyaml
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

CLUSTER = SAMPLE_CLUSTER
SPOT = EVENTS / "spot-interruption.json"
WRITE_VERBS = ("create", "update", "patch", "delete")
AT = "2026-12-01T14:05:00Z"
NODE = "ip-10-0-1-11.ec2.internal"


@pytest.fixture
def live() -> Iterator[Emulator]:
    with Emulator(load_cluster_file(CLUSTER)) as emulator:
        yield emulator


@pytest.fixture
def kubeconfig(tmp_path: Path, live: Emulator) -> Path:
    """A kubeconfig for the emulator's URL, without credentials (the emulator needs none)."""
    return write_kubeconfig(tmp_path / "kubeconfig", live.url)


def run_replay(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    parser = build_parser()
    args = parser.parse_args(["replay", *argv, "--json"])
    out = io.StringIO()
    status = replay(args, out)
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


def writes(emulator: Emulator) -> int:
    return sum(emulator.requests[verb] for verb in WRITE_VERBS)


def test_dry_run_changes_nothing(live: Emulator, kubeconfig: Path) -> None:
    before = live.dump()
    live.reset_counts()
    status, [report] = run_replay(str(SPOT), "--kubeconfig", str(kubeconfig), "--at", AT)
    assert status == 0
    assert (report["outcome"], report["node"], report["nodepool"]) == ("acted", NODE, "general")
    assert report["reason"].startswith("dry run, nothing changed: spot interruption")
    assert [a["type"] for a in report["actions"]] == [
        "taint",
        "cordon",
        "label",
        "create-nodeclaim",
        "delete-nodeclaim",
    ]
    assert writes(live) == 0
    assert live.dump() == before
    # The directory came from one list of the nodes (and one of the NodeClaims).
    assert live.requests_by_resource[("list", "nodes")] >= 1


def test_apply_changes_the_node(live: Emulator, kubeconfig: Path) -> None:
    status, [report] = run_replay(str(SPOT), "--kubeconfig", str(kubeconfig), "--apply")
    assert status == 0
    assert report["outcome"] == "acted"
    assert not report["reason"].startswith("dry run")
    node = live.get_object("Node", NODE)
    assert node is not None
    assert node["spec"].get("unschedulable") is True
    assert {t["key"] for t in node["spec"]["taints"]} >= {"lifeboat.dev/spot-interruption"}
    old = live.get_object("NodeClaim", "general-7xkqz")
    assert old is None or old["metadata"].get("deletionTimestamp")
    created = [a["name"] for a in report["actions"] if a["type"] == "create-nodeclaim"]
    assert created
    assert live.get_object("NodeClaim", created[0]) is not None
    assert writes(live) > 0


def test_voluntary_dry_run_takes_no_lease(live: Emulator, kubeconfig: Path) -> None:
    event = EVENTS / "rebalance-recommendation.json"
    live.reset_counts()
    status, [report] = run_replay(str(event), "--kubeconfig", str(kubeconfig), "--at", AT)
    assert status == 0
    assert report["outcome"] == "deferred"
    assert report["deferred_until"] == "2026-12-01T17:00:00Z"
    assert writes(live) == 0


def test_follow_in_a_dry_run_schedules_nothing(live: Emulator, kubeconfig: Path) -> None:
    event = EVENTS / "rebalance-recommendation.json"
    status, reports = run_replay(
        str(event), "--kubeconfig", str(kubeconfig), "--at", AT, "--follow"
    )
    assert status == 0
    assert len(reports) == 1
    assert writes(live) == 0


def test_cluster_file_replay_still_works(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    status, [report] = run_replay(
        str(SPOT), "--cluster", str(CLUSTER), "--at", AT, "--state-out", str(state)
    )
    assert status == 0
    assert report["outcome"] == "acted"
    assert not report["reason"].startswith("dry run")
    dumped = cyaml.safe_load(state.read_text())
    node = next(i for i in dumped["items"] if i["kind"] == "Node" and i["metadata"]["name"] == NODE)
    assert node["spec"]["unschedulable"] is True


@pytest.mark.parametrize(
    "extra",
    [
        [],  # neither --cluster nor --kubeconfig
        ["--cluster", str(CLUSTER), "--kubeconfig", "KUBECONFIG"],
        ["--kubeconfig", "KUBECONFIG", "--state-out", "out.yaml"],
        ["--kubeconfig", "KUBECONFIG", "--apply", "--at", AT],
        ["--kubeconfig", "KUBECONFIG", "--apply", "--follow"],
        ["--cluster", str(CLUSTER), "--apply"],
    ],
)
def test_usage_errors_exit_1(
    extra: list[str], kubeconfig: Path, live: Emulator, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["replay", str(SPOT), *[str(kubeconfig) if a == "KUBECONFIG" else a for a in extra]]
    live.reset_counts()
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 1
    assert "error:" in capsys.readouterr().err
    assert writes(live) == 0


def test_unreadable_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["replay", str(SPOT), "--kubeconfig", str(tmp_path / "missing")]) == 1

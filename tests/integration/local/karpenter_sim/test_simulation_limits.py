"""Limits of the local simulation are never silent: a NodePool whose stored hash is not its
template's is reported at load (Karpenter's ``areStaticFieldsDrifted`` would drift every
replacement), and a replay that hits its step limit says so on stderr, names the loop and
exits 4 (``EXIT_INCOMPLETE``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kubemu import dump_cluster_file, load_cluster_file
from lifeboat.karpenter.nodepool_hash import HASH_ANNOTATION, nodepool_hash
from lifeboat_local import replay
from lifeboat_local.common import EXIT_INCOMPLETE
from lifeboat_local.load_checks import hash_mismatches
from tests.conftest import CliRun
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

WRONG_HASH = "42"


def _stale_hash_cluster(path: Path) -> Path:
    objects = load_cluster_file(SAMPLE_CLUSTER)
    for obj in objects:
        if obj["kind"] == "NodePool" and obj["metadata"]["name"] == "general":
            obj["metadata"]["annotations"][HASH_ANNOTATION] = WRONG_HASH
    dump_cluster_file(objects, path)
    return path


def test_the_sample_pools_hashes_are_their_templates() -> None:
    assert hash_mismatches(load_cluster_file(SAMPLE_CLUSTER)) == []


def test_a_stale_pool_hash_is_reported_at_load_by_every_tool(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    cluster = _stale_hash_cluster(tmp_path / "stale.yaml")
    general = next(
        o
        for o in load_cluster_file(cluster)
        if o["kind"] == "NodePool" and o["metadata"]["name"] == "general"
    )
    expected = (
        f"lifeboat: warning: NodePool general: its {HASH_ANNOTATION} annotation {WRONG_HASH} "
        f"differs from its template's hash {nodepool_hash(general)}: Karpenter will see every "
        "node of pool general as drifted"
    )
    at = ("--at", "2026-12-01T14:05:00Z")
    for argv in (
        ("replay", EVENTS / "spot-interruption.json", "--cluster", cluster, *at),
        ("explain", EVENTS / "spot-interruption.json", "--cluster", cluster, *at),
        ("windows", "--cluster", cluster, *at),
        ("status", "--cluster", cluster),
    ):
        run = cli(*argv)
        assert expected in run.err, argv[0]
        assert "batch" not in run.err.split("warning:", 1)[1].split("\n")[0]


def test_hitting_the_step_limit_is_a_warning_naming_the_loop_and_exit_4(
    cli: Callable[..., CliRun], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay, "MAX_FOLLOW_STEPS", 40)
    cluster = _stale_hash_cluster(tmp_path / "stale.yaml")
    run = cli(
        "replay",
        EVENTS / "spot-interruption.json",
        "--cluster",
        cluster,
        "--at",
        "2026-12-01T18:00:00Z",
        "--follow",
        "--json",
    )
    assert run.code == EXIT_INCOMPLETE == 4
    [warning] = [line for line in run.err.splitlines() if "replay stopped" in line]
    assert warning.startswith(
        "lifeboat: warning: replay stopped after 40 steps with work still due"
    )
    assert "the output is incomplete; the loop: the simulated Karpenter's" in warning
    assert "drift" in warning  # the pool's claims drifted again and again

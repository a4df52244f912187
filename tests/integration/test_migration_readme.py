"""The migration walkthrough of docs/migrating.md ("The whole migration: convert, audit, patching,
waves, checkpoints, roll back") shows real output: each console block is what its command
prints today (issue 28). File names the walkthrough writes are made in a temporary folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.integration import test_rotation_readme as rotation_readme
from tests.integration.rotation_rig import ROOT

MARKER = "<!-- migration-walkthrough:"
WRITTEN = ("pools.yaml", "with-pools.yaml", "wave-1.yaml", "rollback.json", "rolled-back.yaml")


def console_blocks() -> list[tuple[str, list[str]]]:
    return rotation_readme.console_blocks(MARKER, "## Phasing across clusters")


def test_the_migration_walkthrough_shows_what_the_commands_print(
    cli: Callable[..., CliRun], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the documentation's paths are the repository's
    blocks = console_blocks()
    assert [command.split()[0] for command, _ in blocks] == [
        "convert",
        "audit",
        "replay",
        "status",
        "rotate",
        "replay",
        "status",
    ]
    # Step 2's shell lines: the pools of the sample's groups, appended to the cluster file.
    pools = tmp_path / "pools.yaml"
    made = cli("convert", "--cluster", "events/cluster.yaml", "--cluster-name", "prod-a",
               "--out", pools)  # fmt: skip
    assert made.code == 0, made.err
    cluster = (ROOT / "events" / "cluster.yaml").read_text()
    (tmp_path / "with-pools.yaml").write_text(cluster + "---\n" + pools.read_text())
    for command, shown in blocks:
        args = [str(tmp_path / a) if a in WRITTEN else a for a in command.split()]
        run = cli(*args)
        # lifeboat status exits 4 while any node is not done (paused at a checkpoint, rolled
        # back): the scale-down gate of issue 22.
        expected = 4 if command.startswith("status") and "wave-1" in command else 0
        expected = 4 if command.startswith("status") and "rolled-back" in command else expected
        assert run.code == expected, (command, run.err)
        printed = run.out.replace(f"{tmp_path}/", "")
        assert [line.strip() for line in printed.splitlines()] == shown, command

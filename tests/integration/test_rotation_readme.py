"""The walkthrough "Migrating a node group to Karpenter" (docs/migrating.md) shows real output: the
replay and status blocks are what the commands print today."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.integration.rotation_rig import ROOT
from tests.support import docs

MARKER = "<!-- rotation-walkthrough:"


def console_blocks(
    marker: str = MARKER, end: str = "3. **On the cluster.**"
) -> list[tuple[str, list[str]]]:
    """(command, output lines) of each console block between ``marker`` and ``end`` in the
    page docs/migrating.md (the rotation walkthrough by default; the migration one uses it
    too)."""
    text = docs.page("migrating.md")
    section = text[text.index(marker) :]
    section = section[: section.index(end)]
    blocks = []
    for block in re.findall(r"```console\n(.*?)\n *```", section, flags=re.S):
        lines = [line.strip() for line in block.splitlines()]
        assert lines[0].startswith("$ lifeboat ")
        blocks.append((lines[0].removeprefix("$ lifeboat "), lines[1:]))
    return blocks


def test_the_walkthrough_shows_what_replay_and_status_print(
    cli: Callable[..., CliRun], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [(replay, replay_out), (status, status_out)] = console_blocks()
    state = tmp_path / "after.yaml"
    args = [str(state) if arg == "after.yaml" else arg for arg in replay.split()]
    monkeypatch.chdir(ROOT)  # the documentation's paths are the repository's
    run = cli(*args)
    assert run.code == 0, run.err
    assert [line.strip() for line in run.out.splitlines()] == replay_out
    args = [str(state) if arg == "after.yaml" else arg for arg in status.split()]
    run = cli(*args)
    assert run.code == 0, run.err
    # The page's table is indented as a block: compare without the leading spaces.
    assert [line.strip() for line in run.out.splitlines()] == status_out

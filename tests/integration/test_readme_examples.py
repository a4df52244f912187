"""The README's ``lifeboat replay`` examples (with and without ``--follow``) are real runs:
each console block is run again and must print exactly what the README shows (stderr first,
as a terminal shows it). Blocks naming files that are not in the repository (``batch.json``)
or serving until interrupted (``--serve``) are left out."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from lifeboat_local.cli import main

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```console\n\$ (lifeboat replay [^\n]*)\n(.*?)```", re.DOTALL)


def _argv(command: str) -> list[str]:
    """The command's arguments as a shell would pass them (``events/*.json`` expanded)."""
    argv = []
    for word in shlex.split(command)[1:]:
        expanded = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(word)) if "*" in word else []
        argv += expanded or [word]
    return argv


def _runnable(command: str) -> bool:
    words = _argv(command)[1:]
    files = [w for w in words if not w.startswith("-") and ("/" in w or w.endswith(".json"))]
    return "--serve" not in words and all((ROOT / f).exists() for f in files)


def _examples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text) if _runnable(m.group(1))]


def test_the_readme_has_replay_examples() -> None:
    commands = [command for command, _ in _examples()]
    assert len([c for c in commands if "--follow" in c]) >= 2
    assert len(commands) >= 4


@pytest.mark.parametrize(("command", "shown"), _examples(), ids=lambda v: v[:60])
def test_a_replay_example_prints_what_the_readme_shows(
    command: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code = main(_argv(command))
    assert code == 0
    captured = capsys.readouterr()
    assert captured.err + captured.out == shown

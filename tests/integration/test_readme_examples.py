"""The README's ``lifeboat replay --follow`` examples are real runs: each console block is
run again and must print exactly what the README shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from lifeboat_local.cli import main

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"```console\n\$ (lifeboat replay [^\n]*--follow)\n(.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer((ROOT / "README.md").read_text())]


def test_the_readme_has_follow_examples() -> None:
    assert len(_examples()) >= 2


@pytest.mark.parametrize(("command", "shown"), _examples(), ids=lambda v: v[:60])
def test_a_follow_example_prints_what_the_readme_shows(
    command: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code = main(shlex.split(command)[1:])
    assert code == 0
    assert capsys.readouterr().out == shown

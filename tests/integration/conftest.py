"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubemu import Emulator
from lifeboat_local.cli import main


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """An empty Kubernetes API emulator, started on 127.0.0.1 and stopped after the test."""
    with Emulator() as emu:
        yield emu


@dataclass
class CliRun:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    """Runs ``lifeboat`` through ``lifeboat_local.cli.main`` and captures what it prints
    (the commands write to the ``sys.stdout`` of call time, which the capture replaced)."""

    def run(*argv: str | Path) -> CliRun:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:  # argparse's usage errors
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run

"""One table of exit statuses for every ``lifeboat`` command (issue 38.8): the same number
means the same thing for each command, it is defined in one module (``lifeboat_local.exits``),
every command's ``--help`` ends with its rows, and the docs' reference page shows the table
exactly as the module defines it. The contract's fixed points are checked here; what each
command returns in practice is tested beside the command (rejected records, invalid budgets,
a rotation not done, a replay cut short)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from lifeboat_local import cli, exits
from tests.support.paths import ROOT

REFERENCE = ROOT / "docs" / "reference" / "exit-status.md"
_TABLE = re.compile(r"<!-- exit-status-table.*?-->\n(.*?)\n<!-- /exit-status-table -->", re.S)


def test_the_contracts_fixed_points() -> None:
    """replay 0/2/1, convert 0/1/2, patching 3 for an AMI behind, status has its not-done."""
    assert (exits.EXIT_OK, exits.EXIT_USAGE, exits.EXIT_REJECTED) == (0, 1, 2)
    assert exits.EXIT_FINDINGS == 3
    assert set(exits.BY_COMMAND["replay"]) >= {exits.OK, exits.REJECTED, exits.USAGE}
    assert set(exits.BY_COMMAND["convert"]) >= {exits.OK, exits.USAGE, exits.REJECTED}
    assert exits.FINDINGS in exits.BY_COMMAND["patching"]
    assert exits.NOT_DONE in exits.BY_COMMAND["status"]
    # A simulation limit is non-zero and not "rejected": the input was fine.
    assert exits.EXIT_INCOMPLETE not in (0, 1, 2)


def test_one_meaning_per_number() -> None:
    codes = [row.code for row in exits.TABLE]
    assert len(codes) == len(set(codes))
    # Before: 4 was "simulation cut short" for replay and "not done" for status.
    assert exits.EXIT_INCOMPLETE != exits.EXIT_NOT_DONE


def test_every_command_has_its_rows() -> None:
    assert set(exits.BY_COMMAND) == set(cli.COMMANDS)


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = cli.build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return actions[0].choices[name]  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_every_commands_help_ends_with_its_exit_statuses(name: str) -> None:
    help_text = _subparser(name).format_help()
    assert help_text.rstrip().endswith(exits.epilog(name))
    said = " ".join(help_text.split())  # the meanings, unwrapped
    for row in exits.BY_COMMAND[name]:
        assert f"{row.code} {row.meaning}" in said, (name, row.code)
    others = set(exits.TABLE) - set(exits.BY_COMMAND[name]) - {exits.INTERRUPTED, exits.BROKEN_PIPE}
    for row in others:
        assert row.meaning not in said, (name, row.code)


def test_the_top_level_help_shows_the_whole_table() -> None:
    said = " ".join(cli.build_parser().format_help().split())
    for row in exits.TABLE:
        assert f"{row.code} {row.meaning}" in said


def test_the_docs_reference_page_shows_the_table() -> None:
    found = _TABLE.search(REFERENCE.read_text(encoding="utf-8"))
    assert found is not None, f"{REFERENCE}: no exit-status table markers"
    assert found.group(1) == exits.markdown_table()


def test_no_command_defines_its_own_exit_numbers() -> None:
    """Every command takes its statuses from the one module: no ``EXIT_X = <number>`` and no
    ``return <number>`` elsewhere in the command-line package."""
    package = ROOT / "local" / "lifeboat_local"
    own = re.compile(r"^\s*EXIT_\w+\s*(?:,\s*EXIT_\w+\s*)*=\s*\d", re.M)
    bare = re.compile(r"^\s*return [1-9]\d*\s*$", re.M)
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "exits.py" or path.name == "stackset.py":  # stackset: not a command
            continue
        text = path.read_text(encoding="utf-8")
        if own.search(text) or (bare.search(text) and _is_command(path)):
            offenders.append(str(path.relative_to(package)))
    assert offenders == []


def _is_command(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return "def run(args" in text

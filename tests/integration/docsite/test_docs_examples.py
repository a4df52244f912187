"""The output the documentation shows is real and current: every file under docs/examples/ is
what its command prints when run again (docsite/examples.py, in its order, from a folder that
sees the repository), and the pages show command output only by including those files.

When a change to Lifeboat changes what a command prints, this fails naming the file; `make
docs-examples` writes them again, and the diff shows what a reader will now see."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from docsite import examples
from tests.support import docs
from tests.support.paths import ROOT

# Console blocks written by hand, each for a reason: `--serve` prints the port it was given by
# the system; `lifeboat fleet` reads a fleet's metrics from AWS.
HAND_WRITTEN = ("lifeboat replay events/spot-interruption.json", "lifeboat fleet --hours 3")
_CONSOLE = re.compile(r"^( *)```console\n(.*?)^\1```$", re.M | re.S)
# What a block may hold besides includes: an elision, and the exit status asked for after.
_BETWEEN = ("...", "$ echo $?", "3")


@pytest.fixture(scope="module")
def rerun() -> dict[str, str]:
    """Every example run again, once for the module (about 15 s of replays on 2 cores)."""
    return examples.generate()


def test_every_example_file_is_what_a_rerun_prints(rerun: dict[str, str]) -> None:
    assert examples.differences(rerun) == []


def test_a_changed_output_is_named(rerun: dict[str, str], tmp_path: Path) -> None:
    """The comparison can fail: a file edited by hand (or a command printing something new)
    is named, and so is a file no example writes any more."""
    for name, text in rerun.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "demo.txt").write_text(rerun["demo.txt"].replace("acted", "deferred", 1))
    (tmp_path / "gone.txt").write_text("$ lifeboat replay old.json\n")
    assert examples.differences(rerun, tmp_path) == [
        "demo.txt: differs from a rerun",
        "gone.txt: no example writes it",
    ]


def _includes() -> list[tuple[Path, str, int | None, int | None]]:
    found = []
    for path in docs.every_page():
        for line in path.read_text(encoding="utf-8").splitlines():
            match = docs.SNIPPET.match(line)
            if match:
                start, end = match.group("start"), match.group("end")
                found.append(
                    (path, match.group("file"), int(start) if start else None,
                     int(end) if end else None)
                )  # fmt: skip
    return found


def test_every_include_names_an_example_and_lines_it_has() -> None:
    for page, file, start, end in _includes():
        path = ROOT / file
        assert path.is_file(), (page, file)
        if start is not None and end is not None:
            count = len(path.read_text(encoding="utf-8").splitlines())
            assert 1 <= start <= end <= count, (page, file, start, end, count)


def test_every_example_is_shown_somewhere(rerun: dict[str, str]) -> None:
    included = {Path(file).name for _, file, _, _ in _includes()}
    assert set(rerun) - included == set()


def test_pages_show_command_output_only_from_examples() -> None:
    """A console block is includes of example files (with an elision or the exit status
    asked for after), or one of the few written by hand for a stated reason."""
    hand_written = []
    for path in docs.every_page():
        for block in _CONSOLE.finditer(path.read_text(encoding="utf-8")):
            lines = [line.strip() for line in block.group(2).splitlines()]
            if lines and lines[0].removeprefix("$ ").startswith(HAND_WRITTEN):
                hand_written.append(lines[0])
                continue
            for line in lines:
                assert docs.SNIPPET.match(line) or line in _BETWEEN, (path, line)
    assert len(hand_written) == len(HAND_WRITTEN)


def test_an_example_that_ends_otherwise_fails() -> None:
    """The exit status listed is checked: a run ending differently writes nothing."""
    wrong = examples.Example("x", "lifeboat audit --cluster tests/fixtures/audit/problems.yaml")
    with examples.scratch() as work, pytest.raises(examples.ExampleFailed, match="exit 3, not 0"):
        examples.run(wrong, work)


def test_the_migration_walkthroughs_show_their_runs_in_order() -> None:
    """docs/migrating.md walks through a rotation, then a whole migration: its blocks are
    those runs' files, in the order the runs depend on one another."""
    shown = [Path(file).stem for page, file, _, _ in _includes() if page.name == "migrating.md"]
    assert shown == [
        "audit-sample",
        "audit-sample",
        "rotate-out",
        "rotation-follow",
        "rotation-status",
        "convert-settings",
        "audit-with-pools",
        "waves-follow",
        "waves-status",
        "rollback-out",
        "rollback-replay",
        "rollback-status",
    ]


def test_the_demo_example_is_what_make_demo_runs() -> None:
    """The getting-started page and the README show `make demo`'s output: the demo example runs
    the very command the Makefile does (its events and status sample, instant, cluster)."""
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "demo"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    [line] = [line for line in dry.stdout.splitlines() if "lifeboat replay" in line]
    made = shlex.split(line)
    [demo] = [e for e in examples.EXAMPLE_LIST if e.name == "demo"]
    assert Path(made[0]).name == "lifeboat"
    assert made[1:] == examples.argv(demo.command, ROOT)

"""Every ``lifeboat`` command the documentation shows runs as written from a fresh clone,
after ``. .venv/bin/activate`` as the README says: every file it uses is shipped. The commands
are the examples the pages include (docsite/examples.py: their output is checked by
test_docs_examples.py) and the command lines of the pages' sh blocks. Left out: those that
need a live cluster (``--kubeconfig``), serve until interrupted, or write into the clone's
neighbours."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from docsite import examples
from tests.support import docs

ROOT = Path(__file__).resolve().parents[3]

# The exit status a documented command ends with, where it is not 0 (the examples say their
# own): a rejected record (2), a cluster with problems (3, lifeboat audit); a rotation not
# every node of which is done (4, lifeboat status: paused at its checkpoint, rolled back).
EXPECTED_EXIT = {
    "events/examples/batch.json": 2,
    "tests/fixtures/audit/problems.yaml": 3,
    "status --cluster wave-1.yaml": 5,
    "status --cluster rolled-back.yaml": 5,
}


def _expected_exit(command: str) -> int:
    listed = [e.exit for e in examples.EXAMPLE_LIST if e.command == command]
    return (
        listed[0]
        if listed
        else next((code for key, code in EXPECTED_EXIT.items() if key in command), 0)
    )


# A command as the documentation shows it: after "$ " in a console block, or a line of a sh block.
_FENCE = re.compile(r"```(console|sh)\n(.*?)```", re.DOTALL)
_TOOLS = ("replay", "explain", "windows", "audit", "status", "convert")
_NOT_HERE = ("--kubeconfig", "--serve", "EVENT_FILE", "CLUSTER.yaml", "--node-group")
# Shell lines of an sh block that put files together for the next command (the migration
# walkthrough joins convert's output to the cluster file): run too, in order.
_PLUMBING = ("{ cat ", "cat ")


def _readme_commands() -> list[str]:
    """The examples in their order, then the sh blocks' in the navigation's order (a replay's
    --state-out before the status that reads it)."""
    commands: list[str] = [example.command for example in examples.EXAMPLE_LIST]
    for block in _FENCE.finditer(docs.text()):
        prompt = "$ " if block.group(1) == "console" else ""
        for line in block.group(2).splitlines():
            text = line.strip()
            if not prompt and text.startswith(_PLUMBING) and text not in commands:
                commands.append(text)
                continue
            if not text.startswith(f"{prompt}lifeboat "):
                continue
            command = text.removeprefix(prompt).split("  #")[0].strip()
            tool = command.split()[1]
            # rotate only writes its request to a file with --out (no AWS): the rollback that
            # the walkthrough replays next.
            offline_rotate = tool == "rotate" and "--out" in command
            wanted = (tool in _TOOLS or offline_rotate) and not any(
                word in command for word in _NOT_HERE
            )
            if wanted and command not in commands:
                commands.append(command)
    return commands


def test_the_readme_shows_commands_of_every_tool() -> None:
    tools = {
        command.split()[1] for command in _readme_commands() if command.startswith("lifeboat ")
    }
    assert {"replay", "explain", "windows", "audit", "status", "convert", "rotate"} <= tools


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository as committed, cloned, with the project's .venv beside it (what
    ``make demo`` would create): what a new user has."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path_factory.mktemp("fresh") / "lifeboat"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    return clone


def _files_named(command: str) -> list[str]:
    """The words of a command that name a file of the repository (what a clone must hold)."""
    return [word for word in shlex.split(command) if "/" in word and (ROOT / word).is_file()]


def test_every_file_an_example_reads_is_in_a_fresh_clone(fresh_clone: Path) -> None:
    """The examples run in-process in a folder that sees the working tree
    (test_docs_examples.py); what a clone has is what is committed, so each file they name
    must be there too."""
    missing = [
        f"{example.command}: {name}"
        for example in examples.EXAMPLE_LIST
        for name in _files_named(example.command)
        if not (fresh_clone / name).is_file()
    ]
    assert missing == []


def test_the_installed_command_runs_after_activate(fresh_clone: Path) -> None:
    """As the README says: ``. .venv/bin/activate``, then ``lifeboat`` is on the PATH."""
    first = examples.EXAMPLE_LIST[0].command
    run = subprocess.run(
        ["bash", "-c", f". .venv/bin/activate && {first}"],
        cwd=fresh_clone,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == _expected_exit(first), run.stderr
    assert "Traceback" not in run.stderr


def test_every_readme_command_runs_as_written_from_a_fresh_clone(fresh_clone: Path) -> None:
    """In the documentation's order, in one clone: later commands read what earlier ones wrote (a
    replay's --state-out, convert's pools), so they cannot be split across test workers. The
    commands the examples already run (test_docs_examples.py) are not run again; each
    ``lifeboat`` command runs in this process, from the clone (no interpreter start per
    command: the installed entry point is the test above), the shell's plumbing in bash."""
    shown = {example.command for example in examples.EXAMPLE_LIST}
    failures: list[str] = []
    for command in _readme_commands():
        if command in shown:
            continue
        if command.startswith("lifeboat "):
            code, err, _out = examples.in_process(examples.argv(command, fresh_clone), fresh_clone)
        else:
            run = subprocess.run(
                ["bash", "-c", command], cwd=fresh_clone, capture_output=True, text=True
            )
            code, err = run.returncode, run.stderr
        expected = _expected_exit(command)
        if code != expected:
            failures.append(f"{command}: exit {code}, not {expected}: {err}")
        if "Traceback" in err:
            failures.append(f"{command}: Traceback: {err}")
    assert failures == []

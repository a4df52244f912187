"""The command output the documentation shows, written by real runs into docs/examples/.

Each example is one ``lifeboat`` command, run as a user runs it from the repository's root
(``events/*.json`` expanded as a shell would), in the order below: later ones read the files
earlier ones wrote (a replay's ``--state-out`` before the ``status`` that reads it), so every
run happens in one scratch folder that sees the repository's files. A file holds the command
after ``$ `` and what it printed, stderr first (as a terminal shows a short run), and a run
that does not end with the exit status listed here writes nothing. The pages include the files
(``--8<-- "docs/examples/NAME.txt"``, pymdownx.snippets), a line range for an excerpt; a test
runs every example again and fails when a file differs
(tests/integration/docsite/test_docs_examples.py).

    python -m docsite.examples            # write docs/examples/*.txt
    python -m docsite.examples --check    # exit 1 naming each file a rerun would change
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lifeboat_local.exits import EXIT_FINDINGS, EXIT_NOT_DONE

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
AT = "--at 2026-12-01T14:05:00Z"
SAMPLE = "--cluster events/cluster.yaml " + AT


@dataclass(frozen=True)
class Example:
    """``name``: the file, docs/examples/NAME.txt; ``command``: as the page shows it, after
    ``$ ``; ``exit``: the status the run must end with; ``shown``: False for a step that only
    makes files for the next ones (a shell line, nothing written)."""

    name: str
    command: str
    exit: int = 0
    shown: bool = True


EXAMPLE_LIST = (
    # Getting started (make demo: every sample event and the DescribeInstanceStatus sample).
    Example(
        "demo",
        "lifeboat replay events/*.json events/status/describe-instance-status.json "
        + SAMPLE
        + " --same-instant",
    ),
    Example(
        "production-rebalance",
        "lifeboat replay events/rebalance-recommendation.json --cluster events/cluster.yaml "
        "--at 2026-12-01T18:05:00Z --config-env production",
    ),
    Example("rejected-batch", "lifeboat replay events/examples/batch.json " + SAMPLE, exit=2),
    # The JSON contract: one object per (event, instance).
    Example(
        "replay-json",
        "lifeboat replay events/spot-interruption.json events/rebalance-recommendation.json "
        + SAMPLE
        + " --same-instant --json",
    ),
    # Running with Karpenter: what the instance status sweep reads.
    Example(
        "instance-status", "lifeboat replay events/status/describe-instance-status.json " + SAMPLE
    ),
    # Capacity Blocks for ML: EC2's warning, the sweep's DescribeCapacityReservations alone,
    # and both (each node once).
    Example("capacity-block", "lifeboat replay events/capacity-block-expiry.json " + SAMPLE),
    Example(
        "capacity-block-sweep",
        "lifeboat replay events/status/describe-capacity-reservations.json "
        "--cluster events/cluster.yaml --at 2026-12-01T14:06:00Z",
    ),
    Example(
        "capacity-block-both",
        "lifeboat replay events/capacity-block-expiry.json "
        "events/status/describe-capacity-reservations.json " + SAMPLE + " --same-instant",
    ),
    # Waking up later.
    Example(
        "follow-scheduled-change",
        f"lifeboat replay events/scheduled-change.json {SAMPLE} --follow",
    ),
    Example(
        "follow-rebalance",
        f"lifeboat replay events/rebalance-recommendation.json {SAMPLE} --follow",
    ),
    # Commands.
    Example("windows", f"lifeboat windows {SAMPLE} --days 2"),
    Example("windows-check", "lifeboat windows --check --cluster events/cluster.yaml"),
    Example("windows-tz", f"lifeboat windows {SAMPLE} --days 2 --tz Europe/Madrid"),
    Example("explain", f"lifeboat explain events/scheduled-change.json {SAMPLE}"),
    Example(
        "audit-problems",
        f"lifeboat audit --cluster tests/fixtures/audit/problems.yaml {AT}",
        exit=3,
    ),
    Example(
        "audit-json",
        f"lifeboat audit --cluster tests/fixtures/audit/problems.yaml {AT} --json",
        exit=3,
    ),
    # Migrating a node group: the rotation walkthrough.
    Example("audit-sample", f"lifeboat audit {SAMPLE}"),
    Example(
        "rotate-out",
        "lifeboat rotate legacy-to-karpenter --cluster-name prod-a --node-group legacy "
        "--uid 2b7c4e1a-5d3f-4a6b-9c8d-0e1f2a3b4c5d --out rotation.json",
    ),
    Example(
        "rotation-follow",
        f"lifeboat replay events/rotation/legacy-to-karpenter.json {SAMPLE} --follow "
        "--state-out after.yaml",
    ),
    Example("rotation-status", "lifeboat status --cluster after.yaml"),
    # The whole migration: convert, audit, waves, checkpoints, roll back.
    Example(
        "convert-settings",
        "lifeboat convert --settings tests/fixtures/migration/node-groups.yaml "
        "--cluster-name prod-a --zone us-east-1a --ami-alias al2023@v20241121",
    ),
    Example(
        "convert-cluster",
        "lifeboat convert --cluster events/cluster.yaml --cluster-name prod-a "
        "--ami-alias al2023@v20250107 --out pools.yaml",
        shown=False,
    ),
    Example(
        "with-pools",
        "{ cat events/cluster.yaml; echo ---; cat pools.yaml; } > with-pools.yaml",
        shown=False,
    ),
    Example("audit-with-pools", f"lifeboat audit --cluster with-pools.yaml {AT}"),
    Example(
        "waves-follow",
        f"lifeboat replay events/rotation/legacy-in-waves.json {SAMPLE} --follow "
        "--state-out wave-1.yaml",
    ),
    Example("waves-status", "lifeboat status --cluster wave-1.yaml", exit=EXIT_NOT_DONE),
    Example(
        "rollback-out",
        "lifeboat rotate legacy-in-waves --cluster-name prod-a --rollback "
        "--uid 6f3d9a2e-4b1c-4e8f-9a7d-2c5b8e1f0a47 --out rollback.json",
    ),
    Example(
        "rollback-replay",
        "lifeboat replay rollback.json --cluster wave-1.yaml --at 2026-12-01T14:40:00Z "
        "--state-out rolled-back.yaml",
    ),
    Example("rollback-status", "lifeboat status --cluster rolled-back.yaml", exit=EXIT_NOT_DONE),
    # Patching without an AWS account: the sample's saved answers.
    Example(
        "patching-sample",
        "lifeboat patching --cluster events/cluster.yaml --from events/patching "
        + AT
        + " --cluster-name prod-a",
        exit=EXIT_FINDINGS,
    ),
    # The JSON contract: a cluster file that lacks kinds (kubectl get nodes,pods).
    Example(
        "partial-nodes-pods",
        "lifeboat replay events/rebalance-recommendation.json "
        "--cluster tests/fixtures/partial/nodes-pods.yaml " + AT,
    ),
)


def limits() -> str:
    """The bounds an operator meets, as a Markdown table read from the code (the pages link to
    it rather than restate a number that could drift from the constant)."""
    from lifeboat.karpenter import budget_windows
    from lifeboat.kube import pool_lock
    from lifeboat.model import deadline

    rows = (
        (
            "A NodePool's Lease (one writer per pool) expires after a holder died",
            f"{pool_lock.LEASE_SECONDS} s",
            "`kube/pool_lock.LEASE_SECONDS`",
        ),
        (
            "A busy Lease is waited for (then the message is retried)",
            f"{int(deadline.RETRY_PATIENCE.total_seconds())} s",
            "`model/deadline.RETRY_PATIENCE`",
        ),
        (
            "Window edges the search for the next permitted instant steps through",
            str(budget_windows.MAX_EDGES),
            "`karpenter/budget_windows.MAX_EDGES`",
        ),
    )
    lines = ["| limit | value | constant |", "| --- | ---: | --- |"]
    lines += [f"| {what} | {value} | {where} |" for what, value, where in rows]
    return "\n".join(lines) + "\n"


class ExampleFailed(Exception):
    """A run ended with another exit status than the one listed."""


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A folder that sees the repository's files (links to its top-level entries), where the
    runs write theirs: the repository itself is left as it was."""
    with tempfile.TemporaryDirectory(prefix="lifeboat-examples-") as folder:
        work = Path(folder)
        for entry in ROOT.iterdir():
            if not entry.name.startswith("."):
                (work / entry.name).symlink_to(entry)
        yield work


def argv(command: str, work: Path) -> list[str]:
    """The command's arguments after ``lifeboat``, globs expanded as a shell would."""
    words = []
    for word in shlex.split(command)[1:]:
        matches = sorted(str(p.relative_to(work)) for p in work.glob(word)) if "*" in word else []
        words += matches or [word]
    return words


def run(example: Example, work: Path) -> str:
    """The example run in ``work``: what a terminal shows after the prompt (stderr first)."""
    if not example.command.startswith("lifeboat "):
        done = subprocess.run(
            ["bash", "-c", example.command], cwd=work, capture_output=True, text=True, check=False
        )
        code, err, out = done.returncode, done.stderr, done.stdout
    else:
        code, err, out = in_process(argv(example.command, work), work)
    if code != example.exit:
        raise ExampleFailed(f"{example.name}: exit {code}, not {example.exit}: {err[-2000:]}")
    if str(work) in err + out:  # a path that changes every run: no rerun would match
        raise ExampleFailed(f"{example.name}: prints its scratch folder {work}")
    return f"$ {example.command}\n{err}{out}"


def in_process(words: list[str], work: Path) -> tuple[int, str, str]:
    """``lifeboat`` run in this process (no interpreter start per example), with none of the
    caller's LIFEBOAT_* settings: the output is the defaults' and the files'."""
    from lifeboat_local.cli import main

    saved = {k: v for k, v in os.environ.items() if k.startswith("LIFEBOAT_")}
    err, out = io.StringIO(), io.StringIO()
    cwd = Path.cwd()
    try:
        for key in saved:
            del os.environ[key]
        os.chdir(work)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(words)
    finally:
        os.chdir(cwd)
        os.environ.update(saved)
    return code, err.getvalue(), out.getvalue()


def generate() -> dict[str, str]:
    """Every example run again: file name -> what it holds."""
    written = {"limits.md": limits()}
    with scratch() as work:
        for example in EXAMPLE_LIST:
            text = run(example, work)
            if example.shown:
                written[f"{example.name}.txt"] = text
    return written


def differences(written: dict[str, str], folder: Path = EXAMPLES) -> list[str]:
    """The files a rerun would change, add or leave behind."""
    found = []
    for name, text in written.items():
        path = folder / name
        if not path.is_file():
            found.append(f"{name}: missing")
        elif path.read_text(encoding="utf-8") != text:
            found.append(f"{name}: differs from a rerun")
    kept = [*folder.glob("*.txt"), *folder.glob("*.md")]
    found += [f"{p.name}: no example writes it" for p in kept if p.name not in written]
    return found


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docsite.examples")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    options = parser.parse_args(args)
    try:
        written = generate()
    except ExampleFailed as error:
        print(f"docsite.examples: error: {error}", file=sys.stderr)
        return 1
    if options.check:
        found = differences(written)
        for line in found:
            print(f"docsite.examples: {line}", file=sys.stderr)
        return 1 if found else 0
    EXAMPLES.mkdir(parents=True, exist_ok=True)
    for stale in [*EXAMPLES.glob("*.txt"), *EXAMPLES.glob("*.md")]:
        if stale.name not in written:
            stale.unlink()
    for name, text in written.items():
        (EXAMPLES / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(written)} example(s) into {EXAMPLES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Errors a person can act on: every rejected record names its file (and its index in an SQS
batch), usage errors are one line with exit status 1, a reader that goes away (``| head``)
ends the command quietly, and no path through the command line ends in a traceback."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat_local.cli import COMMANDS, main
from tests.support import docs
from tests.support.kubeconfigs import write_kubeconfig

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events"
CLUSTER = EVENTS / "cluster.yaml"
SPOT = EVENTS / "spot-interruption.json"
AT = "2026-12-01T14:05:00Z"
COMMAND = Path(sys.executable).parent / "lifeboat"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exited:  # argparse: usage errors, --help, --version
        status = int(exited.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def installed() -> Path:
    if not COMMAND.exists():
        pytest.skip("lifeboat is not installed")
    return COMMAND


def sqs_batch(tmp_path: Path, *events: dict[str, Any]) -> Path:
    path = tmp_path / "batch.json"
    records = [{"messageId": f"m-{i}", "body": json.dumps(e)} for i, e in enumerate(events)]
    path.write_text(json.dumps({"Records": records}))
    return path


def spot_without_instance() -> dict[str, Any]:
    event: dict[str, Any] = json.loads(SPOT.read_text())
    del event["detail"]["instance-id"]
    return event


def test_a_rejected_record_names_its_file_and_index_in_json_and_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.loads((EVENTS / "state-change.json").read_text())
    batch = sqs_batch(tmp_path, good, spot_without_instance(), good)
    status, out, _ = run(capsys, "replay", batch, "--cluster", CLUSTER, "--at", AT, "--json")
    assert status == 2
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["file"], r["record"], r["outcome"]) for r in records] == [
        (str(batch), 0, "acted"),
        (str(batch), 1, "rejected"),
        (str(batch), 2, "ignored"),  # the same event again: a duplicate delivery
    ]
    rejected = records[1]
    # The parser knew what it was: a Spot warning, rejected for its missing field.
    assert rejected["kind"] == "spot-interruption"
    assert rejected["reason"] == "detail.instance-id: field required"
    status, out, _ = run(capsys, "replay", batch, "--cluster", CLUSTER, "--at", AT)
    assert status == 2
    [line] = [line for line in out.splitlines() if line.startswith("rejected")]
    assert f"-- {batch} Records[1]: detail.instance-id: field required" in line
    assert "spot-interruption" in line


def test_a_rejected_file_that_is_no_batch_is_named_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(spot_without_instance()))
    status, out, _ = run(capsys, "replay", bad, "--cluster", CLUSTER, "--json")
    assert status == 2
    [record] = [json.loads(line) for line in out.splitlines()]
    assert (record["file"], record["record"], record["kind"]) == (
        str(bad),
        None,
        "spot-interruption",
    )


@pytest.mark.parametrize("command", ["replay", "explain", "windows"])
@pytest.mark.parametrize("at", ["2026-12-01", "20261201"])
def test_at_without_a_time_of_day_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], command: str, at: str
) -> None:
    argv: list[str | Path] = [command, "--cluster", CLUSTER, "--at", at]
    if command != "windows":
        argv.insert(1, SPOT)
    status, out, err = run(capsys, *argv)
    assert (status, out) == (1, "")
    assert f"argument --at: {at!r} has no time of day; give one, e.g. {at}T00:00:00Z" in err


def test_a_reader_that_goes_away_ends_the_command_quietly(installed: Path) -> None:
    """``lifeboat replay ... | head``: the pipe closes early; no traceback, no error line,
    and the status a shell gives a command ended by SIGPIPE."""
    samples = sorted(EVENTS.glob("*.json"))
    process = subprocess.Popen(
        [installed, "replay", *samples, "--cluster", CLUSTER, "--at", AT, "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line
    status = process.wait(timeout=120)
    assert process.stderr.read() == b""
    assert status == 128 + signal.SIGPIPE


def test_version(capsys: pytest.CaptureFixture[str], installed: Path) -> None:
    status, out, _ = run(capsys, "--version")
    assert status == 0
    assert re.fullmatch(r"lifeboat \d+\.\d+\.\d+\S*\n", out)
    done = subprocess.run([installed, "--version"], capture_output=True, text=True, check=True)
    assert done.stdout == out


def help_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status, out, _ = run(capsys, *argv, "--help")
    assert status == 0
    return out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_with_examples(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    text = help_text(capsys, name)
    examples = text.split("examples:\n", 1)[1].splitlines()
    assert any(line.strip().startswith(f"lifeboat {name} ") for line in examples)
    # The samples the examples name exist in the repository.
    for path in re.findall(r"events/[\w./-]+\.(?:json|yaml)", text):
        assert (ROOT / path).exists(), path


def test_nothing_cites_documents_outside_the_repository(
    capsys: pytest.CaptureFixture[str],
) -> None:
    texts = [help_text(capsys), *(help_text(capsys, name) for name in COMMANDS)]
    for package in ("local", "layers", "functions", "bench"):
        texts += [p.read_text() for p in (ROOT / package).rglob("*.py")]
    texts += [path.read_text() for path in docs.every_page()]
    # Spelled in pieces, so this test does not cite them itself.
    documents = [f"{name}.md" for name in ("contract", "design", "style")]
    for text in texts:
        for outside in (*documents, "/work/", "../" + "shared"):
            assert outside not in text


def test_a_live_cluster_that_refuses_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Emulator(load_cluster_file(CLUSTER)) as live:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", live.url)
        live.fail_next(403, times=10, verb="list", resource="nodepools")
        status, out, err = run(capsys, "windows", "--kubeconfig", kubeconfig)
    assert (status, out) == (1, "")
    [line] = err.splitlines()
    assert line.startswith("lifeboat: error: Kubernetes API: ")
    assert "403" in line

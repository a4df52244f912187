"""``make follow`` / ``lifeboat replay --follow``: a timeline a person can read.

Aligned columns; every row starts with its instant and names its node and pool, the rows of
follow-up work included; what the simulated Karpenter did (a claim launched, a node removed)
is shown between Lifeboat's decisions; lines fit 160 columns unless ``--wide``; ``--json``
stays one object per (event, instance).
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lifeboat.model.report import Outcome, Report
from lifeboat_local.cli import main
from lifeboat_local.karpenter_sim import SimStep
from lifeboat_local.karpenter_sim.state import TERMINATE_TIME
from lifeboat_local.timeline import Timeline
from tests.support import cyaml

ROOT = Path(__file__).resolve().parents[4]
EVENTS = ROOT / "events"
CLUSTER = EVENTS / "cluster.yaml"
AT = "2026-12-01T14:05:00Z"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  ")


def follow_command() -> str:
    """The command line of the Makefile's ``follow`` target, as make would run it."""
    done = subprocess.run(
        ["make", "-s", "-n", "follow"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    [command] = [line for line in done.stdout.splitlines() if "lifeboat replay" in line]
    return command


@pytest.fixture(scope="module")
def make_follow() -> list[str]:
    command = follow_command()
    if not (ROOT / ".venv" / "bin" / "lifeboat").exists():
        pytest.skip("the project is not installed in .venv")
    done = subprocess.run(
        command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.splitlines()


def rows(lines: list[str]) -> list[list[str]]:
    """The cells of each row (a line starting with an instant), split on column gaps."""
    return [re.split(r"\s{2,}", line.strip()) for line in lines if STAMP.match(line)]


def test_make_follow_has_aligned_columns_within_160(make_follow: list[str]) -> None:
    header, *rest = make_follow
    assert header.split() == ["TIME", "(UTC)", "WHAT", "KIND", "INSTANCE", "NODE", "POOL"]
    assert max(len(line) for line in make_follow) <= 160
    # Every line is a row (starting with its instant) or indented beneath one.
    assert all(STAMP.match(line) or line.startswith("    ") for line in rest)
    # Aligned: each column starts where its header does.
    for name in ("WHAT", "KIND", "INSTANCE", "NODE", "POOL"):
        column = header.index(name)
        for line in rest:
            if STAMP.match(line):
                assert line[column - 2 : column] == "  ", (name, line)
                assert line[column] != " ", (name, line)
    stamps = [cells[0] for cells in rows(make_follow)]
    assert stamps == sorted(stamps)
    assert stamps[0] == AT


def test_every_row_names_its_node_and_pool_follow_ups_too(make_follow: list[str]) -> None:
    """Lifeboat's later decisions (a deferred notice acted on once the budget allows) name
    the node and pool of their notice; the simulation's steps name the node they happened
    on, all but a claim launched or nominated before its Node exists."""
    cells = rows(make_follow)
    later = [c for c in cells if c[2] != "(simulated)" and c[0] != AT]
    assert len(later) >= 2
    for row in later:
        assert row[4].startswith("ip-10-0-"), row
        # A node group's node has no pool: its drain's follow-up (the lifecycle action is
        # completed once the evicted pods have terminated, issue 22) shows "-".
        pools = {"batch", "general", "gpu"} | ({"-"} if row[2] == "asg-termination" else set())
        assert row[5] in pools, row
    assert any(row[2] == "asg-termination" and row[1] == "acted" for row in later)
    simulated = [c for c in cells if c[2] == "(simulated)"]
    assert len(simulated) >= 10
    for row in simulated:
        assert row[5] in {"batch", "general", "gpu", "-"}, row
        if row[1] not in {"launched", "nominated"}:
            assert row[4] != "-", row
    # A step's detail lines sit under the row of the node they are about.
    i = next(i for i, line in enumerate(make_follow) if "delete-nodeclaim batch-q2vtn" in line)
    row_line = next(line for line in reversed(make_follow[: i + 1]) if STAMP.match(line))
    assert re.split(r"\s{2,}", row_line.strip())[4:6] == ["ip-10-0-2-14.ec2.internal", "batch"]


def test_the_simulated_karpenter_steps_are_shown(make_follow: list[str]) -> None:
    cells = rows(make_follow)
    launched = [c for c in cells if c[1] == "launched"]
    removed = [c for c in cells if c[1] == "node-removed"]
    assert launched
    assert removed
    assert all(c[2] == "(simulated)" for c in launched + removed)
    # batch-q2vtn is deleted at --at (the hand-over); its node is drained at once and goes
    # TERMINATE_TIME later (the instance's termination, simulated).
    gone = next(c for c in removed if c[4] == "ip-10-0-2-14.ec2.internal")
    removed_at = datetime.fromisoformat(AT.replace("Z", "+00:00")) + TERMINATE_TIME
    assert gone[:6] == [
        removed_at.strftime("%Y-%m-%dT%H:%M:%SZ"), "node-removed", "(simulated)", "-",
        "ip-10-0-2-14.ec2.internal", "batch",
    ]  # fmt: skip
    text = "\n".join(make_follow)
    assert "NodeClaim batch-q2vtn: drained and terminated" in text
    assert re.search(r"NodeClaim batch-[0-9a-f]{20}: registered and initialized", text)


def test_wide_puts_every_row_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", *map(str, sorted(EVENTS.glob("*.json"))), "--cluster", str(CLUSTER)]
    argv += ["--at", AT, "--follow"]
    assert main([*argv, "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()
    assert main(argv) == 0
    narrow = capsys.readouterr().out.splitlines()
    assert all(STAMP.match(line) for line in wide[1:])
    assert max(len(line) for line in wide) > 160
    assert len(wide) == len(rows(narrow)) + 1
    assert [r[:6] for r in rows(wide)] == [r[:6] for r in rows(narrow)]


def test_json_stays_one_object_per_event_and_instance(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", str(EVENTS / "scheduled-change.json"), "--cluster", str(CLUSTER)]
    assert main([*argv, "--at", AT, "--follow", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    contract = {"event_id", "kind", "instance_id", "node", "nodepool", "outcome", "reason"}
    contract |= {"deferred_until", "actions"}
    assert all(set(r) >= contract for r in records)
    assert {r["kind"] for r in records} == {"scheduled-change"}  # no simulated steps
    first, second, *later = records
    assert (first["file"], second["file"]) == (str(EVENTS / "scheduled-change.json"),) * 2
    assert all("at" in r and "file" not in r for r in later)


def test_without_follow_one_aligned_line_per_decision(capsys: pytest.CaptureFixture[str]) -> None:
    samples = sorted(EVENTS.glob("*.json"))
    argv = ["replay", *map(str, samples), "--cluster", str(CLUSTER), "--at", AT, "--same-instant"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    # The retirement names two instances, the Capacity Block's warning three.
    assert len(lines) == len(samples) + 3
    starts = {line.index(" i-0a1b2c3d4e5f6") for line in lines}
    assert len(starts) == 1  # the INSTANCE column is aligned


def test_any_simulated_step_is_printed_with_its_fields() -> None:
    """The simulation may learn more controllers (consolidation, drift): the timeline prints
    whatever step it reports, at its instant, in time order with the decisions."""
    timeline = Timeline(timed=True)
    at = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
    report = Report("e1", "spot-interruption", Outcome.ACTED, "why", "i-01234567", "n1", "p1")
    timeline.report(report, at)
    timeline.step(
        SimStep(
            at.replace(minute=9),
            "consolidated",
            nodepool="p1",
            claim="p1-abc",
            node="n9",
            detail="empty node deleted",
        )
    )
    timeline.step(SimStep(at.replace(minute=10), "drifted", node="n8"))
    lines = list(timeline.lines())
    consolidated = next(line for line in lines if "consolidated" in line)
    assert consolidated.split()[:2] == ["2026-12-01T14:09:00Z", "consolidated"]
    assert re.split(r"\s{2,}", consolidated.strip())[2:] == [
        "(simulated)",
        "-",
        "n9",
        "p1",
        "NodeClaim p1-abc: empty node deleted",
    ]
    assert re.split(r"\s{2,}", lines[-1].strip())[1:] == ["drifted", "(simulated)", "-", "n8", "-"]


def test_follow_ends_when_a_pod_holds_its_node_forever(tmp_path: Path) -> None:
    """A do-not-disrupt pod on a Spot node whose claim has no terminationGracePeriod: the
    simulated Karpenter waits for it forever (as Karpenter's termination controller does)
    and its provisioner keeps polling. --follow reports the wait and ends once the
    simulation has been quiet for SIMULATION_QUIET, instead of polling without end."""

    from lifeboat_local.replay import SIMULATION_QUIET
    from tests.support.replaying import run_with_timeout

    cluster = cyaml.safe_load(CLUSTER.read_text())
    for item in cluster["items"]:
        if item["kind"] == "NodeClaim" and item["metadata"]["name"] == "general-7xkqz":
            item["spec"].pop("terminationGracePeriod", None)
        if item["kind"] == "Pod" and item["spec"].get("nodeName") == "ip-10-0-1-11.ec2.internal":
            item["metadata"].setdefault("annotations", {})["karpenter.sh/do-not-disrupt"] = "true"
    held = tmp_path / "cluster.yaml"
    held.write_text(cyaml.safe_dump(cluster))
    argv = ["replay", str(EVENTS / "spot-interruption.json"), "--cluster", str(held)]
    argv += ["--at", AT, "--follow"]
    out: list[str] = []

    def run() -> list[dict[str, object]]:
        import contextlib
        import io

        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(argv) == 0
        out.append(buffer.getvalue())
        return []

    run_with_timeout(run, seconds=120)
    cells = rows(out[0].splitlines())
    assert any(c[1] == "drain-waiting" and c[4] == "ip-10-0-1-11.ec2.internal" for c in cells)
    assert not any(c[1] == "node-removed" and c[4] == "ip-10-0-1-11.ec2.internal" for c in cells)
    last = datetime.fromisoformat(cells[-1][0].replace("Z", "+00:00"))
    started = datetime.fromisoformat(AT.replace("Z", "+00:00"))
    assert last - started <= SIMULATION_QUIET + SIMULATION_QUIET

"""``lifeboat windows``: allowances now and budget windows ahead, on the real emulator."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubemu import Emulator, load_cluster_file
from lifeboat_local import svg
from lifeboat_local.cli import build_parser, main
from lifeboat_local.exits import EXIT_REJECTED
from lifeboat_local.windows import FROZEN_MARK, OUTSIDE_MARK, run
from tests.support import cyaml
from tests.support.kubeconfigs import write_kubeconfig
from tests.support.paths import SAMPLE_CLUSTER

CLUSTER = SAMPLE_CLUSTER
SVG = "{http://www.w3.org/2000/svg}"
WRITE_VERBS = ("create", "update", "patch", "delete")
TUESDAY = "2026-12-01T14:05:00Z"  # inside general's weekday freeze (09:00-17:00 UTC)
SATURDAY = "2026-12-05T12:00:00Z"


def windows(*argv: str) -> tuple[int, str]:
    args = build_parser().parse_args(["windows", *argv])
    out = io.StringIO()
    return run(args, out), out.getvalue()


def pool_section(text: str, name: str) -> str:
    """The lines of one NodePool's section of the text output."""
    section = text.split(f"NodePool {name}:", 1)[1]
    return section.split("\nNodePool ", 1)[0].split("\nOne character per hour", 1)[0]


def strip(section: str, day: str) -> str:
    line = next(line for line in section.splitlines() if line.strip().startswith(day))
    return line.split(day, 1)[1].strip()


def test_general_is_frozen_now_on_a_weekday_afternoon() -> None:
    status, text = windows("--cluster", str(CLUSTER), "--at", TUESDAY, "--days", "2")
    assert status == 0
    general = pool_section(text, "general")
    assert general.startswith(" 6 node(s), 0 disrupting")
    assert "now: limit 0, disrupting 0, allowed 0" in general
    assert 'budget[1] "0"' in general
    # The table: frozen until 17:00, 20 % of 6 nodes (= 2, rounded up) overnight, frozen again.
    assert "Tue 2026-12-01 14:05   Tue 2026-12-01 17:00   0         0         0,1" in general
    assert "Tue 2026-12-01 17:00   Wed 2026-12-02 09:00   2         2         0" in general
    assert "Wed 2026-12-02 09:00   Wed 2026-12-02 17:00   0         0         0,1" in general
    # One character per hour: frozen 09:00-17:00 UTC on each weekday; the hours outside the
    # two days asked (before 14:05 today, from 14:05 on Thursday) are dots.
    assert strip(general, "Tue 12-01") == OUTSIDE_MARK * 14 + FROZEN_MARK * 3 + "2" * 7
    assert strip(general, "Wed 12-02") == "2" * 9 + FROZEN_MARK * 8 + "2" * 7
    assert strip(general, "Thu 12-03") == "2" * 9 + FROZEN_MARK * 6 + OUTSIDE_MARK * 9
    assert "Fri 12-04" not in general
    batch = pool_section(text, "batch")
    assert "now: limit 1, disrupting 0, allowed 1" in batch
    assert strip(batch, "Wed 12-02") == "1" * 24


def test_weekend_has_no_freeze_and_allows_now() -> None:
    status, text = windows("--cluster", str(CLUSTER), "--at", SATURDAY, "--days", "3")
    assert status == 0
    general = pool_section(text, "general")
    assert "now: limit 2, disrupting 0, allowed 2" in general
    assert strip(general, "Sat 12-05") == OUTSIDE_MARK * 12 + "2" * 12
    assert strip(general, "Sun 12-06") == "2" * 24
    assert strip(general, "Mon 12-07") == "2" * 9 + FROZEN_MARK * 8 + "2" * 7
    assert strip(general, "Tue 12-08") == "2" * 9 + FROZEN_MARK * 3 + OUTSIDE_MARK * 12
    assert "Sat 2026-12-05 12:00   Mon 2026-12-07 09:00   2" in general


def test_json_timeline() -> None:
    status, text = windows("--cluster", str(CLUSTER), "--at", TUESDAY, "--days", "1", "--json")
    assert status == 0
    document = json.loads(text)
    assert document["at"] == "2026-12-01T14:05:00Z"
    pools = {p["nodepool"]: p for p in document["nodepools"]}
    assert set(pools) == {"batch", "general", "gpu"}
    general = pools["general"]
    assert (general["limit"], general["allowed"], general["blocked"]) == (0, 0, False)
    assert general["opted_out"] is False
    assert general["timeline"] == [
        {
            "start": "2026-12-01T14:05:00Z",
            "end": "2026-12-01T17:00:00Z",
            "limit": 0,
            "allowed": 0,
            "active_budgets": [0, 1],
        },
        {
            "start": "2026-12-01T17:00:00Z",
            "end": "2026-12-02T09:00:00Z",
            "limit": 2,
            "allowed": 2,
            "active_budgets": [0],
        },
        {
            "start": "2026-12-02T09:00:00Z",
            "end": "2026-12-02T14:05:00Z",
            "limit": 0,
            "allowed": 0,
            "active_budgets": [0, 1],
        },
    ]


def test_svg_plot_has_one_row_per_pool(tmp_path: Path) -> None:
    target = tmp_path / "windows.svg"
    status, text = windows(
        "--cluster", str(CLUSTER), "--at", TUESDAY, "--days", "2", "--plot", str(target)
    )
    assert status == 0
    assert f"Wrote {target}" in text
    root = ET.parse(target).getroot()
    assert root.tag == f"{SVG}svg"
    assert "2026-12-01T14:05:00Z" in (root.findtext(f"{SVG}title") or "")
    rows = root.findall(f".//{SVG}g[@class='pool']")
    assert [row.get("data-pool") for row in rows] == ["batch", "general", "gpu"]
    general = rows[1]
    fills = {rect.get("fill") for rect in general.findall(f"{SVG}rect")}
    assert fills == {svg.FROZEN, svg.colour(2)}
    # Limits are shaded apart: batch's 1-node limit is not general's 2-node one.
    batch_fills = {rect.get("fill") for rect in rows[0].findall(f"{SVG}rect")}
    assert batch_fills == {svg.colour(1)} != {svg.colour(2)}
    frozen = [
        rect.findtext(f"{SVG}title") or ""
        for rect in general.findall(f"{SVG}rect")
        if rect.get("data-limit") == "0"
    ]
    assert any("from 2026-12-02T09:00:00Z to 2026-12-02T17:00:00Z" in t for t in frozen)
    # The limit and what it allows now, on the bar and in its tooltip.
    labels = [t.text for t in general.findall(f"{SVG}text")]
    assert "limit 2, allowed 2" in labels
    # The hours outside the horizon (before now; after 2 days) are greyed over.
    outside = root.findall(f".//{SVG}rect[@class='outside']")
    spans = [(o.findtext(f"{SVG}title") or "") for o in outside]
    assert spans == [
        "outside the horizon: 2026-12-01T00:00:00Z to 2026-12-01T14:05:00Z",
        "outside the horizon: 2026-12-03T14:05:00Z to 2026-12-04T00:00:00Z",
    ]
    assert {o.get("fill") for o in outside} == {svg.OUTSIDE}
    assert root.findall(f".//{SVG}line[@class='tick']")  # hour ticks
    assert root.find(f".//{SVG}g[@class='legend']") is not None


def run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exited:  # argparse's usage errors
        return int(exited.code or 0)


def test_png_needs_matplotlib(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "windows.png"
    argv = ["windows", "--cluster", str(CLUSTER), "--at", TUESDAY, "--plot", str(target)]
    status = run_main(argv)
    if importlib.util.find_spec("matplotlib") is None:
        assert status == 1
        error = capsys.readouterr().err
        assert ".svg" in error
        assert "eks-lifeboat[plot]" in error
        assert not target.exists()
    else:  # pragma: no cover - only with the optional extra installed
        assert status == 0
        assert target.read_bytes().startswith(b"\x89PNG")


def test_invalid_budgets_block_the_pool(tmp_path: Path) -> None:
    objects = load_cluster_file(CLUSTER)
    for obj in objects:
        if obj["kind"] == "NodePool" and obj["metadata"]["name"] == "batch":
            obj["spec"]["disruption"]["budgets"] = [{"nodes": "1", "schedule": "0 25 * * *"}]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    plot = tmp_path / "w.svg"
    status, text = windows(
        "--cluster", str(cluster), "--at", TUESDAY, "--days", "1", "--plot", str(plot)
    )
    assert (
        status == EXIT_REJECTED
    )  # Karpenter would refuse these budgets: fail, so CI can gate on it
    batch = pool_section(text, "batch")
    assert "now: BLOCKED, allowed 0 -- invalid budgets: budget[0]: " in batch
    assert "'schedule' must be set with 'duration'" in batch
    assert strip(batch, "Tue 12-01") == OUTSIDE_MARK * 14 + FROZEN_MARK * 10
    root = ET.parse(plot).getroot()
    blocked = root.findall(f".//{SVG}g[@data-pool='batch']/{SVG}rect[@class='segment blocked']")
    assert len(blocked) == 1


def test_live_cluster_through_a_kubeconfig_counts_disrupting_and_writes_nothing(
    tmp_path: Path,
) -> None:
    objects = load_cluster_file(CLUSTER)
    with Emulator(objects) as emulator:
        node = emulator.get_object("Node", "ip-10-0-1-12.ec2.internal")
        assert node is not None
        node["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
        emulator.put_object(node)
        emulator.reset_counts()
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emulator.url)
        status, text = windows("--kubeconfig", str(kubeconfig), "--at", SATURDAY, "--days", "1")
        writes = {verb: emulator.requests[verb] for verb in WRITE_VERBS}
    assert status == 0
    assert writes == dict.fromkeys(WRITE_VERBS, 0)
    general = pool_section(text, "general")
    assert "now: limit 2, disrupting 1, allowed 1" in general
    assert "Sat 2026-12-05 12:00   Sun 2026-12-06 12:00   2         1" in general


@pytest.mark.parametrize(
    "argv",
    [
        ["windows"],
        ["windows", "--cluster", str(CLUSTER), "--kubeconfig", "x"],
        ["windows", "--cluster", str(CLUSTER), "--days", "0"],
        ["windows", "--cluster", str(CLUSTER), "--plot", "w.pdf"],
        ["windows", "--cluster", "/nonexistent/cluster.yaml"],
    ],
)
def test_usage_errors_exit_1(argv: list[str]) -> None:
    try:
        status = main(argv)
    except SystemExit as exited:  # argparse's usage errors
        status = int(exited.code or 0)
    assert status == 1


def test_context_without_kubeconfig_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["windows", "--cluster", str(CLUSTER), "--context", "prod"])
    assert status == 1
    assert "--context goes with --kubeconfig" in capsys.readouterr().err


def cluster_with(tmp_path: Path, pool: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The sample cluster with NodePool ``pool`` changed by ``edit``."""
    objects = load_cluster_file(CLUSTER)
    edit(next(o for o in objects if o["kind"] == "NodePool" and o["metadata"]["name"] == pool))
    path = tmp_path / "cluster.yaml"
    path.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def opt_out(nodepool: dict[str, Any]) -> None:
    nodepool["metadata"].setdefault("annotations", {})["lifeboat.dev/disabled"] = "true"


def test_an_opted_out_pool_is_shown_as_such(tmp_path: Path) -> None:
    """lifeboat.dev/disabled: Lifeboat's decide() ignores the pool's nodes, so its windows
    plan nothing for Lifeboat: no table and no strips, a note instead; marked in JSON and SVG."""
    cluster = cluster_with(tmp_path, "batch", opt_out)
    plot = tmp_path / "w.svg"
    argv = ("--cluster", str(cluster), "--at", TUESDAY, "--days", "1")
    status, text = windows(*argv, "--plot", str(plot))
    assert status == 0
    batch = pool_section(text, "batch")
    assert "opted out (lifeboat.dev/disabled=true): Lifeboat leaves this pool alone" in batch
    assert "FROM (UTC)" not in batch
    assert "Tue 12-01" not in batch
    assert "opted out" not in pool_section(text, "general")
    _, document = windows(*argv, "--json")
    pools = {p["nodepool"]: p for p in json.loads(document)["nodepools"]}
    assert (pools["batch"]["opted_out"], pools["general"]["opted_out"]) == (True, False)
    root = ET.parse(plot).getroot()
    marked = root.findall(f".//{SVG}g[@data-pool='batch']/{SVG}rect")
    assert [rect.get("class") for rect in marked] == ["segment opted-out"]
    _, check = windows(*argv, "--check")
    assert "ok       NodePool batch: 1 budget(s) (opted out of Lifeboat)" in check


def test_check_gates_ci_on_invalid_budgets(tmp_path: Path) -> None:
    def broken(nodepool: dict[str, Any]) -> None:
        nodepool["spec"]["disruption"]["budgets"] = [{"nodes": "ten"}]

    status, text = windows("--cluster", str(CLUSTER), "--check")
    assert status == 0
    assert text.splitlines() == [
        "ok       NodePool batch: 1 budget(s)",
        "ok       NodePool general: 2 budget(s)",
        "ok       NodePool gpu: 1 budget(s)",
    ]
    invalid = cluster_with(tmp_path, "general", broken)
    status, text = windows("--cluster", str(invalid), "--check")
    assert status == EXIT_REJECTED
    lines = text.splitlines()
    assert lines[0] == "ok       NodePool batch: 1 budget(s)"
    assert lines[1].startswith("INVALID  NodePool general: budget[0]: ")
    assert "ten" in lines[1]
    # The installed command, as CI would run it.
    command = Path(sys.executable).parent / "lifeboat"
    if command.exists():
        done = subprocess.run(
            [command, "windows", "--check", "--cluster", invalid],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == EXIT_REJECTED, done.stderr  # input refused: 2
        assert "INVALID  NodePool general" in done.stdout
        assert "Traceback" not in done.stderr


def day_rows(section: str) -> list[str]:
    """The hour marks of each day row of a pool's strips."""
    return [m.group(1) for m in re.finditer(r"^    \w{3} \d\d-\d\d  (.*)$", section, re.M)]


@pytest.mark.parametrize("days", [1, 3])
def test_days_shows_that_many_days(days: int) -> None:
    """From 14:00 exactly, N days are N * 24 hours marked, over N + 1 calendar rows; from
    midnight, exactly N rows."""
    argv = ("--cluster", str(CLUSTER), "--days", str(days), "--at")
    status, text = windows(*argv, "2026-12-01T14:00:00Z")
    assert status == 0
    rows = day_rows(pool_section(text, "batch"))
    assert len(rows) == days + 1
    marks = "".join(rows)
    assert len(marks) == 24 * (days + 1)
    assert len(marks.replace(OUTSIDE_MARK, "")) == 24 * days
    _, text = windows(*argv, "2026-12-01T00:00:00Z")
    rows = day_rows(pool_section(text, "batch"))
    assert rows == ["1" * 24] * days


def test_allowed_differs_from_the_limit_while_nodes_disrupt(tmp_path: Path) -> None:
    objects = load_cluster_file(CLUSTER)
    node = next(o for o in objects if o["metadata"]["name"] == "ip-10-0-1-12.ec2.internal")
    node["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    plot = tmp_path / "w.svg"
    status, _ = windows(
        "--cluster", str(cluster), "--at", SATURDAY, "--days", "1", "--plot", str(plot)
    )
    assert status == 0
    general = ET.parse(plot).getroot().find(f".//{SVG}g[@data-pool='general']")
    assert general is not None
    segment = general.find(f"{SVG}rect[@class='segment']")
    assert segment is not None
    assert (segment.get("data-limit"), segment.get("data-allowed")) == ("2", "1")
    assert "limit 2, allowed 1 (1 disrupting now)" in (segment.findtext(f"{SVG}title") or "")
    assert "limit 2, allowed 1" in [t.text for t in general.findall(f"{SVG}text")]


@pytest.mark.parametrize(
    ("plot", "message"),
    [
        ("missing-folder/w.svg", "missing-folder does not exist"),
        ("a-file/w.svg", "a-file is not a folder"),
        ("w.pdf", "must end in .svg or .png"),
    ],
)
def test_the_plot_is_checked_before_any_work(
    tmp_path: Path, plot: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("")
    # The cluster file does not exist: the plot is refused before it is read.
    argv = ["windows", "--cluster", str(tmp_path / "none.yaml"), "--plot", str(tmp_path / plot)]
    assert run_main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err
    assert "none.yaml" not in captured.err


def test_the_settings_say_what_lifeboat_does_in_the_windows() -> None:
    status, text = windows(
        "--cluster", str(CLUSTER), "--at", TUESDAY, "--days", "1",
        "--config-env", "production", "--config-file", str(CLUSTER.parents[1] / "samconfig.toml"),
    )  # fmt: skip
    assert status == 0
    assert (
        "Lifeboat's voluntary work waits for these windows (rebalance-recommendation: cordon, "
        "scheduled-change: replace, rotation: replace); scheduled maintenance goes ahead "
        "regardless 1h0m0s before its start."
    ) in text

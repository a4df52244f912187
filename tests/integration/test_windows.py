"""``lifeboat windows``: allowances now and budget windows ahead, on the real emulator."""

from __future__ import annotations

import importlib.util
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from kubeconfigs import write_kubeconfig

from kubemu import Emulator, load_cluster_file
from lifeboat_local.cli import build_parser, main
from lifeboat_local.windows import FROZEN_MARK, run
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
    # One character per hour: frozen 09:00-17:00 UTC on each weekday.
    for day in ("Tue 12-01", "Wed 12-02", "Thu 12-03"):
        assert strip(general, day) == "2" * 9 + FROZEN_MARK * 8 + "2" * 7
    batch = pool_section(text, "batch")
    assert "now: limit 1, disrupting 0, allowed 1" in batch
    assert strip(batch, "Tue 12-01") == "1" * 24


def test_weekend_has_no_freeze_and_allows_now() -> None:
    status, text = windows("--cluster", str(CLUSTER), "--at", SATURDAY, "--days", "3")
    assert status == 0
    general = pool_section(text, "general")
    assert "now: limit 2, disrupting 0, allowed 2" in general
    assert strip(general, "Sat 12-05") == "2" * 24
    assert strip(general, "Sun 12-06") == "2" * 24
    assert strip(general, "Mon 12-07") == "2" * 9 + FROZEN_MARK * 8 + "2" * 7
    assert "Sat 2026-12-05 12:00   Mon 2026-12-07 09:00   2" in general


def test_json_timeline() -> None:
    status, text = windows("--cluster", str(CLUSTER), "--at", TUESDAY, "--days", "1", "--json")
    assert status == 0
    document = json.loads(text)
    assert document["at"] == "2026-12-01T14:05:00Z"
    pools = {p["nodepool"]: p for p in document["nodepools"]}
    assert set(pools) == {"batch", "general"}
    general = pools["general"]
    assert (general["limit"], general["allowed"], general["blocked"]) == (0, 0, False)
    assert general["timeline"] == [
        {
            "start": "2026-12-01T14:05:00Z",
            "end": "2026-12-01T17:00:00Z",
            "limit": 0,
            "active_budgets": [0, 1],
        },
        {
            "start": "2026-12-01T17:00:00Z",
            "end": "2026-12-02T09:00:00Z",
            "limit": 2,
            "active_budgets": [0],
        },
        {
            "start": "2026-12-02T09:00:00Z",
            "end": "2026-12-02T14:05:00Z",
            "limit": 0,
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
    assert [row.get("data-pool") for row in rows] == ["batch", "general"]
    general = rows[1]
    fills = {rect.get("fill") for rect in general.findall(f"{SVG}rect")}
    assert fills == {"#d62728", "#f0a30a"}  # frozen red, limited amber
    frozen = [
        rect.findtext(f"{SVG}title") or ""
        for rect in general.findall(f"{SVG}rect")
        if rect.get("data-limit") == "0"
    ]
    assert any("from 2026-12-01T09:00:00Z to 2026-12-01T17:00:00Z" in t for t in frozen)
    assert root.findall(f".//{SVG}line[@class='tick']")  # hour ticks
    assert root.find(f".//{SVG}g[@class='legend']") is not None


def test_png_needs_matplotlib(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "windows.png"
    argv = ["windows", "--cluster", str(CLUSTER), "--at", TUESDAY, "--plot", str(target)]
    status = main(argv)
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
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    plot = tmp_path / "w.svg"
    status, text = windows(
        "--cluster", str(cluster), "--at", TUESDAY, "--days", "1", "--plot", str(plot)
    )
    assert status == 0
    batch = pool_section(text, "batch")
    assert "now: BLOCKED, allowed 0 -- invalid budgets: budget[0]: " in batch
    assert "'schedule' must be set with 'duration'" in batch
    assert strip(batch, "Tue 12-01") == FROZEN_MARK * 24
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

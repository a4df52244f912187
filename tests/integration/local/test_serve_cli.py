"""`lifeboat serve` and `replay --serve` refuse bad input with a usage error, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def lifeboat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lifeboat_local.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


def test_a_missing_cluster_file_is_a_usage_error(tmp_path: Path) -> None:
    result = lifeboat(
        "serve", "--cluster", str(tmp_path / "nope.yaml"), "--kubeconfig-out", str(tmp_path / "k")
    )
    assert result.returncode == 1
    assert "nope.yaml" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "k").exists()


def test_a_bad_port_is_a_usage_error(tmp_path: Path) -> None:
    result = lifeboat(
        "serve",
        "--cluster",
        str(ROOT / "events" / "cluster.yaml"),
        "--kubeconfig-out",
        str(tmp_path / "k"),
        "--port",
        "70000",
    )
    assert result.returncode == 1
    assert "--port 70000" in result.stderr


def test_replay_serve_needs_a_kubeconfig_path(tmp_path: Path) -> None:
    result = lifeboat(
        "replay",
        str(ROOT / "events" / "spot-interruption.json"),
        "--cluster",
        str(ROOT / "events" / "cluster.yaml"),
        "--serve",
    )
    assert result.returncode == 1
    assert "--serve and --kubeconfig-out go together" in result.stderr

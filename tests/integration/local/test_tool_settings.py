"""``replay``, ``explain`` and ``windows`` judge with the settings the Lambda would have: the
``LIFEBOAT_*`` environment variables it reads, over those ``sam deploy --config-env NAME``
would give it (samconfig.toml through template.yaml), and say on stderr which applied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lifeboat_local.cli import main
from tests.support import cyaml

ROOT = Path(__file__).resolve().parents[3]
EVENTS = ROOT / "events"
CLUSTER = EVENTS / "cluster.yaml"
REBALANCE = EVENTS / "rebalance-recommendation.json"
EVENING = "2026-12-01T18:05:00Z"  # outside general's weekday freeze: the budget allows it
CONFIG = ("--config-file", str(ROOT / "samconfig.toml"))


@pytest.fixture(autouse=True)
def no_lifeboat_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("LIFEBOAT_")]:
        monkeypatch.delenv(name)


def replay(
    capsys: pytest.CaptureFixture[str], *argv: str | Path
) -> tuple[int, list[dict[str, Any]], str]:
    try:
        status = main(["replay", *map(str, argv), "--json"])
    except SystemExit as exited:
        status = int(exited.code or 0)
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def types(record: dict[str, Any]) -> list[str]:
    return [action["type"] for action in record["actions"]]


def test_production_cordons_a_rebalance_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    """samconfig's production environment: KindActions=rebalance-recommendation=cordon."""
    argv = (REBALANCE, "--cluster", CLUSTER, "--at", EVENING)
    status, [default], err = replay(capsys, *argv)
    assert status == 0
    assert err == ""  # built-in defaults: nothing to say
    assert types(default) == [
        "taint",
        "cordon",
        "label",
        "create-nodeclaim",
        "delete-nodeclaim",
    ]
    status, [production], err = replay(capsys, *argv, "--config-env", "production", *CONFIG)
    assert status == 0
    assert (production["outcome"], types(production)) == ("acted", ["taint", "cordon", "label"])
    [line] = err.splitlines()
    assert line.startswith(
        f"lifeboat: settings from {ROOT / 'samconfig.toml'} [production] through "
        f"{ROOT / 'template.yaml'}: clusters prod-a,prod-b; dry run off;"
    )
    assert "rebalance-recommendation=cordon, scheduled-change=replace" in line
    assert "scheduled-change lead 1h0m0s" in line
    assert "instances taken to be in cluster prod-a" in line


def test_lifeboat_variables_apply_and_win_over_the_config_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = (REBALANCE, "--cluster", CLUSTER, "--at", EVENING)
    monkeypatch.setenv("LIFEBOAT_KIND_ACTIONS", "rebalance-recommendation=ignore")
    status, [record], err = replay(capsys, *argv)
    assert status == 0
    assert record["outcome"] == "ignored"
    assert "configured to ignore rebalance-recommendation" in record["reason"]
    assert "settings from LIFEBOAT_KIND_ACTIONS in the environment" in err
    status, [record], err = replay(capsys, *argv, "--config-env", "production", *CONFIG)
    assert record["outcome"] == "ignored"  # the variable wins over samconfig's cordon
    assert "[production] through" in err
    assert "; LIFEBOAT_KIND_ACTIONS in the environment" in err


def test_the_default_environment_is_a_dry_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """samconfig's default environment deploys DryRun=true: the replay changes nothing."""
    state = tmp_path / "state.yaml"
    argv = (EVENTS / "spot-interruption.json", "--cluster", CLUSTER, "--at", EVENING)
    status, [record], _ = replay(
        capsys, *argv, "--config-env", "default", *CONFIG, "--state-out", state
    )
    assert status == 0
    assert record["reason"].startswith("dry run, nothing changed: spot interruption")
    node = next(
        o
        for o in cyaml.safe_load(state.read_text())["items"]
        if o["metadata"]["name"] == record["node"]
    )
    assert not node["spec"].get("unschedulable")


def test_an_instance_of_a_cluster_not_managed_is_ignored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = (REBALANCE, "--cluster", CLUSTER, "--at", EVENING, "--config-env", "production")
    status, [record], err = replay(capsys, *argv, *CONFIG, "--eks-cluster", "staging")
    assert status == 0
    assert record["outcome"] == "ignored"
    assert "belongs to cluster staging, not managed here" in record["reason"]
    assert "instances taken to be in cluster staging" in err


def test_a_managed_tag_is_taken_as_carried(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster file has no EC2 tags; with LIFEBOAT_MANAGED_TAG set the instances are taken
    to carry it (and the settings line says so), or every one would be ignored."""
    monkeypatch.setenv("LIFEBOAT_MANAGED_TAG", "lifeboat/managed")
    status, [record], err = replay(capsys, REBALANCE, "--cluster", CLUSTER, "--at", EVENING)
    assert (status, record["outcome"]) == (0, "acted")
    assert "instances taken to carry the managed tag lifeboat/managed" in err


@pytest.mark.parametrize(
    ("variables", "argv", "message"),
    [
        ({"LIFEBOAT_TAINT_EFFECT": "PreferNoSchedule"}, [], "LIFEBOAT_TAINT_EFFECT"),
        ({}, ["--config-env", "staging", *CONFIG], "no environment 'staging'"),
        ({}, ["--config-file", "samconfig.toml"], "go with --config-env"),
    ],
)
def test_settings_that_cannot_apply_are_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variables: dict[str, str],
    argv: list[str],
    message: str,
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    status, records, err = replay(capsys, REBALANCE, "--cluster", CLUSTER, *argv)
    assert (status, records) == (1, [])
    assert message in err
    assert "Traceback" not in err


def test_the_installed_command_reads_samconfig_from_the_working_directory() -> None:
    command = Path(sys.executable).parent / "lifeboat"
    if not command.exists():
        pytest.skip("lifeboat is not installed")
    done = subprocess.run(
        [command, "replay", REBALANCE, "--cluster", CLUSTER, "--at", EVENING,
         "--config-env", "production"],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
        env={k: v for k, v in os.environ.items() if not k.startswith("LIFEBOAT_")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "create-nodeclaim" not in done.stdout
    assert "taint lifeboat.dev/rebalance-recommendation:NoSchedule, cordon" in done.stdout
    assert "settings from samconfig.toml [production] through template.yaml" in done.stderr

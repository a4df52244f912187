"""``--eks-cluster`` names the one cluster a local replay reaches: a request for another
cluster is refused as the deployed stack refuses one it does not manage
(``RotationRunner._refusal``: "not managed here"), never carried out on this one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

REQUEST = EVENTS / "rotation" / "legacy-to-karpenter.json"  # for cluster prod-a
AT = "2026-12-01T14:05:00Z"


def _for_cluster(tmp_path: Path, cluster: str) -> Path:
    event = json.loads(REQUEST.read_text())
    event["detail"]["cluster"] = cluster
    path = tmp_path / f"rotation-{cluster}.json"
    path.write_text(json.dumps(event))
    return path


@pytest.mark.parametrize("command", ["replay", "explain"])
def test_a_rotation_for_another_cluster_does_not_act(
    cli: Callable[..., CliRun], tmp_path: Path, command: str
) -> None:
    event = _for_cluster(tmp_path, "prod-b")
    run = cli(
        command, event, "--cluster", SAMPLE_CLUSTER, "--at", AT, "--eks-cluster", "prod-a", "--json"
    )
    assert run.code == 0, run.err
    [record] = [json.loads(line) for line in run.out.splitlines()]
    decision = record.get("decision", record)
    assert (decision["outcome"], decision["reason"]) == (
        "ignored",
        "rotation for cluster prod-b, not managed here",
    )
    assert decision.get("actions", []) == []


def test_a_rotation_for_the_named_cluster_acts(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    event = _for_cluster(tmp_path, "prod-b")
    run = cli("replay", event, "--cluster", SAMPLE_CLUSTER, "--at", AT, "--eks-cluster", "prod-b")
    assert run.code == 0, run.err
    assert "cordon" in run.out


def test_the_production_settings_refuse_the_other_managed_cluster(
    cli: Callable[..., CliRun], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """samconfig's production manages prod-a and prod-b; the file is prod-a's (the first)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    event = _for_cluster(tmp_path, "prod-b")
    run = cli(
        "replay", event, "--cluster", SAMPLE_CLUSTER, "--at", AT, "--config-env", "production"
    )
    assert run.code == 0, run.err
    assert "rotation for cluster prod-b, not managed here" in run.out
    assert "cordon" not in run.out


def test_a_dry_run_says_would_act_and_marks_every_record(
    cli: Callable[..., CliRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contract: a dry run reports the same records with ``"dry_run": true``, and
    ``would act`` in text output (nothing was done)."""
    monkeypatch.setenv("LIFEBOAT_DRY_RUN", "true")
    spot = EVENTS / "spot-interruption.json"
    argv = (spot, "--cluster", SAMPLE_CLUSTER, "--at", AT)
    text = cli("replay", *argv)
    assert text.code == 0, text.err
    assert text.out.startswith("would act  spot-interruption  i-0a1b2c3d4e5f60001")
    [record] = [json.loads(line) for line in cli("replay", *argv, "--json").out.splitlines()]
    assert (record["outcome"], record["dry_run"]) == ("acted", True)
    assert record["reason"].startswith("dry run, nothing changed: ")
    monkeypatch.delenv("LIFEBOAT_DRY_RUN")
    [real] = [json.loads(line) for line in cli("replay", *argv, "--json").out.splitlines()]
    assert "dry_run" not in real
    assert cli("replay", *argv).out.startswith("acted  spot-interruption")

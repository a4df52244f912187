"""Typos never end as a quiet "ignored": a misspelled kind in a cluster file (``NodeCliam``),
a misspelled field Lifeboat reads (``providerId``) and a misspelled ``detail-type`` of a
known source are warnings naming the nearest valid name; ``--strict`` (the CI use) makes
them exit 3 once the work is done."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kubemu import dump_cluster_file, load_cluster_file
from lifeboat_local.typos import field_typos, kind_typo, nearest
from tests.conftest import CliRun
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

AT = "2026-12-01T14:05:00Z"
SPOT = EVENTS / "spot-interruption.json"


def _typo_cluster(path: Path) -> Path:
    objects = load_cluster_file(SAMPLE_CLUSTER)
    for obj in objects:
        if obj["kind"] == "NodeClaim" and obj["metadata"]["name"] == "general-7xkqz":
            obj["kind"] = "NodeCliam"
        if obj["kind"] == "Node" and obj["metadata"]["name"] == "ip-10-0-1-12.ec2.internal":
            obj["spec"]["providerId"] = obj["spec"].pop("providerID")
    dump_cluster_file(objects, path)
    return path


def test_nearest_names() -> None:
    assert kind_typo("NodeCliam") == "NodeClaim"
    assert kind_typo("Service") is None
    assert nearest("providerId", ["providerID", "taints"]) == "providerID"
    assert nearest("providerID", ["providerID"]) is None
    assert nearest("podCIDR", ["providerID", "taints", "unschedulable"]) is None


def test_the_sample_cluster_has_no_typos() -> None:
    assert field_typos(load_cluster_file(SAMPLE_CLUSTER)) == []


@pytest.mark.parametrize("command", ["replay", "explain"])
def test_cluster_file_typos_are_warnings_and_strict_exits_3(
    cli: Callable[..., CliRun], tmp_path: Path, command: str
) -> None:
    cluster = _typo_cluster(tmp_path / "typo.yaml")
    run = cli(command, SPOT, "--cluster", cluster, "--at", AT)
    assert run.code == 0, run.err
    assert (
        f"lifeboat: warning: --cluster {cluster}: document 0: kind NodeCliam (general-7xkqz) "
        "is not a kind Lifeboat reads; did you mean NodeClaim? (skipped)"
    ) in run.err
    assert (
        f"lifeboat: warning: --cluster {cluster}: Node ip-10-0-1-12.ec2.internal: "
        "spec.providerId is not a field Lifeboat reads; did you mean spec.providerID?"
    ) in run.err
    strict = cli(command, SPOT, "--cluster", cluster, "--at", AT, "--strict")
    assert strict.code == 3
    assert strict.out == run.out  # the work is done all the same


def test_strict_without_warnings_exits_0(cli: Callable[..., CliRun]) -> None:
    run = cli("replay", SPOT, "--cluster", SAMPLE_CLUSTER, "--at", AT, "--strict")
    assert (run.code, run.err) == (0, "")


def test_a_misspelled_detail_type_is_a_warning_naming_the_nearest(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    event = json.loads(SPOT.read_text())
    event["detail-type"] = "EC2 Spot Instance Interuption Warning"
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(event))
    run = cli("replay", path, "--cluster", SAMPLE_CLUSTER, "--at", AT, "--strict")
    assert run.code == 3
    assert run.out.startswith("ignored  unsupported")
    assert 'did you mean "EC2 Spot Instance Interruption Warning"?' in run.err
    assert run.err.startswith(f"lifeboat: warning: {path}: unsupported event")


@pytest.mark.parametrize("command", ["replay", "explain"])
def test_a_misspelled_source_is_a_warning_naming_the_nearest(
    cli: Callable[..., CliRun], tmp_path: Path, command: str
) -> None:
    """Issue 38.7: ``source: aws.ecc2`` was quietly ignored, even under --strict."""
    event = json.loads(SPOT.read_text())
    event["source"] = "aws.ecc2"
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(event))
    run = cli(command, path, "--cluster", SAMPLE_CLUSTER, "--at", AT, "--strict")
    assert run.code == 3
    assert 'source "aws.ecc2"' in run.err
    assert '(did you mean source "aws.ec2"?)' in run.err


def test_a_source_of_another_service_gets_no_suggestion(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    """An event Lifeboat has no business with (another service's) is ignored as before."""
    event = json.loads(SPOT.read_text())
    event["source"] = "aws.s3"
    path = tmp_path / "s3.json"
    path.write_text(json.dumps(event))
    run = cli("replay", path, "--cluster", SAMPLE_CLUSTER, "--at", AT, "--strict")
    assert (run.code, run.err) == (0, "")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["rotate", "r", "--node-group", "g", "--waves", "5,2", "--out", "x.json"],
         "--waves 5,2: the sizes are cumulative"),
        (["rotate", "r", "--node-group", "g", "--waves", "50%,10%", "--out", "x.json"],
         "so 10% after 50% adds nothing"),
        (["convert", "--settings", "s.yaml", "--zone", "us-east-1z"],
         "'us-east-1z' is no zone of us-east-1"),
        (["convert", "--settings", "s.yaml", "--zone", "us-esat-1a"],
         "'us-esat-1a' is not in any region EC2 has"),
        (["replay", str(SPOT), "--cluster", str(SAMPLE_CLUSTER), "--at", "2026-12-01T14:05:00"],
         "'2026-12-01T14:05:00' has no time zone: add Z for UTC"),
        (["windows", "--cluster", str(SAMPLE_CLUSTER), "--at", "2026-12-01T14:05:00"],
         "has no time zone"),
    ],
    ids=["waves-decreasing", "waves-percent-decreasing", "zone-letter", "zone-region",
         "at-replay", "at-windows"],
)  # fmt: skip
def test_bounds_are_usage_errors(
    cli: Callable[..., CliRun], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    argv: list[str], said: str,
) -> None:  # fmt: skip
    """Issue 38.7: each was accepted (5,2 rotated five then one more node; a zone no region
    has; a local time read as UTC without a word)."""
    monkeypatch.chdir(tmp_path)
    run = cli(*argv)
    assert run.code == 1, run.err
    assert said in run.err
    assert not (tmp_path / "x.json").exists()


def test_increasing_waves_and_real_zones_pass(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    run = cli("rotate", "r", "--node-group", "g", "--waves", "1,10%,100%", "--out", out)
    assert run.code == 0, run.err
    assert ["1", "10%", "100%"] in _values(json.loads(out.read_text()))
    at = cli("replay", SPOT, "--cluster", SAMPLE_CLUSTER, "--at", "2026-12-01T15:05:00+01:00")
    assert at.code == 0, at.err


def test_a_json_error_says_char_once(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    """Issue 38.7: "Unterminated string starting at at char"."""
    path = tmp_path / "cut.json"
    path.write_text('{"source": "aws.ec2", "detail-type": "EC2 Spot')
    run = cli("replay", path, "--cluster", SAMPLE_CLUSTER, "--at", AT)
    assert "Unterminated string starting at char 37" in run.out
    assert "at at" not in run.out


def _values(document: object) -> list[object]:
    """Every value nested in ``document`` (where the event keeps the waves is rotate's)."""
    if isinstance(document, dict):
        return [v for value in document.values() for v in [value, *_values(value)]]
    if isinstance(document, list):
        return [v for value in document for v in _values(value)]
    return []

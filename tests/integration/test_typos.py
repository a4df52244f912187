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

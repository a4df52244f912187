"""``lifeboat patching --from DIR`` (issue 38.6): AWS's answers saved as the AWS CLI prints
them, read instead of AWS, so the gate runs (and is tested) without an account.

The equivalence test saves what AWS (moto, through boto3) answers to the three calls patching
makes, as ``aws ... --output json`` would print it, and checks that ``--from`` gives the same
document as asking AWS. The sample folder ``events/patching`` is the one the docs run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.conftest import CliRun
from tests.integration.local.patching.test_patching import (
    AL2023,
    AT,
    BOTTLEROCKET,
    REGION,
    patching,
)
from tests.integration.local.patching.test_patching import fleet as fleet  # the fixture, shared
from tests.support import cyaml
from tests.support.paths import EVENTS, SAMPLE_CLUSTER

SAMPLE = EVENTS / "patching"
SAMPLE_AT = "2026-12-01T14:05:00Z"


@pytest.fixture
def aws_region() -> str:
    return REGION


def _save(folder: Path, name: str, answer: dict[str, Any]) -> None:
    answer = {k: v for k, v in answer.items() if k != "ResponseMetadata"}
    # The CLI prints timestamps as ISO 8601 text.
    (folder / name).write_text(json.dumps(answer, default=lambda t: t.isoformat(), indent=2))


def test_saved_answers_give_what_aws_gives(
    cli: Callable[..., CliRun], aws: boto3.Session, fleet: dict[str, str], tmp_path: Path
) -> None:
    asked = patching(cli, fleet, "--json", "--region", REGION)
    saved = tmp_path / "aws"
    saved.mkdir()
    ec2, ssm = aws.client("ec2"), aws.client("ssm")
    _save(saved, "instances.json", ec2.describe_instances())
    _save(saved, "parameters.json", ssm.get_parameters(Names=[AL2023, BOTTLEROCKET]))
    _save(saved, "images.json", ec2.describe_images(Owners=["self"]))
    read = patching(cli, fleet, "--json", "--from", str(saved))
    assert read.code == asked.code == 3, read.err
    assert json.loads(read.out) == json.loads(asked.out)


def test_the_sample_folder_runs_without_aws(
    cli: Callable[..., CliRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No credentials, no endpoint: a call to AWS would fail."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    run = cli(
        "patching", "--cluster", SAMPLE_CLUSTER, "--from", SAMPLE, "--at", SAMPLE_AT, "--json",
        "--cluster-name", "prod",
    )  # fmt: skip
    assert run.code == 3, run.err
    document = json.loads(run.out)
    status = {n["node"]: n["status"] for n in document["nodes"]}
    assert status["ip-10-0-1-11.ec2.internal"] == "outdated"
    assert status["ip-10-0-2-13.ec2.internal"] == "current"
    over = {n["node"] for n in document["nodes"] if n["over_max_age"]}
    assert over == {
        "ip-10-0-1-11.ec2.internal",
        "ip-10-0-1-12.ec2.internal",
        "ip-10-0-2-19.ec2.internal",
    }
    general = next(g for g in document["groups"] if g["group"] == "NodePool general")
    assert general["rotate"] == (
        "lifeboat rotate patch-general --cluster-name prod --label karpenter.sh/nodepool=general "
        "--ami ami-0c3f5a7b9d1e24680"
    )


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({}, "no .json file"),
        ({"x.json": "not json"}, "x.json: not JSON"),
        ({"x.json": '{"Volumes": []}'}, "x.json: holds none of Reservations"),
        ({"x.json": '{"Images": {}}'}, "x.json: Images is not a list"),
    ],
    ids=["empty", "not-json", "other-answer", "wrong-shape"],
)
def test_a_folder_that_cannot_be_read_is_a_usage_error(
    cli: Callable[..., CliRun], tmp_path: Path, files: dict[str, str], said: str
) -> None:
    folder = tmp_path / "aws"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump(next(iter(_nodes()))))
    run = cli("patching", "--cluster", cluster, "--from", folder, "--at", AT.isoformat())
    assert run.code == 1
    assert said in run.err
    assert "Traceback" not in run.err


def test_a_missing_answer_kind_is_said_and_its_nodes_are_unknown(
    cli: Callable[..., CliRun], tmp_path: Path
) -> None:
    folder = tmp_path / "aws"
    folder.mkdir()
    (folder / "instances.json").write_text((SAMPLE / "describe-instances.json").read_text())
    run = cli(
        "patching", "--cluster", SAMPLE_CLUSTER, "--from", folder, "--at", SAMPLE_AT, "--json"
    )
    assert run.code == 0, run.err
    assert "no ssm:GetParameters answer among the files" in run.err
    assert "no ec2:DescribeImages answer" in run.err
    assert {n["status"] for n in json.loads(run.out)["nodes"]} == {"unknown"}


def _nodes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "spec": {"providerID": "aws:///eu-west-1a/i-0123456789abcdef0"},
        }
    ]

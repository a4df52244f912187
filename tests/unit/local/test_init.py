"""``lifeboat init``: the few answers a first deploy needs, asked and checked as CloudFormation
checks them (template.yaml's AllowedPattern), written as one samconfig.toml environment that
leaves the file's other environments and comments as they were. That ``sam deploy`` takes the
environment to a change set without a question is test_sam_guided_deploy.py's."""

from __future__ import annotations

import io
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from lifeboat_local import init
from lifeboat_local.cli import build_parser
from lifeboat_local.common import UsageError
from tests.support.paths import ROOT, TEMPLATE

SAMCONFIG = ROOT / "samconfig.toml"


def _run(tmp_path: Path, answers: str, *flags: str) -> tuple[int, str, Path]:
    config = tmp_path / "samconfig.toml"
    if not config.exists():
        config.write_text(SAMCONFIG.read_text())
    args = build_parser().parse_args(["init", "--file", str(config), *flags])
    out = io.StringIO()
    code = init.run(args, given=io.StringIO(answers), out=out)
    return code, out.getvalue(), config


def _template_parameters() -> dict[str, dict[str, object]]:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load(TEMPLATE.read_text(), Loader=Loader)
    parameters: dict[str, dict[str, object]] = template["Parameters"]
    return parameters


def test_the_answers_become_one_environment_and_nothing_else_changes(tmp_path: Path) -> None:
    answers = "prod-a, prod-b\n\n\neu-west-1\nn\narn:aws:sns:eu-west-1:123456789012:alarms\n"
    code, out, config = _run(tmp_path, answers)
    assert code == 0
    written = config.read_text()
    assert written.startswith(SAMCONFIG.read_text())  # appended: comments and all kept
    env = tomllib.loads(written)["prod-a"]
    assert env["global"]["parameters"] == {
        "stack_name": "lifeboat-prod-a",
        "language_extensions": True,
        "profile": "default",
        "region": "eu-west-1",
    }
    assert env["build"]["parameters"]["parameter_overrides"] == ["ClusterNames=prod-a,prod-b"]
    assert env["deploy"]["parameters"]["parameter_overrides"] == [
        "ClusterNames=prod-a,prod-b",
        "DryRun=false",
        "AlarmTopicArn=arn:aws:sns:eu-west-1:123456789012:alarms",
    ]
    assert "sam deploy --config-env prod-a" in out


def test_every_value_written_is_one_the_template_accepts(tmp_path: Path) -> None:
    _, _, config = _run(tmp_path, "", "--clusters", "c1", "--region", "us-west-2", "--yes")
    parameters = _template_parameters()
    for item in tomllib.loads(config.read_text())["c1"]["deploy"]["parameters"][
        "parameter_overrides"
    ]:
        name, _, value = item.partition("=")
        spec = parameters[name]
        pattern = spec.get("AllowedPattern")
        values = value.split(",") if spec["Type"] == "CommaDelimitedList" else [value]
        for one in values:
            assert pattern is None or re.match(str(pattern), one), (name, one)
            assert one in spec.get("AllowedValues", [one]), (name, one)  # type: ignore[operator]


def test_a_wrong_answer_is_asked_again_naming_what_is_wrong(tmp_path: Path) -> None:
    answers = "bad name!\nprod-a\n\n\nmars-1\neu-west-1\nmaybe\ny\narn:aws:sns:us-east-1:1:x\n\n"
    code, out, config = _run(tmp_path, answers)
    assert code == 0
    assert "'bad name!' is not an EKS cluster name" in out
    assert "'mars-1' is not an AWS region" in out
    assert "'maybe': answer y or n" in out
    assert "is not an SNS topic ARN" in out
    env = tomllib.loads(config.read_text())["prod-a"]
    assert "DryRun=true" in env["deploy"]["parameters"]["parameter_overrides"]


def test_a_topic_in_another_region_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--alarm-topic-arn: .* is in us-east-1, not the stack's"):
        _run(tmp_path, "", "--clusters", "c1", "--region", "eu-west-1", "--yes",
             "--alarm-topic-arn", "arn:aws:sns:us-east-1:123456789012:alarms")  # fmt: skip


def test_yes_asks_nothing_and_starts_as_a_dry_run(tmp_path: Path) -> None:
    _, out, config = _run(tmp_path, "", "--clusters", "c1", "--region", "us-west-2", "--yes")
    assert "?" not in out.split("wrote", 1)[0]
    overrides = tomllib.loads(config.read_text())["c1"]["deploy"]["parameters"]
    assert "DryRun=true" in overrides["parameter_overrides"]


def test_yes_without_a_cluster_is_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--clusters: name at least one EKS cluster"):
        _run(tmp_path, "", "--region", "us-west-2", "--yes")


def test_an_environment_already_there_is_never_overwritten(tmp_path: Path) -> None:
    before = SAMCONFIG.read_text()
    with pytest.raises(UsageError, match="environment 'production' exists already"):
        _run(tmp_path, "", "--clusters", "c1", "--config-env", "production", "--region",
             "us-west-2", "--yes")  # fmt: skip
    assert (tmp_path / "samconfig.toml").read_text() == before


def test_end_of_input_is_a_usage_error_not_a_loop(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--clusters: no answer"):
        _run(tmp_path, "")


def test_a_new_file_starts_with_samconfigs_version(tmp_path: Path) -> None:
    config = tmp_path / "new.toml"
    args = build_parser().parse_args(
        ["init", "--file", str(config), "--clusters", "c1", "--region", "us-west-2", "--yes"]
    )
    assert init.run(args, given=io.StringIO(), out=io.StringIO()) == 0
    assert tomllib.loads(config.read_text())["version"] == 0.1

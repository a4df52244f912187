"""``sam deploy --guided`` with the SAM CLI sam.mk pins, driven to the change set, offline.

A new user's first command. With the SAM CLI the project used to install (whatever was
newest: 1.170), the guided run asked every parameter and then stopped with ``'list' object
has no attribute 'get'``: SAM CLI 1.161 and later expand the template's ``Fn::ForEach``
(AWS::LanguageExtensions) only with ``--language-extensions``, and without the expansion
SAM's plugins read the loop as a resource (samtranslator ``SamResource.__init__`` calls
``.get("Type")`` on its list). SAM CLI 1.160 expands such loops by itself; samconfig.toml
sets ``language_extensions`` for later versions.

Each test runs the real ``sam deploy --guided`` (tests/support/sam_guided.py, in the SAM
CLI's venv) in a copy of the repository, answers the prompts on standard input as a user
pressing Enter would (naming a cluster), and stubs AWS at the boto level only: the run goes
through the prompts, the template's expansion, the managed bucket, packaging and stops at
``CreateChangeSet``, whose parameters and region are what the test reads. Run on the old pin
(``LIFEBOAT_SAM_VENV=<venv of aws-sam-cli 1.170>``) the run without samconfig.toml fails
with the crash; on sam.mk's pin every one passes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from lifeboat_local.cli import main as lifeboat_main
from tests.support.paths import ROOT, TEMPLATE

DRIVER = ROOT / "tests" / "support" / "sam_guided.py"
SAM_MK = ROOT / "sam.mk"
SAMCONFIG = ROOT / "samconfig.toml"
# The region of the user's AWS configuration in these tests: not us-east-1, so a region
# fixed anywhere in the project would show.
USER_REGION = "eu-west-3"
CRASH = "'list' object has no attribute 'get'"


def _pinned_version() -> str:
    match = re.search(r"^SAM_CLI_VERSION \?= (\S+)$", SAM_MK.read_text(), re.MULTILINE)
    assert match, "sam.mk no longer pins SAM_CLI_VERSION"
    return match.group(1)


def _sam_python() -> Path:
    venv = Path(os.environ.get("LIFEBOAT_SAM_VENV", ROOT / ".sam-venv"))
    python = venv / "bin" / "python"
    if not python.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{venv}: no SAM CLI venv; make sam-venv installs it")
        pytest.skip(f"{venv}: no SAM CLI venv (make sam-venv)")
    return python


def test_the_sam_venv_holds_the_pinned_sam_cli() -> None:
    """The version the other tests run is the one sam.mk installs (its stamp reinstalls
    the venv when the pin changes)."""
    done = subprocess.run(
        [_sam_python(), "-c", "import importlib.metadata as m; print(m.version('aws-sam-cli'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == _pinned_version()


@dataclass(frozen=True)
class DeployRun:
    stdout: str
    stderr: str
    calls: list[dict[str, Any]]
    saved_config: dict[str, Any]

    @property
    def change_set(self) -> dict[str, Any]:
        change_sets = [c for c in self.calls if c["operation"] == "CreateChangeSet"]
        assert change_sets, f"no change set; the run ended with:\n{self.stderr[-3000:]}"
        [change_set] = change_sets
        return change_set


def _sam_deploy(
    tmp_path: Path,
    *,
    with_samconfig: bool,
    guided: bool = True,
    samconfig: str | None = None,
    args: tuple[str, ...] = (),
) -> DeployRun:
    """``samconfig``: the file's text instead of the repository's; ``args``: added to the
    deploy command (``--config-env NAME``)."""
    python = _sam_python()
    work = tmp_path / "repository"
    work.mkdir()
    (work / "template.yaml").write_text(TEMPLATE.read_text())
    if with_samconfig:
        (work / "samconfig.toml").write_text(samconfig or SAMCONFIG.read_text())
    # Packaging zips the code the template names.
    for directory in ("functions", "layers"):
        (work / directory).symlink_to(ROOT / directory)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config").write_text(f"[default]\nregion = {USER_REGION}\n")
    (home / "credentials").write_text(
        "[default]\naws_access_key_id = offline\naws_secret_access_key = offline\n"
    )
    calls = tmp_path / "calls.jsonl"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "AWS_CONFIG_FILE": str(home / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
        "SAM_CLI_TELEMETRY": "0",
        "LIFEBOAT_SAM_CALLS": str(calls),
    }
    # Stack name and region: Enter (the proposed defaults); ClusterNames: prod-a; every
    # other prompt: Enter.
    answers = "\n\nprod-a\n" + "\n" * 200
    done = subprocess.run(
        [python, DRIVER, "deploy", *(["--guided"] if guided else []), *args],
        cwd=work,
        env=env,
        input=answers,
        capture_output=True,
        text=True,
        timeout=540,
    )
    lines = calls.read_text().splitlines() if calls.exists() else []
    saved = work / "samconfig.toml"
    return DeployRun(
        stdout=done.stdout,
        stderr=done.stderr,
        calls=[json.loads(line) for line in lines],
        saved_config=tomllib.loads(saved.read_text()) if saved.exists() else {},
    )


@pytest.mark.parametrize("with_samconfig", [True, False], ids=["samconfig", "no-samconfig"])
def test_guided_deploy_reaches_the_change_set(tmp_path: Path, with_samconfig: bool) -> None:
    run = _sam_deploy(tmp_path, with_samconfig=with_samconfig)
    assert CRASH not in run.stdout + run.stderr, "the template's Fn::ForEach was not expanded"
    change_set = run.change_set
    assert change_set["stack"] == ("lifeboat-dev" if with_samconfig else "sam-app")
    # The region proposed and used is the user's, and every call went there.
    assert f"AWS Region [{USER_REGION}]" in run.stdout
    assert {call["region"] for call in run.calls} == {USER_REGION}
    parameters = change_set["parameters"]
    assert parameters["ClusterNames"] == "prod-a"  # the answer typed at the prompt
    # A dry run unless the user says otherwise, with or without samconfig.toml.
    assert "Parameter DryRun [true]" in run.stdout
    assert parameters["DryRun"] == "true"
    assert "CAPABILITY_IAM" in change_set["capabilities"]
    # What the guided run saved for the next `sam deploy`: the same region and parameters.
    saved = run.saved_config["default"]
    regions = {section["parameters"].get("region") for section in saved.values()} - {None}
    assert regions == {USER_REGION}
    assert 'DryRun="true"' in saved["deploy"]["parameters"]["parameter_overrides"]


def test_plain_deploy_of_the_default_environment_is_a_dry_run_in_the_users_region(
    tmp_path: Path,
) -> None:
    """`sam deploy` with samconfig.toml's default environment, no prompt: the same stack, a
    dry run, in the region of the user's AWS configuration."""
    run = _sam_deploy(tmp_path, with_samconfig=True, guided=False)
    assert CRASH not in run.stdout + run.stderr
    change_set = run.change_set
    assert change_set["stack"] == "lifeboat-dev"
    assert {call["region"] for call in run.calls} == {USER_REGION}
    assert change_set["parameters"]["DryRun"] == "true"
    assert change_set["parameters"]["ClusterNames"] == "dev-cluster"
    assert change_set["capabilities"] == ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]


# --- the same promises, read from the files ----------------------------------------------


def test_samconfig_fixes_no_region() -> None:
    """Every command takes the region from the user's AWS configuration."""
    config = tomllib.loads(SAMCONFIG.read_text())
    fixed = [
        f"{env}.{command}"
        for env, commands in config.items()
        if isinstance(commands, dict)
        for command, section in commands.items()
        if "region" in section.get("parameters", {})
    ]
    assert fixed == []


def test_samconfig_expands_language_extensions_in_every_environment() -> None:
    """SAM CLI 1.161+ expands Fn::ForEach only when asked; samconfig asks for every command."""
    config = tomllib.loads(SAMCONFIG.read_text())
    environments = [env for env, commands in config.items() if isinstance(commands, dict)]
    assert environments == ["default", "production"]
    for env in environments:
        assert config[env]["global"]["parameters"]["language_extensions"] is True, env


def test_dry_run_is_the_templates_default() -> None:
    """A deployment that names no DryRun (a guided run, the console, another config) is a
    dry run; only samconfig's production environment acts, and it says so."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load(TEMPLATE.read_text(), Loader=Loader)  # a SafeLoader
    assert template["Parameters"]["DryRun"]["Default"] == "true"
    production = tomllib.loads(SAMCONFIG.read_text())["production"]["deploy"]["parameters"]
    assert "DryRun=false" in production["parameter_overrides"]


def test_lifeboat_init_writes_an_environment_sam_deploys_without_a_question(
    tmp_path: Path,
) -> None:
    """`lifeboat init`'s answers (clusters, the user's region, dry run, an alarm topic) make an
    environment of samconfig.toml that the pinned `sam deploy --config-env` takes to the change
    set with nothing asked: the parameters answered, every other one the template's default,
    and the repository's environments left as they were."""
    config = tmp_path / "samconfig.toml"
    config.write_text(SAMCONFIG.read_text())
    topic = f"arn:aws:sns:{USER_REGION}:123456789012:lifeboat-alarms"
    argv = ["init", "--clusters", "prod-a", "--region", USER_REGION, "--alarm-topic-arn", topic,
            "--file", str(config), "--yes"]  # fmt: skip
    assert lifeboat_main(argv) == 0
    written = config.read_text()
    assert tomllib.loads(written)["default"] == tomllib.loads(SAMCONFIG.read_text())["default"]
    (tmp_path / "sam").mkdir()
    run = _sam_deploy(
        tmp_path / "sam", with_samconfig=True, guided=False, samconfig=written,
        args=("--config-env", "prod-a"),
    )  # fmt: skip
    assert CRASH not in run.stdout + run.stderr
    change_set = run.change_set
    assert change_set["stack"] == "lifeboat-prod-a"
    assert {call["region"] for call in run.calls} == {USER_REGION}
    assert change_set["parameters"] == {
        "ClusterNames": "prod-a",
        "DryRun": "true",
        "AlarmTopicArn": topic,
    }
    assert change_set["capabilities"] == ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"]

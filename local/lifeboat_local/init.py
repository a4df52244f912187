"""``lifeboat init``: a first deploy's samconfig.toml environment, from the few answers that
matter (the clusters, the stack's name, the AWS profile and region, dry run or not, an alarm
topic). Every other template parameter keeps its documented default (docs/reference/
settings.md), so ``sam deploy --config-env NAME`` asks nothing.

The environment is appended to the file as text (the file's comments and other environments
are left as they were); a name already there is refused, never overwritten. Answers are
checked as CloudFormation will check them (the template's AllowedPattern), and a wrong one is
asked again, or with ``--yes`` (no questions) a usage error naming the flag.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from lifeboat_local.common import EXIT_OK, UsageError, add_command

# template.yaml's AllowedPattern for one item of ClusterNames, and for AlarmTopicArn;
# CloudFormation's rule for a stack name; samconfig's environment names are TOML bare keys.
CLUSTER = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
TOPIC = re.compile(r"^$|^arn:aws[a-zA-Z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$")
STACK = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
ENVIRONMENT = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Answers:
    environment: str
    clusters: tuple[str, ...]
    stack_name: str
    profile: str
    region: str
    dry_run: bool
    alarm_topic_arn: str


class Asker:
    """Asks one question at a time on ``out``, reading the answer from ``given`` (a line each);
    an empty answer takes the default. With ``ask`` False, only the flags and defaults count."""

    def __init__(self, given: TextIO, out: TextIO, *, ask: bool) -> None:
        self.given, self.out, self.ask = given, out, ask

    def __call__(
        self, flag: str, question: str, value: str | None, default: str, check: Callable[[str], str]
    ) -> str:
        """The checked answer: the flag's value, else asked (again while it is wrong)."""
        if value is not None or not self.ask:
            return _checked(flag, value if value is not None else default, check)
        while True:
            self.out.write(f"{question} [{default}]: " if default else f"{question}: ")
            self.out.flush()
            line = self.given.readline()
            if not line:
                raise UsageError(f"{flag}: no answer (end of input)")
            try:
                return check(line.strip() or default)
            except ValueError as error:
                self.out.write(f"  {error}\n")


def _checked(flag: str, value: str, check: Callable[[str], str]) -> str:
    try:
        return check(value)
    except ValueError as error:
        raise UsageError(f"{flag}: {error}") from None


def _pattern(pattern: re.Pattern[str], what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return check


def _clusters(value: str) -> str:
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise ValueError("name at least one EKS cluster (comma-separated for several)")
    for name in names:
        _pattern(CLUSTER, "an EKS cluster name (letters, digits, '-', '_')")(name)
    return ",".join(names)


def _yes_no(value: str) -> str:
    word = value.lower()
    if word not in ("y", "yes", "n", "no"):
        raise ValueError(f"{value!r}: answer y or n")
    return "y" if word.startswith("y") else "n"


def _topic_in(region: str) -> Callable[[str], str]:
    """An SNS topic ARN in the stack's region (CloudWatch alarms notify only topics there)."""

    def check(value: str) -> str:
        _pattern(TOPIC, "an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)")(value)
        if value and value.split(":")[3] != region:
            raise ValueError(f"{value!r} is in {value.split(':')[3]}, not the stack's {region}")
        return value

    return check


def _region_default(profile: str) -> str:
    """The region the user's AWS configuration gives this profile (what the SAM CLI proposes)."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        name = boto3.Session(profile_name=profile).region_name
    except BotoCoreError:  # an unknown profile: the region is asked without a default
        return ""
    return name or ""


def gather(args: argparse.Namespace, asker: Asker) -> Answers:
    """The answers: flags first, then questions for what they leave open."""
    clusters = asker(
        "--clusters", "EKS clusters to manage (comma-separated)", args.clusters, "", _clusters
    ).split(",")
    environment = args.config_env or clusters[0]
    _checked("--config-env", environment, _pattern(ENVIRONMENT, "a samconfig environment name"))
    stack = asker(
        "--stack-name", "Stack name", args.stack_name, f"lifeboat-{environment}",
        _pattern(STACK, "a CloudFormation stack name (a letter, then letters, digits, '-')"),
    )  # fmt: skip
    profile = asker(
        "--profile", "AWS profile", args.profile, os.environ.get("AWS_PROFILE", "default"),
        _pattern(ENVIRONMENT, "an AWS profile name"),
    )  # fmt: skip
    region = asker(
        "--region", "AWS region", args.region, _region_default(profile),
        _pattern(REGION, "an AWS region (e.g. eu-west-1)"),
    )  # fmt: skip
    dry_run = args.dry_run
    if dry_run is None:
        dry_run = asker(
            "--dry-run", "Start as a dry run (decide and log, change nothing)? y/n", None, "y",
            _yes_no,
        ) == "y"  # fmt: skip
    topic = asker(
        "--alarm-topic-arn", "SNS topic ARN for the alarms (empty: none)", args.alarm_topic_arn,
        "", _topic_in(region),
    )  # fmt: skip
    return Answers(environment, tuple(clusters), stack, profile, region, dry_run, topic)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def environment_text(answers: Answers) -> str:
    """The samconfig.toml sections of one environment (build, deploy, and what both share)."""
    env, clusters = answers.environment, ",".join(answers.clusters)
    overrides = [f"ClusterNames={clusters}", f"DryRun={str(answers.dry_run).lower()}"]
    if answers.alarm_topic_arn:
        overrides.append(f"AlarmTopicArn={answers.alarm_topic_arn}")
    listed = ",\n".join(f"  {_quoted(item)}" for item in overrides)
    return f"""
# Written by `lifeboat init`: every parameter not listed keeps the template's default.
[{env}.global.parameters]
stack_name = {_quoted(answers.stack_name)}
language_extensions = true
profile = {_quoted(answers.profile)}
region = {_quoted(answers.region)}

[{env}.build.parameters]
cached = true
parallel = true
parameter_overrides = [{_quoted("ClusterNames=" + clusters)}]

[{env}.deploy.parameters]
resolve_s3 = true
s3_prefix = {_quoted(answers.stack_name)}
capabilities = "CAPABILITY_IAM CAPABILITY_AUTO_EXPAND"
confirm_changeset = true
fail_on_empty_changeset = false
parameter_overrides = [
{listed},
]
"""


def write(path: Path, answers: Answers) -> None:
    """Append the environment; refuse a name the file has, or a file that does not parse."""
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        environments = tomllib.loads(existing)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: not TOML ({error}): fix it or name another --file") from None
    if answers.environment in environments:
        raise UsageError(
            f"{path}: environment {answers.environment!r} exists already: "
            "choose another --config-env, or remove its sections"
        )
    head = "" if existing else "version = 0.1\n"
    if existing and not existing.endswith("\n"):
        head = "\n"
    with path.open("a", encoding="utf-8") as file:
        file.write(head + environment_text(answers))


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "init",
        summary="write a samconfig.toml environment for a first deploy from a few answers",
        description="Asks for the clusters to manage, the stack name, the AWS profile and "
        "region, whether to start as a dry run, and an alarm topic, and appends one "
        "environment to samconfig.toml; every other parameter keeps the template's default. "
        "Then `make sam-build SAM_CONFIG_ENV=NAME` and `sam deploy --config-env NAME`.",
        examples="""
            lifeboat init
            lifeboat init --clusters prod-a --region eu-west-1 --yes
            lifeboat init --clusters prod-a,prod-b --config-env prod --no-dry-run --yes
        """,
    )
    parser.add_argument("--clusters", help="EKS cluster names, comma-separated")
    parser.add_argument("--config-env", help="the environment's name (default: first cluster)")
    parser.add_argument("--stack-name", help="default: lifeboat-ENVIRONMENT")
    parser.add_argument("--profile", help="AWS profile (default: AWS_PROFILE or default)")
    parser.add_argument("--region", help="AWS region (default: the profile's)")
    parser.add_argument("--dry-run", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--alarm-topic-arn", help="SNS topic the alarms notify (default: none)")
    parser.add_argument("--file", type=Path, default=Path("samconfig.toml"))
    parser.add_argument("--yes", action="store_true", help="ask nothing: flags and defaults")


def run(args: argparse.Namespace, given: TextIO | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    answers = gather(args, Asker(given or sys.stdin, out, ask=not args.yes))
    write(args.file, answers)
    env = answers.environment
    mode = "a dry run" if answers.dry_run else "acting (DryRun=false)"
    out.write(
        f"wrote environment {env} to {args.file}: stack {answers.stack_name} in "
        f"{answers.region} (profile {answers.profile}), clusters {','.join(answers.clusters)}, "
        f"{mode}\nnext:\n"
        "  kubectl apply -f deploy/rbac.yaml             # on each cluster\n"
        f"  make sam-build SAM_CONFIG_ENV={env}\n"
        f"  .sam-venv/bin/sam deploy --config-env {env}\n"
    )
    return EXIT_OK

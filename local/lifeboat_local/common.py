"""What every ``lifeboat`` subcommand shares: exit codes, usage errors, the clock flag, event
files, the flags that say which cluster to read and with which settings, and output checks.

Subcommand modules import from here, never from ``cli``: ``cli`` only dispatches to them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lifeboat.karpenter.budgets import format_go_duration
from lifeboat.model.notice import Kind
from lifeboat.model.settings import Settings, SettingsError, load_settings
from lifeboat_local import exits

# The exit statuses, one table for every command (lifeboat_local.exits), re-exported here.
from lifeboat_local.exits import (
    EXIT_FINDINGS as EXIT_FINDINGS,
)
from lifeboat_local.exits import (
    EXIT_INCOMPLETE as EXIT_INCOMPLETE,
)
from lifeboat_local.exits import (
    EXIT_NOT_DONE as EXIT_NOT_DONE,
)
from lifeboat_local.exits import (
    EXIT_OK as EXIT_OK,
)
from lifeboat_local.exits import (
    EXIT_REJECTED as EXIT_REJECTED,
)
from lifeboat_local.exits import (
    EXIT_USAGE as EXIT_USAGE,
)
from lifeboat_local.stackconfig import PREFIX, StackConfigError, stack_environment


class UsageError(Exception):
    """Bad arguments or unreadable input files: exit status 1."""


def note(message: str) -> None:
    """One line for the person at the terminal, on stderr (stdout stays machine-readable)."""
    print(f"lifeboat: {message}", file=sys.stderr)


class _Warnings:
    """How many warnings this process said: ``--strict`` turns any into a non-zero exit."""

    said = 0


def warn(message: str) -> None:
    """A warning on stderr: input that may not mean what it says (a typo, a stale hash)."""
    _Warnings.said += 1
    note(f"warning: {message}")


def warnings_said() -> int:
    return _Warnings.said


def add_strict_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict",
        action="store_true",
        help=f"exit {EXIT_FINDINGS} when any warning was said (a typo in a cluster file or an "
        "event, a NodePool's stale hash), after doing the work: the CI use",
    )


def strict_status(args: argparse.Namespace, status: int, said_before: int) -> int:
    """``status``, or EXIT_FINDINGS when ``--strict`` and a warning was said since."""
    if status == EXIT_OK and getattr(args, "strict", False) and warnings_said() > said_before:
        return EXIT_FINDINGS
    return status


def add_command(
    commands: Any, name: str, *, summary: str, description: str, examples: str
) -> argparse.ArgumentParser:
    """A subcommand's parser, its help ending with examples and the exit statuses it can
    return (from the one table, lifeboat_local.exits)."""
    example_text = textwrap.indent(textwrap.dedent(examples).strip("\n"), "  ")
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=f"examples:\n{example_text}\n\n{exits.epilog(name)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


# ---------------------------------------------------------------------------------------------
# The clock

_TIME_OF_DAY = re.compile(r"[T ]\d")


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant (``2026-12-01T14:05:00Z``) as aware UTC; naive means UTC. A date
    alone is refused: budgets and windows turn on the hour, so midnight must be said."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 instant: {text!r} (e.g. 2026-12-01T14:05:00Z)"
        ) from None
    if not _TIME_OF_DAY.search(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} has no time of day; give one, e.g. {text}T00:00:00Z"
        )
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


_ZONE = re.compile(r"(Z|[+-]\d{2}(:?\d{2})?)$", re.IGNORECASE)


def parse_at(text: str) -> datetime:
    """``--at``: an instant that says its zone (``Z`` or an offset). Budgets and windows turn
    on UTC hours, so a local time read as UTC would judge the wrong hour without a word."""
    moment = parse_instant(text)
    if not _ZONE.search(text.strip()):
        raise argparse.ArgumentTypeError(
            f"{text!r} has no time zone: add Z for UTC ({text}Z) or the offset of the time "
            "you mean (e.g. +01:00)"
        )
    return moment


def add_at_flag(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument(
        "--at", type=parse_at, metavar="ISO8601", help=f"{help_text}; with a zone (Z: UTC)"
    )


# ---------------------------------------------------------------------------------------------
# Zones

# An Availability Zone is its region and one letter (AWS uses a to f today); a Local Zone its
# region, a location and a number and letter (us-west-2-lax-1a); a Wavelength Zone its region,
# "-wl1-", a location and "-wlz-" and a number (us-east-1-wl1-bos-wlz-1).
_ZONE_SUFFIX = re.compile(r"^([a-f]|-[a-z]{3}-\d[a-z]|-wl\d-[a-z]{3}-wlz-\d)$")


def zone_name(text: str) -> str:
    """An EC2 zone name, checked against the regions botocore knows (offline: its endpoint
    data) and the forms zone names take; ``us-east-1z`` or ``us-esat-1a`` are usage errors."""
    import boto3  # only for a command with a zone flag

    regions = sorted(boto3.session.Session().get_available_regions("ec2"), key=len)
    region = next((r for r in reversed(regions) if text.startswith(r)), None)
    if region is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not in any region EC2 has (a zone is its region and a letter, e.g. "
            "us-east-1a)"
        )
    if not _ZONE_SUFFIX.match(text[len(region) :]):
        raise argparse.ArgumentTypeError(
            f"{text!r} is no zone of {region}: its zones are {region}a to {region}f (or a Local "
            f"Zone such as {region}-xyz-1a); `aws ec2 describe-availability-zones --region "
            f"{region}` lists them"
        )
    return text


# ---------------------------------------------------------------------------------------------
# Which cluster


def add_cluster_flags(
    parser: argparse.ArgumentParser,
    *,
    cluster_help: str = "a cluster file (kubectl get ... -o yaml), served by the local "
    "Kubernetes emulator; kinds Lifeboat does not read are skipped and counted",
    kubeconfig_help: str = "a live cluster (read only)",
) -> None:
    """``--cluster FILE`` or ``--kubeconfig PATH`` (one is required), and ``--context``."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--cluster", type=Path, metavar="CLUSTER.yaml", help=cluster_help)
    source.add_argument("--kubeconfig", type=Path, metavar="PATH", help=kubeconfig_help)
    parser.add_argument("--context", help="with --kubeconfig: the context (default: current)")


# ---------------------------------------------------------------------------------------------
# Which settings: the Lambda's


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "settings",
        "The deployed function's settings: LIFEBOAT_* environment variables, as the Lambda "
        "reads them, over those of a samconfig.toml environment (--config-env). Printed on "
        "stderr when any apply; otherwise the built-in defaults.",
    )
    group.add_argument(
        "--config-env",
        metavar="NAME",
        help="the settings `sam deploy --config-env NAME` deploys: samconfig.toml's "
        "parameter_overrides, mapped to LIFEBOAT_* variables as template.yaml maps them",
    )
    group.add_argument(
        "--config-file",
        type=Path,
        metavar="PATH",
        help="with --config-env: the SAM configuration (default: samconfig.toml)",
    )
    group.add_argument(
        "--template-file",
        type=Path,
        metavar="PATH",
        help="with --config-env: the template (default: template.yaml beside the config file)",
    )
    group.add_argument(
        "--eks-cluster",
        metavar="NAME",
        help="the EKS cluster the instances belong to (EC2 tags say it in AWS; a cluster "
        "file cannot); default: the first of LIFEBOAT_CLUSTERS",
    )


@dataclass(frozen=True)
class ToolSettings:
    """The settings a tool judges with, and where they came from."""

    settings: Settings
    origin: str | None = None  # None: the built-in defaults
    eks_cluster: str | None = None

    @property
    def one_cluster(self) -> Settings:
        """The settings a local pipeline runs with: it reaches one cluster (the file, or the
        kubeconfig's), so it manages only ``eks_cluster``; a request naming another cluster
        is refused as the deployed stack refuses one it does not manage, never carried out
        on this one."""
        managed = self.settings.clusters
        if self.eks_cluster is None or (managed and self.eks_cluster not in managed):
            return self.settings  # a cluster the stack does not manage: its own refusals
        return replace(self.settings, clusters=(self.eks_cluster,))

    @property
    def assumed_tags(self) -> dict[str, str]:
        """EC2 tags the instances are taken to carry: a cluster file has none, and without
        the managed tag every instance would be ignored."""
        tag = self.settings.managed_tag
        return {tag: ""} if tag else {}

    def announce(self) -> None:
        """Say on stderr which settings apply, unless they are all the built-in defaults."""
        if self.origin is None and self.eks_cluster is None:
            return
        note(f"settings from {self.origin or 'built-in defaults'}: {self.summary()}")

    def summary(self) -> str:
        s = self.settings
        actions = ", ".join(f"{kind}={s.action_for(kind)}" for kind in VOLUNTARY_KINDS)
        parts = [
            f"clusters {','.join(s.clusters) or 'any'}",
            f"dry run {'on' if s.dry_run else 'off'}",
            f"taint effect {s.taint_effect}",
            actions,
            f"scheduled-change lead {format_go_duration(s.scheduled_change_lead)}",
        ]
        if not s.exclude_from_load_balancers:
            parts.append("nodes not excluded from load balancers")
        if s.unknown_instance_grace:
            parts.append(f"unknown-instance grace {format_go_duration(s.unknown_instance_grace)}")
        if s.account_id or s.region:
            parts.append(f"account {s.account_id or 'any'}, region {s.region or 'any'}")
        if self.eks_cluster:
            parts.append(f"instances taken to be in cluster {self.eks_cluster}")
        if s.managed_tag:
            parts.append(f"instances taken to carry the managed tag {s.managed_tag}")
        if s.hand_over != "at-once":
            parts.append(f"voluntary hand-over {s.hand_over}")
        return "; ".join(parts)


VOLUNTARY_KINDS = tuple(k for k in Kind if k.voluntary)


def tool_settings(args: argparse.Namespace, *, dry_run: bool | None = None) -> ToolSettings:
    """The settings the Lambda would run with, from ``LIFEBOAT_*`` variables over the
    ``--config-env`` ones; ``dry_run`` overrides the setting when the tool decides it."""
    config_env = getattr(args, "config_env", None)
    config_file = getattr(args, "config_file", None)
    template_file = getattr(args, "template_file", None)
    variables: dict[str, str] = {}
    origins = []
    if config_env:
        try:
            stack = stack_environment(
                config_file or Path("samconfig.toml"), config_env, template_file
            )
        except StackConfigError as error:
            raise UsageError(f"--config-env {config_env}: {error}") from None
        variables.update(stack.variables)
        origins.append(stack.source)
    elif config_file or template_file:
        raise UsageError("--config-file and --template-file go with --config-env")
    environment = {k: v for k, v in os.environ.items() if k.startswith(PREFIX)}
    if environment:
        variables.update(environment)
        origins.append(f"{', '.join(sorted(environment))} in the environment")
    try:
        settings = load_settings(variables)
    except SettingsError as error:
        raise UsageError(f"settings from {'; '.join(origins)}: {error}") from None
    if dry_run is not None:
        settings = replace(settings, dry_run=dry_run)
    cluster = getattr(args, "eks_cluster", None) or (
        settings.clusters[0] if settings.clusters else None
    )
    return ToolSettings(settings, "; ".join(origins) or None, cluster)


# ---------------------------------------------------------------------------------------------
# Event files


@dataclass(frozen=True)
class EventFile:
    """The message bodies of one event file, in order. ``batch``: they are the records of an
    SQS batch event, and a record is named by its index."""

    path: Path
    bodies: list[str]
    batch: bool = False

    def where(self, index: int) -> str:
        """Where body ``index`` came from, for a person: ``file`` or ``file Records[i]``."""
        return f"{self.path} Records[{index}]" if self.batch else str(self.path)

    def origin(self, index: int) -> dict[str, Any]:
        """The same for ``--json``: fields added to the contract's."""
        return {"file": str(self.path), "record": index if self.batch else None}


def read_event_file(path: Path) -> EventFile:
    """The message bodies a file holds: an SQS batch's record bodies, or the file's text.

    Bodies stay text, as SQS delivers them: whatever they hold (not JSON, a JSON array, a
    record without a body) the parser rejects with a reason that names what is wrong.
    """
    text = read_text(path, str(path))
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return EventFile(path, [text])
    if isinstance(document, dict) and isinstance(document.get("Records"), list):
        return EventFile(path, [_record_body(r) for r in document["Records"]], batch=True)
    return EventFile(path, [text])


def read_text(path: Path, where: str) -> str:
    """The file's text; a usage error naming ``where`` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise UsageError(f"{where}: {why or error}") from None


def _record_body(record: Any) -> str:
    body = record.get("body") if isinstance(record, dict) else None
    # A record SQS could not have sent: its JSON text goes to the parser, which rejects it.
    return body if isinstance(body, str) else json.dumps(record)


# ---------------------------------------------------------------------------------------------
# Outputs


def check_output_file(flag: str, path: Path) -> None:
    """Before any work: a usage error unless a file can be written at ``path``."""
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a folder; give a file name")
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"{flag} {path}: {folder} {why}")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{flag} {path}: not writable")


def write_output(flag: str, path: Path, write: Callable[[Path], object]) -> None:
    """``write(path)``, a failure reported in one line (a full disk, a folder removed since)."""
    try:
        write(path)
    except OSError as error:
        raise UsageError(f"{flag} {path}: {error.strerror or error}") from None

"""What every ``lifeboat`` subcommand shares: exit codes, usage errors, the clock flag, event
files and the flags that say which cluster to read.

Subcommand modules import from here, never from ``cli``: ``cli`` only dispatches to them.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_USAGE, EXIT_REJECTED = 0, 1, 2
# lifeboat audit: errors found (or warnings, with --strict). Not 2: that is replay's "a record
# was rejected", and a CI gate should tell "the cluster has problems" from both.
EXIT_FINDINGS = 3


class UsageError(Exception):
    """Bad arguments or unreadable input files: exit status 1."""


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant (``2026-12-01T14:05:00Z``) as aware UTC; naive means UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 instant: {text!r} (e.g. 2026-12-01T14:05:00Z)"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def add_at_flag(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--at", type=parse_instant, metavar="ISO8601", help=help_text)


def add_cluster_flags(
    parser: argparse.ArgumentParser,
    *,
    cluster_help: str = "a cluster file, served by the local Kubernetes emulator",
    kubeconfig_help: str = "a live cluster (read only)",
) -> None:
    """``--cluster FILE`` or ``--kubeconfig PATH`` (one is required), and ``--context``."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--cluster", type=Path, metavar="CLUSTER.yaml", help=cluster_help)
    source.add_argument("--kubeconfig", type=Path, metavar="PATH", help=kubeconfig_help)
    parser.add_argument("--context", help="with --kubeconfig: the context (default: current)")


def read_event_file(path: Path) -> list[str]:
    """The message bodies a file holds: an SQS batch's record bodies, or the file's text.

    Bodies stay text, as SQS delivers them: whatever they hold (not JSON, a JSON array, a
    record without a body) the parser rejects with a reason that names what is wrong.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return [text]
    if isinstance(document, dict) and isinstance(document.get("Records"), list):
        return [_record_body(record) for record in document["Records"]]
    return [text]


def _record_body(record: Any) -> str:
    body = record.get("body") if isinstance(record, dict) else None
    # A record SQS could not have sent: its JSON text goes to the parser, which rejects it.
    return body if isinstance(body, str) else json.dumps(record)

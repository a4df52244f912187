"""``lifeboat``: the operator's command line (contract.md, section 2).

``lifeboat replay`` runs the very parse/resolve/decide/act code of the Lambda against the
local Kubernetes emulator, loaded from a cluster file, with a simulated clock.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

EXIT_OK, EXIT_USAGE, EXIT_REJECTED = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or unreadable input files: exit status 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's default status is 2, which the contract reserves for rejected records.
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lifeboat", description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    replay = commands.add_parser(
        "replay", help="replay events against a cluster file on the local emulator"
    )
    replay.add_argument("events", nargs="+", type=Path, metavar="EVENT_FILE")
    where = replay.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--cluster",
        type=Path,
        metavar="CLUSTER.yaml",
        help="a cluster file, served by the local Kubernetes emulator",
    )
    where.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="PATH",
        help="a live cluster: a dry run (nothing changed) unless --apply. No EC2 access is "
        "assumed, so the instances are found by listing the cluster's Nodes and NodeClaims "
        "once (fine for an operator tool; the Lambda never lists the cluster)",
    )
    replay.add_argument("--context", help="with --kubeconfig: the context (default: current)")
    replay.add_argument(
        "--apply",
        action="store_true",
        help="with --kubeconfig: really taint, cordon, create and delete NodeClaims, evict. "
        "Auto Scaling lifecycle actions are only reported (no AWS access)",
    )
    replay.add_argument(
        "--at",
        type=parse_instant,
        metavar="ISO8601",
        help="the clock for windows, budgets and deadlines (default: now)",
    )
    replay.add_argument("--json", action="store_true", help="one JSON object per line")
    replay.add_argument(
        "--state-out", type=Path, metavar="FILE", help="write the cluster after the replay, as YAML"
    )
    replay.add_argument(
        "--follow",
        action="store_true",
        help="advance the clock through all deferred work until none is left",
    )
    _add_operator_commands(commands)
    return parser


def _add_operator_commands(commands: Any) -> None:
    """The operator tools, each in its own module (imported here, not at start-up of replay)."""
    from lifeboat_local import explain, windows

    windows.add_parser(commands)
    explain.add_parser(commands)


def _check_replay_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Combinations argparse cannot express; a usage error (exit 1) like argparse's own."""
    if args.kubeconfig is None:
        for flag, value in (("--apply", args.apply), ("--context", args.context)):
            if value:
                parser.error(f"replay: {flag} is only for --kubeconfig")
        return
    if args.state_out is not None:
        parser.error("replay: --state-out is only for --cluster (a live cluster is not dumped)")
    if args.apply and args.at is not None:
        parser.error(
            "replay: --apply acts on a live cluster now; --at would judge budgets and windows "
            "at another time (use --at without --apply for a what-if)"
        )
    if args.apply and args.follow:
        parser.error(
            "replay: --follow moves a simulated clock ahead, which would act on a live "
            "cluster before windows open; not allowed with --apply"
        )


def parse_instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 instant: {text!r} (e.g. 2026-12-01T14:05:00Z)"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "replay":
        _check_replay_args(parser, args)
    try:
        if args.command == "replay":
            from lifeboat_local.replay import replay

            return replay(args)
        if args.command == "windows":
            from lifeboat_local.windows import run as windows

            return windows(args)
        if args.command == "explain":
            from lifeboat_local.explain import run as explain

            return explain(args)
    except UsageError as error:
        print(f"lifeboat: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_USAGE


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

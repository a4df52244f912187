"""``lifeboat``: the operator's command line.

A dispatch table and nothing else: each subcommand is a module with ``add_parser(commands)``,
``run(args) -> int`` and, optionally, ``check_args(args)`` for flags that do not go together
and outputs that cannot be written (raising ``UsageError`` before any work); what they share
lives in ``lifeboat_local.common``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import NoReturn

from lifeboat.kube.client import KubeError
from lifeboat_local import exits, explain, fleet, init, replay, rotate, serve, status, windows
from lifeboat_local.audit import command as audit
from lifeboat_local.common import UsageError
from lifeboat_local.convert import command as convert
from lifeboat_local.exits import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE
from lifeboat_local.patching import command as patching

# name -> module; the order is the order of ``lifeboat --help``.
COMMANDS: dict[str, ModuleType] = {
    "replay": replay,
    "explain": explain,
    "windows": windows,
    "audit": audit,
    "serve": serve,
    "rotate": rotate,
    "status": status,
    "convert": convert,
    "patching": patching,
    "fleet": fleet,
    "init": init,
}

# What a shell reports for a command ended by SIGPIPE (its reader went away) or by Ctrl-C.
EPILOG = f"""\
{exits.epilog()}

Run `lifeboat COMMAND --help` for examples and the statuses that command returns."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's default status is 2, which the contract reserves for rejected records.
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _version() -> str:
    try:
        return version("eks-lifeboat")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lifeboat",
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"lifeboat {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in COMMANDS.values():
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module = COMMANDS[args.command]
    check_args: Callable[[argparse.Namespace], None] | None = getattr(module, "check_args", None)
    if check_args is not None:
        try:
            check_args(args)
        except UsageError as error:  # flags that do not go together: argparse's usage error
            parser.error(str(error))
    run: Callable[[argparse.Namespace], int] = module.run
    try:
        return run(args)
    except UsageError as error:
        print(f"lifeboat: error: {error}", file=sys.stderr)
    except BrokenPipeError:
        # The reader went away (`lifeboat replay ... | head`): stop quietly, as `cat` would.
        _detach_stdout()
        return EXIT_BROKEN_PIPE
    except KubeError as error:  # a live cluster refused or did not answer
        print(f"lifeboat: error: Kubernetes API: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:  # a bug: one line, not a traceback, and a way to report it
        print(
            f"lifeboat: internal error: {type(error).__name__}: {error} (please report it, "
            "with the command line that caused it)",
            file=sys.stderr,
        )
    return EXIT_USAGE


def _detach_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (a test's capture)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``lifeboat``: the operator's command line.

A dispatch table and nothing else: each subcommand is a module with ``add_parser(commands)``,
``run(args) -> int`` and, optionally, ``check_args(args)`` for flags that do not go together
(raising ``UsageError``); what they share lives in ``lifeboat_local.common``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

from lifeboat_local import explain, replay, rotate, status, windows
from lifeboat_local.audit import command as audit
from lifeboat_local.common import EXIT_USAGE, UsageError

# name -> module; the order is the order of ``lifeboat --help``.
COMMANDS: dict[str, ModuleType] = {
    "replay": replay,
    "explain": explain,
    "windows": windows,
    "audit": audit,
    "rotate": rotate,
    "status": status,
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's default status is 2, which the contract reserves for rejected records.
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lifeboat", description=__doc__.splitlines()[0] if __doc__ else None)
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
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""One table of exit statuses for every ``lifeboat`` command: the same number means the same
thing whichever command returns it, so a script or a CI gate reads them one way.

Fixed by the public contract: ``replay`` exits 0 (nothing rejected), 2 (some record rejected)
and 1 (usage); ``convert`` 0, 1, 2 (a setting that cannot be converted: input refused, the
rest converted); ``patching`` 3 when an AMI is behind (a check failed). The rest follows from
those meanings. Each command's ``--help`` ends with the rows it can return (``epilog``); the
docs' reference page holds the whole table (``markdown_table``), and a test keeps both equal
to this module.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class ExitStatus:
    code: int
    name: str
    meaning: str


OK = ExitStatus(0, "ok", "done; nothing to report")
USAGE = ExitStatus(
    1,
    "usage",
    "usage error or unreadable input: bad flags, a file that cannot be read or is not what it "
    "should be, a cluster that cannot be reached; nothing was done",
)
REJECTED = ExitStatus(
    2,
    "rejected",
    "some input was refused (a message rejected, a setting that cannot be converted, a "
    "NodePool budget that is not valid); the rest was still handled",
)
FINDINGS = ExitStatus(
    3,
    "findings",
    "a check failed: audit findings, an AMI behind its recommended one, or, with --strict, "
    "any warning (a typo, a kind missing from the cluster file)",
)
INCOMPLETE = ExitStatus(
    4,
    "incomplete",
    "the answer is incomplete: a limit of the local simulation cut the replay short (a "
    "warning names the loop)",
)
NOT_DONE = ExitStatus(
    5, "not-done", "not done yet: a rotation shown is still under way (look again later)"
)
INTERRUPTED = ExitStatus(130, "interrupted", "interrupted (Ctrl-C)")
BROKEN_PIPE = ExitStatus(141, "broken-pipe", "the reader of the output went away (SIGPIPE)")

TABLE = (OK, USAGE, REJECTED, FINDINGS, INCOMPLETE, NOT_DONE, INTERRUPTED, BROKEN_PIPE)

EXIT_OK, EXIT_USAGE, EXIT_REJECTED = OK.code, USAGE.code, REJECTED.code
EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_NOT_DONE = FINDINGS.code, INCOMPLETE.code, NOT_DONE.code
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = INTERRUPTED.code, BROKEN_PIPE.code

# Which rows each command can return (besides 130 and 141, which any can).
BY_COMMAND: dict[str, tuple[ExitStatus, ...]] = {
    "replay": (OK, USAGE, REJECTED, FINDINGS, INCOMPLETE),
    "explain": (OK, USAGE, REJECTED, FINDINGS),
    "windows": (OK, USAGE, REJECTED, FINDINGS),
    "audit": (OK, USAGE, FINDINGS),
    "serve": (OK, USAGE),
    "rotate": (OK, USAGE),
    "status": (OK, USAGE, NOT_DONE),
    "convert": (OK, USAGE, REJECTED, FINDINGS),
    "patching": (OK, USAGE, FINDINGS),
    "fleet": (OK, USAGE),
    "init": (OK, USAGE),
}


def epilog(command: str | None = None) -> str:
    """The exit statuses ``command`` can return (None: all of them), for ``--help``."""
    rows = BY_COMMAND[command] if command else TABLE
    lines = ["exit status (the same numbers for every lifeboat command):"]
    for row in rows:
        text = textwrap.fill(row.meaning, width=88, subsequent_indent=" " * 6)
        lines.append(f"  {row.code:<3} {text}")
    if command:
        lines.append(f"  {INTERRUPTED.code}/{BROKEN_PIPE.code} interrupted / output closed")
    return "\n".join(lines)


def markdown_table() -> str:
    """The whole table as the docs' reference page shows it."""
    commands = list(BY_COMMAND)
    lines = [
        "| exit | meaning | returned by |",
        "|---|---|---|",
    ]
    for row in TABLE:
        users = [c for c in commands if row in BY_COMMAND[c]] or commands  # 130, 141: any
        by = "every command" if users == commands else ", ".join(f"`{c}`" for c in users)
        lines.append(f"| {row.code} | {row.meaning} | {by} |")
    return "\n".join(lines)

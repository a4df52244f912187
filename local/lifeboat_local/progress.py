"""Progress of a long replay on stderr (``lifeboat replay --follow``): the simulated time,
the steps taken and, for each rotation, its nodes done, at most once a second of wall time.

On a terminal the line is rewritten in place (and cleared at the end); otherwise
(``--progress`` into a file or a pipe) each report is a line of its own. Nothing is
written to stdout, so ``--json`` output stays one object per record.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import TextIO

from kubemu import Emulator
from lifeboat.model.instants import format_instant
from lifeboat.rotation import store
from lifeboat.rotation.model import StateError

# Seconds of wall time between two reports.
EVERY = 1.0


def add_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action="store_true",
        help="report progress on stderr (simulated time, steps, each rotation's nodes done) "
        "about once a second; on by default when stderr is a terminal. Stdout is unchanged",
    )


def wanted(flag: bool, stream: TextIO) -> bool:
    """``--progress``, or stderr is a terminal."""
    return flag or stream.isatty()


class Progress:
    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self._wall = wall
        self._last = wall()
        self._width = 0

    def report(
        self, now: datetime, steps: int, emulator: Emulator | None, *, last: bool = False
    ) -> None:
        """Say where the replay is, unless it said so less than ``EVERY`` second ago."""
        moment = self._wall()
        if not last and moment - self._last < EVERY:
            return
        self._last = moment
        text = f"replay: simulated {format_instant(now)}, {steps} step(s)"
        rotations = rotations_done(emulator)
        if rotations:
            text += "; " + "; ".join(rotations)
        if self.live:
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.live and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


def rotations_done(emulator: Emulator | None) -> list[str]:
    """``rotation legacy running: 12 of 200 node(s) done`` for each rotation stored."""
    if emulator is None:
        return []
    found = []
    for configmap in emulator.view("ConfigMap"):
        if store.NAME_LABEL not in (configmap["metadata"].get("labels") or {}):
            continue
        try:
            rotation = store.read(configmap).rotation
        except StateError:
            continue
        done = sum(1 for node in rotation.nodes if str(node.phase) == "done")
        found.append(
            f"rotation {rotation.spec.name} {rotation.phase}: {done} of {len(rotation.nodes)} "
            "node(s) done"
        )
    return found

"""What ``lifeboat replay`` prints for a person: one row per decision (and, with ``--follow``,
per step of the simulated Karpenter), in aligned columns.

Without ``--follow`` every row is one line (``make demo``: one line per decision). With it,
every row starts with its instant, and a row too long for the width (160 columns unless
``--wide``) keeps its columns on the first line, its actions and its reason each wrapped on
lines of their own beneath.
Rows are collected and printed at the end, so columns fit their widest cell.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lifeboat.model.instants import format_instant
from lifeboat.model.report import Outcome, Report
from lifeboat_local.karpenter_sim import SimStep

WIDTH = 160
SIMULATED = "(simulated)"  # the KIND of a simulated controller's step
HEADERS = ("TIME (UTC)", "WHAT", "KIND", "INSTANCE", "NODE", "POOL")
INDENT = 4  # of the lines wrapped under a row
WOULD_ACT = "would act"  # an acted row of a dry run: nothing was done


@dataclass(frozen=True)
class Row:
    at: datetime
    what: str  # the outcome, or what a simulated controller did
    kind: str
    instance: str
    node: str
    pool: str
    doing: str  # the actions taken, "until ..." for a deferral
    reason: str

    def cells(self, timed: bool) -> list[str]:
        cells = [self.what, self.kind, self.instance, self.node, self.pool]
        return [format_instant(self.at), *cells] if timed else cells


def deferral_text(report: Report) -> str:
    """Both instants of a deferral: the latest it acts (``until``) and its next look, when
    it may act sooner; "" when the report is no deferral."""
    latest, look = report.deferred_until, report.next_look
    parts = [f"until {format_instant(latest)}"] if latest else []
    if look is not None and look != latest:
        parts.append(f"looks again {format_instant(look)}")
    return ", ".join(parts)


class Timeline:
    """Rows in the order they happened; ``lines()`` lays them out."""

    def __init__(self, *, timed: bool, width: int | None = WIDTH) -> None:
        self.timed = timed
        self.width = width
        self.rows: list[Row] = []
        # Follow-up reports (a replacement finished, a drain continued) carry no node: the
        # instance's first report named it.
        self._where: dict[str, tuple[str, str]] = {}

    def report(
        self, report: Report, at: datetime, origin: str | None = None, *, dry_run: bool = False
    ) -> None:
        """A decision; ``origin`` names the file (and record) of a rejected message. In a
        dry run nothing was done: ``acted`` reads ``would act``."""
        instance = report.instance_id or "-"
        node, pool = report.node, report.nodepool
        if node:
            self._where.setdefault(instance, (node, pool or "-"))
        elif instance in self._where:
            node, pool = self._where[instance]
        doing = ", ".join(action_text(a) for a in report.actions)
        until = deferral_text(report)
        if until:
            doing = f"{until}; {doing}" if doing else until
        reason = report.reason
        if report.outcome is Outcome.REJECTED and origin:
            reason = f"{origin}: {reason}"
        what = str(report.outcome)
        if dry_run and report.outcome is Outcome.ACTED:
            what = WOULD_ACT
        row = Row(at, what, report.kind, instance, node or "-", pool or "-", doing, reason)
        self.rows.append(row)

    def step(self, step: SimStep) -> None:
        """Something the simulated Karpenter (or Auto Scaling) did."""
        what = f"NodeClaim {step.claim}: {step.detail}" if step.claim else step.detail
        self.rows.append(
            Row(
                step.at,
                step.action,
                SIMULATED,
                "-",
                step.node or "-",
                step.nodepool or "-",
                what,
                "",
            )
        )

    def lines(self) -> Iterator[str]:
        if not self.rows:
            return
        columns = len(self.rows[0].cells(self.timed))
        widths = [0] * columns
        header = list(HEADERS if self.timed else HEADERS[1:])
        for cells in [header, *(row.cells(self.timed) for row in self.rows)]:
            widths = [max(w, len(c)) for w, c in zip(widths, cells, strict=True)]
        if self.timed:
            yield _join(header, widths).rstrip()
        for row in self.rows:
            yield from self._layout(row, widths)

    def _layout(self, row: Row, widths: list[int]) -> Iterator[str]:
        columns = _join(row.cells(self.timed), widths)
        tail = "  ".join(filter(None, [row.doing, f"-- {row.reason}" if row.reason else ""]))
        line = f"{columns}  {tail}".rstrip()
        if not self.timed or self.width is None or len(line) <= self.width:
            yield line
            return
        yield columns.rstrip()
        yield from _wrap(row.doing, self.width, INDENT)
        if row.reason:
            yield from _wrap(f"-- {row.reason}", self.width, INDENT, hang=3)


def _join(cells: list[str], widths: list[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))


def _wrap(text: str, width: int, indent: int, hang: int = 0) -> list[str]:
    if not text:
        return []
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + hang),
        break_long_words=False,
        break_on_hyphens=False,
    )


def action_text(action: Mapping[str, Any]) -> str:
    """``taint lifeboat.dev/spot-interruption:NoSchedule``, ``label node.kubernetes.io/
    exclude-from-external-load-balancers=true``, ``evict shop/web-0``, ..."""
    kind = str(action.get("type"))
    if kind == "taint":
        return f"taint {action.get('key')}:{action.get('effect')}"
    if kind == "label":
        return f"label {action.get('key')}={action.get('value')}"
    values = [str(v) for k, v in action.items() if k != "type" and v not in (None, "")]
    return " ".join([kind, *values])

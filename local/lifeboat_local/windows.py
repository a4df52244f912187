"""``lifeboat windows``: per NodePool, how many voluntary disruptions its budgets allow now,
and when its budget windows open and close over the next days (UTC).

Counting is the Lambda's own: ``Resolver.pool_counts`` for the pool's nodes and the nodes
already disrupting, ``budgets.allowed_disruptions`` for now and ``budgets.window_timeline``
for the days ahead, for the disruption reason Lifeboat's replacements count under (Drifted).
Budgets Karpenter would refuse make the exit status 2, input refused (``--check`` prints only
that), so the command can gate a change to NodePools in CI.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from lifeboat.flow.resolve import Resolver
from lifeboat.karpenter.budgets import (
    Budget,
    BudgetError,
    Segment,
    allowed_disruptions,
    format_go_duration,
    parse_budgets,
    window_timeline,
)
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi
from lifeboat.marks import node_marks
from lifeboat.model.instants import format_instant
from lifeboat.model.settings import Settings
from lifeboat_local.common import (
    EXIT_OK,
    EXIT_REJECTED,
    VOLUNTARY_KINDS,
    UsageError,
    add_at_flag,
    add_cluster_flags,
    add_command,
    add_settings_flags,
    add_strict_flag,
    check_output_file,
    strict_status,
    tool_settings,
    warnings_said,
    write_output,
)
from lifeboat_local.localtime import local_text, schedule_shift_warning, zone
from lifeboat_local.partial import kinds_of
from lifeboat_local.source import open_cluster
from lifeboat_local.window_model import DAY as DAY  # what windows shows, in a module of its own
from lifeboat_local.window_model import HOUR as HOUR
from lifeboat_local.window_model import PoolWindows as PoolWindows
from lifeboat_local.window_model import Windows as Windows
from lifeboat_local.window_model import allowed_text as allowed_text
from lifeboat_local.window_model import limit_text as limit_text

# One character per hour in the day strips.
FROZEN_MARK = "█"
UNLIMITED_MARK = "∞"
MANY_MARK = "+"  # a limit of 10 or more
OUTSIDE_MARK = "·"  # an hour outside the horizon [at, at + days)

EXIT_INVALID_BUDGETS = EXIT_REJECTED
PLOT_SUFFIXES = (".svg", ".png")


# ---------------------------------------------------------------------------------------------
# Gathering


def gather(kube: KubeApi, at: datetime, days: int, settings: Settings | None = None) -> Windows:
    """Read the NodePools and their counts, and compute allowances and timelines."""
    at = at.astimezone(UTC)
    end = at + days * DAY
    chart_start = at.replace(hour=0, minute=0, second=0, microsecond=0)
    chart_end = end.replace(hour=0, minute=0, second=0, microsecond=0)
    if chart_end < end:
        chart_end += DAY
    resolver = Resolver(kube)
    pools = []
    for nodepool in sorted(kube.list_nodepools(), key=nodes.name_of):
        state = resolver.pool_counts(nodepool)
        allowance = allowed_disruptions(nodepool, state.node_count, state.disrupting, at)
        try:
            budgets = tuple(parse_budgets(nodepool))
            segments = tuple(window_timeline(nodepool, state.node_count, at, end))
            error = None
        except BudgetError as problem:
            budgets, segments, error = (), (), str(problem)
        pools.append(
            PoolWindows(
                nodes.name_of(nodepool),
                state.node_count,
                state.disrupting,
                allowance,
                budgets,
                segments,
                error,
                node_marks.opted_out(nodepool),
            )
        )
    return Windows(at, end, chart_start, chart_end, tuple(pools), settings=settings or Settings())


def clipped(segments: Sequence[Segment], start: datetime, end: datetime) -> list[Segment]:
    """The segments cut to ``[start, end)``."""
    return [
        Segment(max(s.start, start), min(s.end, end), s.limit, s.active_budget_indexes)
        for s in segments
        if s.end > start and s.start < end
    ]


def limit_over(segments: Sequence[Segment], start: datetime, end: datetime) -> int | None:
    """The tightest limit over ``[start, end)`` (None: no limit throughout)."""
    limits = [s.limit for s in clipped(segments, start, end) if s.limit is not None]
    return min(limits) if limits else None


def _short(moment: datetime) -> str:
    return moment.strftime("%a %Y-%m-%d %H:%M")


def budget_text(budget: Budget) -> str:
    when = "always"
    if budget.schedule is not None and budget.duration is not None:
        when = f'"{budget.schedule}" for {format_go_duration(budget.duration)}'
    reasons = "" if budget.reasons is None else f", reasons {list(budget.reasons)}"
    return f'budget[{budget.index}] nodes "{budget.nodes}", {when}{reasons}'


def work_text(settings: Settings) -> str:
    """What Lifeboat does inside these windows, by the settings."""
    actions = ", ".join(f"{kind}: {settings.action_for(kind)}" for kind in VOLUNTARY_KINDS)
    lead = format_go_duration(settings.scheduled_change_lead)
    return (
        f"Lifeboat's voluntary work waits for these windows ({actions}); scheduled "
        f"maintenance goes ahead regardless {lead} before its start."
    )


def opted_out_text() -> str:
    return (
        f"opted out ({node_marks.OPT_OUT_ANNOTATION}=true): Lifeboat leaves this pool alone; its "
        "budgets bind only Karpenter"
    )


# ---------------------------------------------------------------------------------------------
# Terminal


def hour_mark(limit: int | None) -> str:
    if limit is None:
        return UNLIMITED_MARK
    if limit == 0:
        return FROZEN_MARK
    return str(limit) if limit < 10 else MANY_MARK


def day_strips(pool: PoolWindows, windows: Windows) -> list[str]:
    """One line per UTC day of the chart: one character per hour; hours outside the
    horizon (before ``at``, after ``at + days``) are dots."""
    lines = []
    day = windows.chart_start
    while day < windows.chart_end:
        marks = []
        for hour in range(24):
            start = day + hour * HOUR
            if start + HOUR <= windows.at or start >= windows.end:
                marks.append(OUTSIDE_MARK)
            elif pool.blocked:
                marks.append(FROZEN_MARK)
            else:
                marks.append(hour_mark(limit_over(pool.segments, start, start + HOUR)))
        lines.append(f"    {day.strftime('%a %m-%d')}  {''.join(marks)}")
        if day <= windows.at < day + DAY:
            lines.append(" " * (15 + windows.at.hour) + "^ now")
        day += DAY
    return lines


def render_text(windows: Windows, out: TextIO) -> None:
    write = out.write
    write(
        f"Disruption budgets at {format_instant(windows.at)} (UTC), next {windows.days:g} "
        f"day(s), for voluntary replacements (reason {windows.reason})\n"
        f"{work_text(windows.settings)}\n"
    )
    if not windows.pools:
        write("\nNo NodePools.\n")
        return
    for pool in windows.pools:
        write("\n")
        write(f"NodePool {pool.name}: {pool.node_count} node(s), {pool.disrupting} disrupting\n")
        a = pool.allowance
        if pool.opted_out:
            write(f"  {opted_out_text()}\n")
        if pool.blocked:
            write(f"  now: BLOCKED, allowed 0 -- invalid budgets: {pool.error}\n")
            write("  every voluntary disruption waits until the budgets are fixed\n")
        else:
            write(
                f"  now: limit {limit_text(a.limit)}, disrupting {a.disrupting}, "
                f"allowed {limit_text(a.allowed)} -- {a.reason}\n"
            )
            for budget in pool.budgets:
                write(f"  {budget_text(budget)}\n")
        if pool.opted_out:
            continue
        if not pool.blocked:
            write("  FROM (UTC)             TO (UTC)               LIMIT     ALLOWED   BUDGETS\n")
            for segment in pool.segments:
                active = ",".join(str(i) for i in segment.active_budget_indexes) or "-"
                write(
                    f"  {_short(segment.start):<21}  {_short(segment.end):<21}  "
                    f"{limit_text(segment.limit):<8}  "
                    f"{allowed_text(segment.limit, pool.disrupting):<8}  {active}\n"
                )
        write(" " * 15 + "00    06    12    18\n")
        for line in day_strips(pool, windows):
            write(line + "\n")
    write(
        f"\nOne character per hour, the tightest limit in it: {FROZEN_MARK} frozen (0), "
        f"1-9 that many nodes, {MANY_MARK} 10 or more, {UNLIMITED_MARK} no limit, "
        f"{OUTSIDE_MARK} outside the {windows.days:g} day(s) shown. "
        "ALLOWED assumes today's disrupting nodes are still disrupting.\n"
    )


def render_check(windows: Windows, out: TextIO) -> None:
    """``--check``: one line per NodePool, whether Karpenter would accept its budgets."""
    if not windows.pools:
        out.write("no NodePools\n")
    for pool in windows.pools:
        if pool.blocked:
            out.write(f"INVALID  NodePool {pool.name}: {pool.error}\n")
        else:
            note = " (opted out of Lifeboat)" if pool.opted_out else ""
            out.write(f"ok       NodePool {pool.name}: {len(pool.budgets)} budget(s){note}\n")


def to_json(windows: Windows) -> dict[str, Any]:
    def pool_json(pool: PoolWindows) -> dict[str, Any]:
        return {
            "nodepool": pool.name,
            "nodes": pool.node_count,
            "disrupting": pool.disrupting,
            "limit": pool.allowance.limit,
            "allowed": pool.allowance.allowed,
            "reason": pool.allowance.reason,
            "blocked": pool.blocked,
            "error": pool.error,
            "opted_out": pool.opted_out,
            "timeline": [
                {
                    "start": format_instant(s.start),
                    "end": format_instant(s.end),
                    "limit": s.limit,
                    "allowed": None if s.limit is None else max(0, s.limit - pool.disrupting),
                    "active_budgets": list(s.active_budget_indexes),
                }
                for s in pool.segments
            ],
        }

    return {
        "at": format_instant(windows.at),
        "until": format_instant(windows.end),
        "reason": windows.reason,
        "nodepools": [pool_json(p) for p in windows.pools],
    }


def render_local(windows: Windows, tz: ZoneInfo, out: TextIO) -> None:
    """``--tz``: the same windows in the operator's zone, and the schedules that move."""
    write = out.write
    write(
        f"\nIn {tz.key} (shown only: Karpenter and Lifeboat evaluate schedules in UTC), from "
        f"{local_text(windows.at, tz)}:\n"
    )
    for pool in windows.pools:
        if pool.blocked or pool.opted_out:
            continue
        write(f"NodePool {pool.name}\n")
        write(f"  {'FROM':<25}  {'TO':<25}  {'LIMIT':<8}  ALLOWED\n")
        for segment in pool.segments:
            write(
                f"  {local_text(segment.start, tz):<25}  {local_text(segment.end, tz):<25}  "
                f"{limit_text(segment.limit):<8}  "
                f"{allowed_text(segment.limit, pool.disrupting)}\n"
            )
        for budget in pool.budgets:
            warning = schedule_shift_warning(budget, tz, windows.at)
            if warning is not None:
                write(f"  warning: {warning}\n")


def add_local_times(document: dict[str, Any], windows: Windows, tz: ZoneInfo) -> None:
    """``--tz --json``: each segment's ends in the zone too (ISO 8601 with the offset), and
    the schedule warnings."""
    document["tz"] = tz.key
    for pool, entry in zip(windows.pools, document["nodepools"], strict=True):
        for segment, row in zip(pool.segments, entry["timeline"], strict=True):
            row["start_local"] = segment.start.astimezone(tz).isoformat()
            row["end_local"] = segment.end.astimezone(tz).isoformat()
        warnings = [schedule_shift_warning(b, tz, windows.at) for b in pool.budgets]
        entry["tz_warnings"] = [w for w in warnings if w is not None]


# ---------------------------------------------------------------------------------------------
# Command

EXAMPLES = """
lifeboat windows --cluster events/cluster.yaml --at 2026-12-01T14:05:00Z --days 2
lifeboat windows --kubeconfig ~/.kube/config --days 7 --plot windows.svg
lifeboat windows --check --cluster events/examples/nodepools.yaml   # CI: exit 2 if invalid
lifeboat windows --cluster cluster.yaml --json | jq '.nodepools[] | {nodepool, allowed}'
lifeboat windows --cluster events/cluster.yaml --tz Europe/Madrid   # also in local time
"""


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "windows",
        summary="disruptions allowed now and the budget windows of the next days, per NodePool",
        description="Per NodePool: the voluntary disruptions its budgets allow now, and when "
        "its budget windows open and close over the next days (UTC), counted as Karpenter "
        "and the Lambda count them. Exit status 2 when a NodePool's budgets are invalid "
        "(Karpenter would block the pool), so it can gate CI.",
        examples=EXAMPLES,
    )
    add_cluster_flags(parser, kubeconfig_help="a live cluster (read only)")
    parser.add_argument("--days", type=_positive_days, default=7, help="how far ahead (7)")
    add_at_flag(parser, "the instant to look from (now)")
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.svg|FILE.png",
        help="also draw the windows: SVG (no dependency) or PNG (needs eks-lifeboat[plot])",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--check",
        action="store_true",
        help="only say, per NodePool, whether its budgets are valid (exit 2 if any is not)",
    )
    parser.add_argument(
        "--tz",
        metavar="ZONE",
        help="also show the windows in this IANA time zone (e.g. Europe/Madrid), daylight "
        "saving shifts included, and warn where a schedule moves by an hour twice a year; "
        "Karpenter and Lifeboat decide in UTC whatever this says",
    )
    add_strict_flag(parser)
    add_settings_flags(parser)


def _positive_days(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of days: {text!r}") from None
    if not 1 <= value <= 366:
        raise argparse.ArgumentTypeError(f"--days must be between 1 and 366, got {value}")
    return value


def check_args(args: argparse.Namespace) -> None:
    """The plot's format and folder, and the zone, before any work."""
    if args.tz is not None:
        zone(args.tz)
    plot: Path | None = args.plot
    if plot is None:
        return
    if plot.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"--plot {plot}: the file must end in .svg or .png")
    if plot.suffix.lower() == ".png":
        from lifeboat_local import svg

        svg.require_matplotlib()
    check_output_file("--plot", plot)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    at = args.at or datetime.now(UTC)
    said_before = warnings_said()
    tool = tool_settings(args)
    with open_cluster(args.cluster, args.kubeconfig, args.context) as source:
        tool.announce()
        windows = gather(source.kube, at, args.days, tool.settings)
        missing = kinds_of(source.missing)
    tz = zone(args.tz) if args.tz is not None else None
    if args.check:
        render_check(windows, out)
    elif args.json:
        as_json = to_json(windows)
        if missing:  # the kinds the cluster file lacks (counts read as if there were none)
            as_json["missing_kinds"] = missing
        if tz is not None:
            add_local_times(as_json, windows, tz)
        out.write(json.dumps(as_json, indent=2) + "\n")
    else:
        render_text(windows, out)
        if tz is not None:
            render_local(windows, tz, out)
    plot: Path | None = args.plot
    if plot is not None:
        from lifeboat_local import svg

        if plot.suffix.lower() == ".png":
            write_output("--plot", plot, lambda path: svg.write_png(windows, path))
        else:
            document = svg.render_svg(windows)
            write_output("--plot", plot, lambda path: path.write_text(document, encoding="utf-8"))
        if not args.json:
            out.write(f"Wrote {plot}\n")
    status = EXIT_INVALID_BUDGETS if windows.invalid else EXIT_OK
    return strict_status(args, status, said_before)

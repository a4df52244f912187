"""``lifeboat windows --plot``: the budget windows as a Gantt-like chart.

SVG is written by hand (no dependency). PNG needs matplotlib, the optional extra
``eks-lifeboat[plot]``; without it the command says so and exits 1.
"""

from __future__ import annotations

import importlib
import importlib.util
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from lifeboat.karpenter.budgets import Segment
from lifeboat.marks import node_marks
from lifeboat.model.instants import format_instant
from lifeboat_local.common import UsageError
from lifeboat_local.window_model import (
    DAY,
    HOUR,
    PoolWindows,
    Windows,
    allowed_text,
    limit_text,
)

FROZEN = "#d62728"  # red: no voluntary disruption
# Oranges, darker for tighter limits: 1, 2, 3, 4-9, 10 or more nodes.
LIMITED = ("#a63603", "#e6550d", "#fd8d3c", "#fdae6b", "#fdd0a2")
UNLIMITED = "#2ca02c"  # green: no limit
OUTSIDE = "#e0e0e0"  # grey: hours outside the horizon (before now, after the days asked)
OPTED_OUT = "#9e9e9e"  # darker grey, hatched: the pool is left alone
GRID = "#cccccc"

LEFT, RIGHT, TOP, ROW, BAR, AXIS, LEGEND = 170, 20, 56, 34, 22, 34, 40


def colour(limit: int | None) -> str:
    """One shade per limit band, so a 1-node window does not look like a 10-node one."""
    if limit is None:
        return UNLIMITED
    if limit == 0:
        return FROZEN
    return LIMITED[min(limit, 4) - 1] if limit < 10 else LIMITED[-1]


def band(limit: int | None) -> str:
    """What a shade stands for, in the legend."""
    if limit is None:
        return "no limit"
    if limit == 0:
        return "frozen (0 nodes) or blocked"
    if limit < 4:
        return f"{limit} node{'s' if limit > 1 else ''}"
    return "4-9 nodes" if limit < 10 else "10+ nodes"


def title(windows: Windows) -> str:
    days = (windows.end - windows.at) / DAY
    return (
        f"Lifeboat disruption budget windows at {format_instant(windows.at)} "
        f"(UTC, next {days:g} day(s), reason {windows.reason})"
    )


def render_svg(windows: Windows) -> str:
    """A standalone SVG document: one row (``<g class="pool">``) per NodePool."""
    span_hours = (windows.chart_end - windows.chart_start) / HOUR
    per_hour = max(3.0, min(24.0, 1008.0 / span_hours))
    plot_width = span_hours * per_hour
    width = LEFT + plot_width + RIGHT
    rows = max(1, len(windows.pools))
    height = TOP + rows * ROW + AXIS + LEGEND

    def x(moment: datetime) -> float:
        return LEFT + (moment - windows.chart_start) / HOUR * per_hour

    parts: list[str] = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title(windows))}</title>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
        f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">'
        f"{escape(title(windows))}</text>",
    ]
    axis_y = TOP + rows * ROW
    parts.append(_grid(windows, x, axis_y, per_hour))
    for row, pool in enumerate(windows.pools):
        parts.append(_row(pool, windows, x, TOP + row * ROW, plot_width))
    parts.append(_outside(windows, x, axis_y))
    if not windows.pools:
        parts.append(f'<text x="{LEFT + 6}" y="{TOP + 20}">No NodePools</text>')
    now_x = x(windows.at)
    parts.append(
        f'<line class="now" x1="{now_x:.1f}" y1="{TOP - 6}" x2="{now_x:.1f}" y2="{axis_y}" '
        'stroke="black" stroke-width="1.5" stroke-dasharray="4 2"/>'
        f'<text x="{now_x + 3:.1f}" y="{TOP - 8}" font-size="11">now</text>'
    )
    parts.append(_legend(windows, axis_y + AXIS + 10))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _grid(windows: Windows, x: Any, axis_y: int, per_hour: float) -> str:
    lines = ['<g class="axis">']
    label_every = 6 if per_hour >= 6 else 12
    moment = windows.chart_start
    while moment <= windows.chart_end:
        px = x(moment)
        midnight = moment.hour == 0
        if midnight or moment.hour % label_every == 0:
            lines.append(
                f'<line x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" y2="{axis_y}" '
                f'stroke="{"#888888" if midnight else GRID}" stroke-width="1"/>'
            )
        tick = 7 if midnight else 4
        lines.append(
            f'<line class="tick" x1="{px:.1f}" y1="{axis_y}" x2="{px:.1f}" '
            f'y2="{axis_y + tick}" stroke="black" stroke-width="1"/>'
        )
        if moment < windows.chart_end and moment.hour % label_every == 0:
            lines.append(
                f'<text x="{px:.1f}" y="{axis_y + 18}" text-anchor="middle" font-size="10">'
                f"{moment.hour:02d}</text>"
            )
        if midnight and moment < windows.chart_end:
            lines.append(
                f'<text x="{px + 2:.1f}" y="{axis_y + 31}" font-size="11" font-weight="bold">'
                f"{moment.strftime('%a %Y-%m-%d')}</text>"
            )
        moment += HOUR
    lines.append("</g>")
    return "\n".join(lines)


def _outside(windows: Windows, x: Any, axis_y: int) -> str:
    """Grey over the hours of the chart outside the horizon: before now, after the days."""
    out = ['<g class="outside">']
    for start, end in ((windows.chart_start, windows.at), (windows.end, windows.chart_end)):
        if end > start:
            tip = f"outside the horizon: {format_instant(start)} to {format_instant(end)}"
            out.append(
                f'<rect class="outside" x="{x(start):.1f}" y="{TOP}" '
                f'width="{x(end) - x(start):.1f}" height="{axis_y - TOP}" fill="{OUTSIDE}">'
                f"<title>{escape(tip)}</title></rect>"
            )
    out.append("</g>")
    return "\n".join(out)


def _row(pool: PoolWindows, windows: Windows, x: Any, top: int, plot_width: float) -> str:
    bar_top = top + (ROW - BAR) / 2
    text_y = bar_top + BAR / 2 + 4
    label = f"{pool.name} ({pool.node_count} nodes)"
    out = [
        f'<g class="pool" data-pool={quoteattr(pool.name)}>',
        f'<text x="{LEFT - 8}" y="{text_y:.1f}" text-anchor="end">{escape(label)}</text>',
    ]
    left, width = x(windows.at), x(windows.end) - x(windows.at)
    if pool.opted_out or pool.blocked:
        what = (
            f"opted out ({node_marks.OPT_OUT_ANNOTATION}): left alone by Lifeboat"
            if pool.opted_out
            else f"blocked by invalid budgets: {pool.error}"
        )
        css, fill = ("opted-out", OPTED_OUT) if pool.opted_out else ("blocked", FROZEN)
        out.append(
            f'<rect class="segment {css}" x="{left:.1f}" y="{bar_top:.1f}" '
            f'width="{width:.1f}" height="{BAR}" fill="{fill}" fill-opacity="0.6">'
            f"<title>{escape(f'{pool.name}: {what}')}</title></rect>"
        )
        out.append(
            f'<text x="{left + 6:.1f}" y="{text_y:.1f}" fill="white">{escape(what[:140])}</text>'
        )
        out.append("</g>")
        return "\n".join(out)
    for segment in pool.segments:
        out.append(_segment(pool, segment, x(segment.start), x(segment.end), bar_top))
    out.append("</g>")
    return "\n".join(out)


def _segment(pool: PoolWindows, segment: Segment, left: float, right: float, top: float) -> str:
    """One stretch of constant limit: its shade, and the limit and what it allows now."""
    limit = limit_text(segment.limit)
    allowed = allowed_text(segment.limit, pool.disrupting)
    budgets = ",".join(str(i) for i in segment.active_budget_indexes) or "none"
    tip = (
        f"{pool.name}: limit {limit}, allowed {allowed} ({pool.disrupting} disrupting now) "
        f"from {format_instant(segment.start)} to {format_instant(segment.end)} "
        f"(active budgets: {budgets})"
    )
    fill = colour(segment.limit)
    ink = "white" if fill in (FROZEN, UNLIMITED, *LIMITED[:2]) else "black"
    parts = [
        f'<rect class="segment" x="{left:.1f}" y="{top:.1f}" '
        f'width="{max(0.5, right - left):.1f}" height="{BAR}" fill="{fill}" '
        f'data-limit="{limit}" data-allowed="{allowed}"><title>{escape(tip)}</title></rect>'
    ]
    symbol = "∞" if segment.limit is None else str(segment.limit)
    text = f"limit {symbol}, allowed {'∞' if segment.limit is None else allowed}"
    if right - left < 7 * len(text):
        text = symbol if segment.limit is None else f"{symbol}/{allowed}"
    if right - left >= 7 * len(text) + 4:
        parts.append(
            f'<text x="{(left + right) / 2:.1f}" y="{top + BAR / 2 + 4:.1f}" '
            f'text-anchor="middle" font-size="11" fill="{ink}">{escape(text)}</text>'
        )
    return "\n".join(parts)


def _legend(windows: Windows, top: int) -> str:
    limits = sorted(
        {s.limit for p in windows.pools for s in p.segments},
        key=lambda limit: (limit is None, limit or 0),
    )
    shades = {colour(limit): band(limit) for limit in [0, *limits]}
    items = [*shades.items(), (OUTSIDE, "outside the horizon")]
    if any(pool.opted_out for pool in windows.pools):
        items.append((OPTED_OUT, "opted out"))
    out = ['<g class="legend">']
    left = LEFT
    for fill, text in items:
        out.append(
            f'<rect x="{left}" y="{top}" width="14" height="14" fill="{fill}"/>'
            f'<text x="{left + 20}" y="{top + 11}">{escape(text)}</text>'
        )
        left += 40 + 7 * len(text)
    out.append(
        f'<text x="{left}" y="{top + 11}" fill="#555555">labels: limit/allowed now; '
        "times in UTC</text>"
    )
    out.append("</g>")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# PNG through matplotlib (optional)


PNG_NEEDS = (
    "--plot: PNG output needs matplotlib, which is not installed; write an .svg instead (no "
    "dependency), or install the extra: pip install 'eks-lifeboat[plot]'"
)


def require_matplotlib() -> None:
    """A usage error now, before any work, if a PNG could not be drawn."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError(PNG_NEEDS)


def _matplotlib() -> tuple[Any, Any]:
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        return matplotlib, importlib.import_module("matplotlib.pyplot")
    except ImportError:
        raise UsageError(PNG_NEEDS) from None


# The PNG's palette: viridis stops (a colour-blind-safe map, its lightness rising with the
# limit), so "frozen" is the darkest and "no limit" the lightest whatever colours a reader
# tells apart, and a 1-node window is never close to the frozen shade. The SVG keeps its own
# labelled bars.
PNG_FROZEN = "#440154"
PNG_LIMITED = ("#414487", "#2a788e", "#22a884", "#7ad151", "#bddf26")
PNG_UNLIMITED = "#fde725"


def png_colour(limit: int | None) -> str:
    if limit is None:
        return PNG_UNLIMITED
    if limit == 0:
        return PNG_FROZEN
    return PNG_LIMITED[min(limit, 4) - 1] if limit < 10 else PNG_LIMITED[-1]


def png_figure(windows: Windows) -> Any:
    """The windows as a matplotlib figure: a bar per NodePool over the hours, axes labelled,
    the legend beside the bars (never over them). The caller closes it."""
    _, plt = _matplotlib()
    span_hours = (windows.chart_end - windows.chart_start) / HOUR
    rows = max(1, len(windows.pools))
    figure, axes = plt.subplots(figsize=(max(8.0, span_hours / 12) + 2.5, 1.6 + 0.5 * rows))

    def hours(moment: datetime) -> float:
        return (moment - windows.chart_start) / HOUR

    horizon = [(hours(windows.at), hours(windows.end) - hours(windows.at))]
    for row, pool in enumerate(windows.pools):
        if pool.blocked or pool.opted_out:
            fill = OPTED_OUT if pool.opted_out else PNG_FROZEN
            axes.broken_barh(horizon, (row - 0.35, 0.7), facecolors=fill, hatch="//")
            continue
        bars = [(hours(s.start), (s.end - s.start) / HOUR) for s in pool.segments]
        shades = [png_colour(s.limit) for s in pool.segments]
        axes.broken_barh(bars, (row - 0.35, 0.7), facecolors=shades, edgecolor="white")
    axes.set_yticks(range(len(windows.pools)))
    axes.set_yticklabels([p.name for p in windows.pools])
    axes.invert_yaxis()
    step = 6 if span_hours <= 72 else 24
    ticks = range(0, int(span_hours) + 1, step)
    axes.set_xticks(list(ticks))
    labels = [_tick_label(windows.chart_start + timedelta(hours=h)) for h in ticks]
    axes.set_xticklabels(labels, fontsize=7)
    axes.set_xlim(0, span_hours)
    axes.set_xlabel("time (UTC)", fontsize=8)
    axes.set_ylabel("NodePool", fontsize=8)
    axes.axvspan(0, hours(windows.at), color=OUTSIDE)
    axes.axvspan(hours(windows.end), span_hours, color=OUTSIDE)
    axes.axvline(hours(windows.at), color="black", linestyle="--")
    axes.set_title(title(windows), fontsize=9)
    # Most allowed first: no limit, then the limits down to frozen.
    limits = sorted(
        {s.limit for p in windows.pools for s in p.segments},
        key=lambda limit: float("inf") if limit is None else limit,
        reverse=True,
    )
    bands = {png_colour(limit): band(limit) for limit in limits}
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in bands]
    names = list(bands.values())
    handles.append(plt.Rectangle((0, 0), 1, 1, color=OUTSIDE))
    names.append("outside the days shown")
    # Beside the plot, not over it: anchored just right of the axes.
    axes.legend(
        handles, names, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7,
        title="voluntary disruptions allowed", title_fontsize=7, frameon=False,
    )  # fmt: skip
    figure.tight_layout()
    return figure


def write_png(windows: Windows, path: Path) -> None:
    _, plt = _matplotlib()
    figure = png_figure(windows)
    try:
        figure.savefig(path, format="png", dpi=120)
    finally:
        plt.close(figure)


def _tick_label(moment: datetime) -> str:
    return moment.strftime("%a %d\n%H:%M") if moment.hour == 0 else moment.strftime("%H")

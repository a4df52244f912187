"""``lifeboat windows --plot``: the budget windows as a Gantt-like chart.

SVG is written by hand (no dependency). PNG needs matplotlib, the optional extra
``eks-lifeboat[plot]``; without it the command says so and exits 1.
"""

from __future__ import annotations

import importlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from lifeboat.instants import format_instant
from lifeboat_local.common import UsageError
from lifeboat_local.windows import DAY, HOUR, PoolWindows, Windows, limit_text

FROZEN = "#d62728"  # red: no voluntary disruption
LIMITED = "#f0a30a"  # amber: a limited number of nodes
UNLIMITED = "#2ca02c"  # green: no limit
GRID = "#cccccc"

LEFT, RIGHT, TOP, ROW, BAR, AXIS, LEGEND = 170, 20, 56, 34, 22, 34, 40


def colour(limit: int | None) -> str:
    if limit is None:
        return UNLIMITED
    return FROZEN if limit == 0 else LIMITED


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
    if not windows.pools:
        parts.append(f'<text x="{LEFT + 6}" y="{TOP + 20}">No NodePools</text>')
    now_x = x(windows.at)
    parts.append(
        f'<line class="now" x1="{now_x:.1f}" y1="{TOP - 6}" x2="{now_x:.1f}" y2="{axis_y}" '
        'stroke="black" stroke-width="1.5" stroke-dasharray="4 2"/>'
        f'<text x="{now_x + 3:.1f}" y="{TOP - 8}" font-size="11">now</text>'
    )
    parts.append(_legend(axis_y + AXIS + 10))
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


def _row(pool: PoolWindows, windows: Windows, x: Any, top: int, plot_width: float) -> str:
    bar_top = top + (ROW - BAR) / 2
    label = f"{pool.name} ({pool.node_count} nodes)"
    out = [
        f'<g class="pool" data-pool={quoteattr(pool.name)}>',
        f'<text x="{LEFT - 8}" y="{bar_top + BAR / 2 + 4:.1f}" text-anchor="end">'
        f"{escape(label)}</text>",
    ]
    if pool.blocked:
        out.append(
            f'<rect class="segment blocked" x="{LEFT}" y="{bar_top:.1f}" '
            f'width="{plot_width:.1f}" height="{BAR}" fill="{FROZEN}" fill-opacity="0.6">'
            f"<title>{escape(f'{pool.name}: blocked by invalid budgets: {pool.error}')}</title>"
            "</rect>",
        )
        out.append(
            f'<text x="{LEFT + 6}" y="{bar_top + BAR / 2 + 4:.1f}" fill="white">'
            f"{escape(f'invalid budgets: {pool.error}'[:140])}</text>"
        )
    for segment in pool.segments:
        left, right = x(segment.start), x(segment.end)
        budgets = ",".join(str(i) for i in segment.active_budget_indexes) or "none"
        tip = (
            f"{pool.name}: limit {limit_text(segment.limit)} from {format_instant(segment.start)} "
            f"to {format_instant(segment.end)} (active budgets: {budgets})"
        )
        out.append(
            f'<rect class="segment" x="{left:.1f}" y="{bar_top:.1f}" '
            f'width="{max(0.5, right - left):.1f}" height="{BAR}" '
            f'fill="{colour(segment.limit)}" data-limit="{limit_text(segment.limit)}">'
            f"<title>{escape(tip)}</title></rect>"
        )
        if right - left >= 18:
            text = "∞" if segment.limit is None else str(segment.limit)
            out.append(
                f'<text x="{(left + right) / 2:.1f}" y="{bar_top + BAR / 2 + 4:.1f}" '
                f'text-anchor="middle" font-size="11" fill="white">{text}</text>'
            )
    out.append("</g>")
    return "\n".join(out)


def _legend(top: int) -> str:
    items = [
        (FROZEN, "frozen (0 nodes) or blocked"),
        (LIMITED, "limited (n nodes)"),
        (UNLIMITED, "no limit"),
    ]
    out = ['<g class="legend">']
    left = LEFT
    for fill, text in items:
        out.append(
            f'<rect x="{left}" y="{top}" width="14" height="14" fill="{fill}"/>'
            f'<text x="{left + 20}" y="{top + 11}">{escape(text)}</text>'
        )
        left += 40 + 7 * len(text)
    out.append(f'<text x="{left}" y="{top + 11}" fill="#555555">times in UTC</text>')
    out.append("</g>")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# PNG through matplotlib (optional)


def _matplotlib() -> tuple[Any, Any]:
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        return matplotlib, importlib.import_module("matplotlib.pyplot")
    except ImportError:
        raise UsageError(
            "--plot: PNG output needs matplotlib, which is not installed; write an .svg "
            "instead (no dependency), or install the extra: pip install 'eks-lifeboat[plot]'"
        ) from None


def write_png(windows: Windows, path: Path) -> None:
    _, plt = _matplotlib()
    span_hours = (windows.chart_end - windows.chart_start) / HOUR
    rows = max(1, len(windows.pools))
    figure, axes = plt.subplots(figsize=(max(8.0, span_hours / 12), 1.2 + 0.5 * rows))
    try:
        for row, pool in enumerate(windows.pools):
            if pool.blocked:
                axes.broken_barh([(0, span_hours)], (row - 0.35, 0.7), facecolors=FROZEN)
                continue
            bars = [
                (
                    (s.start - windows.chart_start) / HOUR,
                    (s.end - s.start) / HOUR,
                )
                for s in pool.segments
            ]
            axes.broken_barh(
                bars, (row - 0.35, 0.7), facecolors=[colour(s.limit) for s in pool.segments]
            )
        axes.set_yticks(range(len(windows.pools)))
        axes.set_yticklabels([p.name for p in windows.pools])
        axes.invert_yaxis()
        step = 6 if span_hours <= 72 else 24
        ticks = range(0, int(span_hours) + 1, step)
        axes.set_xticks(list(ticks))
        axes.set_xticklabels(
            [_tick_label(windows.chart_start + timedelta(hours=h)) for h in ticks], fontsize=7
        )
        axes.set_xlim(0, span_hours)
        axes.axvline((windows.at - windows.chart_start) / HOUR, color="black", linestyle="--")
        axes.set_title(title(windows), fontsize=9)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in (FROZEN, LIMITED, UNLIMITED)]
        axes.legend(handles, ["frozen", "limited", "no limit"], loc="upper right", fontsize=7)
        figure.tight_layout()
        figure.savefig(path, format="png", dpi=120)
    finally:
        plt.close(figure)


def _tick_label(moment: datetime) -> str:
    return moment.strftime("%a %d\n%H:%M") if moment.hour == 0 else moment.strftime("%H")

"""The ``windows --plot`` PNG is readable (issue 38.9): axis labels, the legend beside the
bars rather than over one, and a palette a colour-blind reader can order: its lightness rises
with the limit (frozen darkest, no limit lightest), so the bands stay apart whatever hues a
reader tells apart, and a 1-node window is far from the frozen shade (the old PNG's 1-node
orange was close to its frozen red)."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import pytest

from lifeboat_local import svg
from lifeboat_local.windows import gather
from tests.support.paths import SAMPLE_CLUSTER

# Limits in the order they allow more: frozen, 1, 2, 3, 4-9, 10+, no limit.
BANDS = [0, 1, 2, 3, 4, 10, None]


def _lightness(hex_colour: str) -> float:
    """CIE L* of an sRGB colour: what a reader with any colour vision still sees."""
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    y = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 116 * (y ** (1 / 3) if y > 0.008856 else 7.787 * y + 16 / 116) - 16


def test_the_png_palette_rises_in_lightness_with_the_limit() -> None:
    lightness = [_lightness(svg.png_colour(limit)) for limit in BANDS]
    gaps = [after - before for before, after in pairwise(lightness)]
    assert min(gaps) >= 5, gaps
    assert lightness[1] - lightness[0] >= 15  # 1 node is far from frozen


def test_the_old_palette_failed_it() -> None:
    """What the PNG used before (the SVG's shades): frozen red and the 1-node orange are
    about as light as each other."""
    assert abs(_lightness(svg.FROZEN) - _lightness(svg.LIMITED[0])) < 10


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs [plot]")
def test_the_png_has_axis_labels_and_its_legend_beside_the_bars(tmp_path: Path) -> None:
    from lifeboat_local.common import ToolSettings  # noqa: F401 (settings' defaults)
    from lifeboat_local.source import open_cluster

    at = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)
    with open_cluster(SAMPLE_CLUSTER, None) as source:
        from lifeboat.model.settings import Settings

        windows = gather(source.kube, at, 2, Settings())
    figure = svg.png_figure(windows)
    try:
        (axes,) = figure.axes
        assert axes.get_xlabel() == "time (UTC)"
        assert axes.get_ylabel() == "NodePool"
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        legend = axes.get_legend().get_window_extent(renderer)
        plotted = axes.get_window_extent(renderer)
        assert legend.x0 >= plotted.x1  # beside the bars, covering none
        assert legend.x1 <= figure.bbox.x1 + 1  # and inside the image
        svg.write_png(windows, tmp_path / "w.png")
        assert (tmp_path / "w.png").read_bytes().startswith(b"\x89PNG")
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)

"""Bar charts of evaluation results, as SVG: every system side by side for each metric,
with the axis, its unit, and the confidence interval as an error bar.

SVG because one drawing then serves everywhere: the HTML report embeds it, Qt's text
engine draws it into the PDF, and the Evaluation tab paints it with QSvgRenderer.  Only
SVG Tiny elements are used (rect, line, text), which Qt's renderer supports.  Bars differ
in lightness as well as hue and carry their value as text, so a chart printed in grey
still says which bar is which.  Hand-written (about 100 lines) because the plotting
libraries that draw this (matplotlib) would add 40 MB to the bundle for one chart.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from html import escape

# Dark to light, so neighbours differ in grey too (blue, orange, green, purple, grey).
FILLS = ("#1f4e9c", "#f0a04b", "#2e8b57", "#b9a3d9", "#555555", "#c7e0f4")
_WIDTH = 680
_LABEL_WIDTH = 200
_BAR = 18
_GAP = 14
_TOP = 42
AXIS_LABELS = {"0-100": "score, 0 to 100", "0-1": "share of answers or facts, 0 to 1",
               "1-5": "judge score, 1 to 5", "0-5": "judge score, 0 to 5",
               "0-2": "level, 0 to 2", "US school grade": "US school grade (lower reads more easily)",
               "count": "count per answer"}


@dataclass(frozen=True)
class Bar:
    system: str  # which run or system, named in the legend
    mean: float
    low: float | None = None  # None: no interval (too few samples)
    high: float | None = None


def axis_label(scale: str) -> str:
    """The x axis's label, with its unit, for a metric's scale."""
    return AXIS_LABELS.get(scale, scale)


def axis_range(scale: str, highest: float) -> tuple[float, float]:
    """Where the axis starts and ends for a metric's scale ("0-100", "1-5", "count", ...)."""
    if "-" in scale and scale.replace("-", "").replace(".", "").isdigit():
        low, high = (float(part) for part in scale.split("-"))
        return min(0.0, low), max(high, highest)
    # A count whose values are all 0 still gets an axis to 1, not six ticks all read "0".
    return 0.0, _nice(max(highest, 1.0))


def _nice(value: float) -> float:
    """The next round number at or above `value` (1, 2, 2.5, 5 times a power of ten)."""
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power


LABEL_CHARACTERS = 30  # a metric's name beside its bars, per line
LEGEND_CHARACTERS = 32  # a run's name in the legend ("dialogue:no-dialogue (d1868f40)")


def label_lines(name: str) -> list[str]:
    """A metric's name in at most two lines that fit beside the bars, broken between words
    ("Assessor 1.3 conclusion explained" was cut to "... explaine")."""
    words, lines = name.split(), [""]
    for word in words:
        joined = f"{lines[-1]} {word}".strip()
        if len(joined) <= LABEL_CHARACTERS or not lines[-1]:
            lines[-1] = joined
        elif len(lines) < 2:
            lines.append(word)
        else:
            lines[-1] = joined
    if len(lines[-1]) > LABEL_CHARACTERS:
        lines[-1] = lines[-1][:LABEL_CHARACTERS - 1].rstrip() + "…"
    return lines


def _ticks(low: float, high: float) -> list[float]:
    step = _nice((high - low) / 5)
    count = int(round((high - low) / step))
    return [low + i * step for i in range(count + 1) if low + i * step <= high + 1e-9]


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 10 else f"{value:.1f}".rstrip("0").rstrip(".")


def bar_chart_svg(title: str, axis_label: str, groups: list[tuple[str, list[Bar]]],
                  axis: tuple[float, float]) -> str:
    """Horizontal bars: one group per metric, one bar per system in the same order in every
    group, the x axis from axis[0] to axis[1] labelled `axis_label` (its unit)."""
    systems = list(dict.fromkeys(bar.system for _name, bars in groups for bar in bars))
    low, high = axis
    plot_left, plot_right = _LABEL_WIDTH, _WIDTH - 100  # the values in a column on the right
    span = (high - low) or 1.0

    def x(value: float) -> float:
        return plot_left + (min(max(value, low), high) - low) / span * (plot_right - plot_left)

    group_height = len(systems) * _BAR + _GAP
    plot_top = _TOP + 18 * math.ceil(len(systems) / 3)  # the legend's rows
    plot_bottom = plot_top + len(groups) * group_height
    height = plot_bottom + 44
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
           f'viewBox="0 0 {_WIDTH} {height}" font-family="sans-serif" font-size="11">',
           f'<rect x="0" y="0" width="{_WIDTH}" height="{height}" fill="#ffffff"/>',
           f'<text x="4" y="16" font-size="13" font-weight="bold">{escape(title)}</text>']
    for index, system in enumerate(systems):  # legend
        lx, ly = 4 + (index % 3) * 210, _TOP - 8 + 18 * (index // 3)
        out.append(f'<rect x="{lx}" y="{ly - 9}" width="12" height="10" '
                   f'fill="{FILLS[index % len(FILLS)]}" stroke="#000000" stroke-width="0.5"/>')
        out.append(f'<text x="{lx + 16}" y="{ly}">{escape(system[:LEGEND_CHARACTERS])}</text>')
    for tick in _ticks(low, high):  # grid and tick labels
        tx = x(tick)
        out.append(f'<line x1="{tx:.1f}" y1="{plot_top}" x2="{tx:.1f}" y2="{plot_bottom}" '
                   'stroke="#dddddd" stroke-width="1"/>')
        out.append(f'<text x="{tx:.1f}" y="{plot_bottom + 14}" text-anchor="middle">{_number(tick)}</text>')
    for g, (name, bars) in enumerate(groups):
        top = plot_top + g * group_height + _GAP / 2
        lines = label_lines(name)
        middle = top + len(systems) * _BAR / 2 + 4 - 6.5 * (len(lines) - 1)
        for number, line in enumerate(lines):
            out.append(f'<text x="{plot_left - 6}" y="{middle + 13 * number:.1f}" '
                       f'text-anchor="end">{escape(line)}</text>')
        for bar in bars:
            row = systems.index(bar.system)
            y = top + row * _BAR
            fill = FILLS[row % len(FILLS)]
            out.append(f'<rect x="{plot_left}" y="{y + 2:.1f}" width="{max(x(bar.mean) - plot_left, 1):.1f}" '
                       f'height="{_BAR - 4}" fill="{fill}" stroke="#000000" stroke-width="0.5"/>')
            if bar.low is not None and bar.high is not None:
                a, b, mid = x(bar.low), x(bar.high), y + _BAR / 2
                out += [f'<line x1="{a:.1f}" y1="{mid:.1f}" x2="{b:.1f}" y2="{mid:.1f}" stroke="#000000" stroke-width="1.5"/>',
                        f'<line x1="{a:.1f}" y1="{mid - 5:.1f}" x2="{a:.1f}" y2="{mid + 5:.1f}" stroke="#000000" stroke-width="1.5"/>',
                        f'<line x1="{b:.1f}" y1="{mid - 5:.1f}" x2="{b:.1f}" y2="{mid + 5:.1f}" stroke="#000000" stroke-width="1.5"/>']
            value = _number(bar.mean) + ("" if bar.low is not None else " (no CI)")
            out.append(f'<text x="{plot_right + 8}" y="{y + _BAR / 2 + 4:.1f}">{escape(value)}</text>')
    out.append(f'<line x1="{plot_left}" y1="{plot_bottom}" x2="{plot_right}" y2="{plot_bottom}" '
               'stroke="#000000" stroke-width="1"/>')
    out.append(f'<line x1="{plot_left}" y1="{plot_top}" x2="{plot_left}" y2="{plot_bottom}" '
               'stroke="#000000" stroke-width="1"/>')
    out.append(f'<text x="{(plot_left + plot_right) / 2:.1f}" y="{plot_bottom + 32}" '
               f'text-anchor="middle">{escape(axis_label)}; bars: mean, whiskers: 95% interval</text>')
    out.append("</svg>")
    return "\n".join(out)


def svg_data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")

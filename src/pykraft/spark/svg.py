"""Three small chart kinds as inline SVG: horizontal bars, lanes of spans, step lines.

Plain SVG rather than matplotlib: the report stays one self-contained HTML file that any
browser opens (no image files, no JavaScript), the output is deterministic text that tests
can assert on, and pykraft does not take a plotting stack as a dependency for three charts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

WIDTH = 900
LABEL_W = 190
"""The narrowest label column; a chart with longer labels widens it (and itself)."""
CHAR_W = 8.5
"""Width of one character of a 12 px sans-serif label, rounded up (upper case is widest)."""
CAPTION_CHAR_W = 7.0
"""The same for the lower-case captions drawn inside spans."""
ROW_H = 22
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1")


def _label_width(labels: Sequence[str]) -> float:
    """The label column that shows every label whole."""
    return max([LABEL_W, *(CHAR_W * len(label) + 12 for label in labels)])


def _svg(height: int, body: list[str], title: str, label_w: float = LABEL_W) -> str:
    width = round(label_w + WIDTH - LABEL_W)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="12" role="img">'
            f'<title>{escape(title)}</title>{"".join(body)}</svg>')


def _text(x: float, y: float, text: str, anchor: str = "start", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>'
            f'{escape(text)}</text>')


def clock(ms: float) -> str:
    """A UTC wall-clock label for epoch milliseconds."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%m-%d %H:%M:%S")


def number(value: float) -> str:
    """A figure as a reader checks it: integers whole (``:g`` would print 1451154 as
    1.45115e+06), other values to four significant digits."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4g}"


def bar_chart(title: str, bars: Sequence[tuple[str, int | float]]) -> str:
    """One horizontal bar per (label, value), longest first as given."""
    top = max((v for _, v in bars), default=0) or 1
    span = WIDTH - LABEL_W - 60
    label_w = _label_width([label for label, _ in bars])
    body = []
    for i, (label, value) in enumerate(bars):
        y = 10 + i * ROW_H
        body.append(_text(label_w - 6, y + 14, label, "end"))
        body.append(f'<rect x="{label_w:.1f}" y="{y + 3}" width="{span * value / top:.1f}" '
                    f'height="{ROW_H - 6}" fill="{PALETTE[0]}"/>')
        body.append(_text(label_w + span * value / top + 4, y + 14, number(value)))
    return _svg(20 + ROW_H * len(bars), body, title, label_w)


def _time_axis(t0: float, t1: float, y: float, body: list[str],
               label_w: float = LABEL_W) -> None:
    span = WIDTH - LABEL_W - 20
    for i in range(5):
        t = t0 + (t1 - t0) * i / 4
        x = label_w + span * i / 4
        body.append(f'<line x1="{x:.1f}" y1="10" x2="{x:.1f}" y2="{y}" stroke="#ddd"/>')
        # the last label ends at its tick, so it stays inside the chart
        body.append(_text(x, y + 14, clock(t), "end" if i == 4 else "middle"))


def lanes(title: str, rows: Sequence[tuple[str, Sequence[tuple[float, float, str]]]],
          t0: float, t1: float) -> str:
    """One lane per (label, spans); a span is (start ms, end ms, caption)."""
    t1 = max(t1, t0 + 1)
    span = WIDTH - LABEL_W - 20
    label_w = _label_width([label for label, _ in rows])
    body: list[str] = []
    bottom = 10 + ROW_H * len(rows)
    _time_axis(t0, t1, bottom, body, label_w)
    for i, (label, spans) in enumerate(rows):
        y = 10 + i * ROW_H
        body.append(_text(label_w - 6, y + 14, label, "end"))
        for j, (start, end, caption) in enumerate(spans):
            x0 = label_w + span * (start - t0) / (t1 - t0)
            x1 = label_w + span * (end - t0) / (t1 - t0)
            width = max(x1 - x0, 2.0)
            body.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{width:.1f}" '
                        f'height="{ROW_H - 6}" fill="{PALETTE[(i + j) % len(PALETTE)]}">'
                        f'<title>{escape(caption)}</title></rect>')
            if width > CAPTION_CHAR_W * len(caption) + 6:  # else only the tooltip has it
                body.append(_text(x0 + 3, y + 15, caption, extra='fill="white"'))
    return _svg(bottom + 24, body, title, label_w)


def step_lines(title: str, series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
               t0: float, t1: float) -> str:
    """Step functions of time, one per (name, points) with a legend."""
    t1 = max(t1, t0 + 1)
    height = 220
    span = WIDTH - LABEL_W - 20
    top = max((v for _, points in series for _, v in points), default=0) or 1
    body: list[str] = []
    _time_axis(t0, t1, height - 30, body)
    for i, (name, points) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        coords: list[str] = []
        previous_y = None
        for t, v in points:
            x = LABEL_W + span * (t - t0) / (t1 - t0)
            y = 10 + (height - 50) * (1 - v / top)
            if previous_y is not None:
                coords.append(f"{x:.1f},{previous_y:.1f}")
            coords.append(f"{x:.1f},{y:.1f}")
            previous_y = y
        if previous_y is not None:
            coords.append(f"{LABEL_W + span:.1f},{previous_y:.1f}")
        body.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                    f'points="{" ".join(coords)}"/>')
        peak = max((v for _, v in points), default=0)
        body.append(_text(10, 20 + i * 16, f"{name} (max {number(peak)})", extra=f'fill="{color}"'))
    return _svg(height, body, title)

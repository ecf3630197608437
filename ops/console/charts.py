"""Charts drawn on the server as inline SVG (no script, nothing loaded), each with a
text alternative: a <title> and <desc> inside the SVG and the figures as a table beside it
(the templates print `Chart.rows`).

Coordinates are computed with integers scaled from the data (the data are integers:
minor units, parts per million); only the drawing's coordinates are rounded.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

WIDTH, HEIGHT = 600, 220
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 100, 12, 12, 36


@dataclass
class Chart:
    title: str
    desc: str
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)  # the text alternative, one row per point
    svg: str = ""

    @property
    def empty(self) -> bool:
        return not self.rows


def _scale(value: int, lo: int, hi: int, size: int) -> float:
    return 0.0 if hi == lo else (value - lo) * size / (hi - lo)


def _x(i: int, n: int) -> float:
    inner = WIDTH - PAD_LEFT - PAD_RIGHT
    return PAD_LEFT + (inner / 2 if n == 1 else i * inner / (n - 1))


def _y(value: int, lo: int, hi: int) -> float:
    inner = HEIGHT - PAD_TOP - PAD_BOTTOM
    return HEIGHT - PAD_BOTTOM - _scale(value, lo, hi, inner)


def _frame(title: str, desc: str, body: list[str], lo_text: str, hi_text: str, first: str, last: str) -> str:
    base = HEIGHT - PAD_BOTTOM
    return "".join([
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMidYMid meet">',
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>",
        f'<line class="axis" x1="{PAD_LEFT}" y1="{PAD_TOP}" x2="{PAD_LEFT}" y2="{base}"/>',
        f'<line class="axis" x1="{PAD_LEFT}" y1="{base}" x2="{WIDTH - PAD_RIGHT}" y2="{base}"/>',
        f'<text class="tick" x="{PAD_LEFT - 4}" y="{base}" text-anchor="end">{escape(lo_text)}</text>',
        f'<text class="tick" x="{PAD_LEFT - 4}" y="{PAD_TOP + 10}" text-anchor="end">{escape(hi_text)}</text>',
        f'<text class="tick" x="{PAD_LEFT}" y="{HEIGHT - 12}">{escape(first)}</text>',
        f'<text class="tick" x="{WIDTH - PAD_RIGHT}" y="{HEIGHT - 12}" text-anchor="end">{escape(last)}</text>',
        *body, "</svg>"])


def bar_chart(title: str, desc: str, labels: Sequence[str], values: Sequence[int], value_text: Sequence[str],
              headers: tuple[str, str]) -> Chart:
    """Bars from a zero line (values may be negative: a house loss), one per label."""
    chart = Chart(title, desc, headers, [(lab, txt) for lab, txt in zip(labels, value_text)])
    if not values:
        return chart
    lo, hi = min(0, *values), max(0, *values)
    n = len(values)
    inner = WIDTH - PAD_LEFT - PAD_RIGHT
    slot = inner / n
    zero = _y(0, lo, hi)
    body = [f'<line class="zero" x1="{PAD_LEFT}" y1="{zero:.1f}" x2="{WIDTH - PAD_RIGHT}" y2="{zero:.1f}"/>']
    for i, (value, lab, txt) in enumerate(zip(values, labels, value_text)):
        top = _y(value, lo, hi)
        y, h = min(top, zero), abs(zero - top)
        cls = "bar neg" if value < 0 else "bar"
        body.append(f'<rect class="{cls}" x="{PAD_LEFT + i * slot + slot * 0.15:.1f}" y="{y:.1f}" '
                    f'width="{max(slot * 0.7, 1):.1f}" height="{max(h, 1):.1f}">'
                    f"<title>{escape(lab)}: {escape(txt)}</title></rect>")
    chart.svg = _frame(title, desc, body, value_text[values.index(lo)] if lo in values else "0",
                       value_text[values.index(hi)] if hi in values else "0", labels[0], labels[-1])
    return chart


def band_chart(title: str, desc: str, labels: Sequence[str], observed: Sequence[int], expected: Sequence[int],
               band: Sequence[int], texts: Sequence[tuple[str, ...]], headers: tuple[str, ...],
               unit: int = 1_000_000, floor: int | None = None) -> Chart:
    """A line of observed values against the expected line and its band (expected ± band),
    e.g. return per unit staked in parts per million; the band cut at `floor` when given
    (a rate is never below zero)."""
    chart = Chart(title, desc, headers, [tuple(t) for t in texts])
    if not observed:
        return chart
    lows = [e - b if floor is None else max(e - b, floor) for e, b in zip(expected, band)]
    highs = [e + b for e, b in zip(expected, band)]
    lo, hi = min(*lows, *observed), max(*highs, *observed)
    n = len(observed)
    upper = " ".join(f"{_x(i, n):.1f},{_y(v, lo, hi):.1f}" for i, v in enumerate(highs))
    lower = " ".join(f"{_x(i, n):.1f},{_y(v, lo, hi):.1f}" for i, v in reversed(list(enumerate(lows))))
    exp_line = " ".join(f"{_x(i, n):.1f},{_y(v, lo, hi):.1f}" for i, v in enumerate(expected))
    obs_line = " ".join(f"{_x(i, n):.1f},{_y(v, lo, hi):.1f}" for i, v in enumerate(observed))
    if n == 1:  # one day: the band as a box and the expected value as a bar across it
        x, top, bottom, mid = _x(0, 1), _y(highs[0], lo, hi), _y(lows[0], lo, hi), _y(expected[0], lo, hi)
        body = [f'<rect class="band" x="{x - 30:.1f}" y="{top:.1f}" width="60" height="{max(bottom - top, 1):.1f}"/>',
                f'<line class="expected" x1="{x - 30:.1f}" y1="{mid:.1f}" x2="{x + 30:.1f}" y2="{mid:.1f}"/>']
    else:
        body = [f'<polygon class="band" points="{upper} {lower}"/>',
                f'<polyline class="expected" points="{exp_line}"/>',
                f'<polyline class="observed" points="{obs_line}"/>']
    body += [f'<circle class="observed" cx="{_x(i, n):.1f}" cy="{_y(v, lo, hi):.1f}" r="3">'
             f"<title>{escape(labels[i])}: {escape(texts[i][1])}</title></circle>" for i, v in enumerate(observed)]
    chart.svg = _frame(title, desc, body, percent(lo, unit), percent(hi, unit), labels[0], labels[-1])
    return chart


def percent(ppm: int, unit: int = 1_000_000) -> str:
    """Parts per `unit` as a percentage with two decimals, from integers (`987654` -> `98.77%`)."""
    hundredths = (abs(ppm) * 10_000 * 2 + unit) // (2 * unit)  # half up
    sign = "-" if ppm < 0 and hundredths else ""
    return f"{sign}{hundredths // 100}.{hundredths % 100:02d}%"

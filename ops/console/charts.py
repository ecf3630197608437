"""Charts drawn on the server as inline SVG (no script, nothing loaded), each with a
text alternative: a <title> and <desc> inside the SVG, a legend naming each mark, and the
figures as a table beside it (the templates print `Chart.rows`).

The SVG has no viewBox: it is as wide as its container and a fixed number of CSS pixels
high, so its text is drawn at its CSS size (12 px) on a phone as on a desk, never scaled
down with the drawing. Horizontal positions are percentages of the width (bars, labels,
points); vertical ones are pixels. Lines through points (a day-by-day series) are drawn in
a nested SVG stretched to the width (preserveAspectRatio="none", strokes not scaled). The
y axis's labels sit in a gutter left of the SVG (the wrapper's padding), at nice steps
(1, 2 or 5 times a power of ten) and with their unit. Categories (up cards, dealers,
days of GGR) are bars; only a series over days is a line.

Why not a library (pygal, matplotlib's SVG backend): both draw into a fixed coordinate
system (pygal: viewBox 0 0 800 600, 10 px axis text), so at 390 px the text shrinks with
the drawing to about 5 px, the very fault this module mends; pygal also emits script
(tooltips, a script loaded from a CDN) unless told not to, random element ids and about
60 KB a chart; matplotlib adds numpy and a second of import for a few rectangles.

Values are integers (minor units, parts per million); only coordinates are rounded.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

PLOT_H = 200  # px: the plot area's height
LABELS_H = 22  # px under the plot for the x labels
TOP = 8  # px above the highest tick, so its label is not cut
TICKS = 5  # about this many steps on the y axis
CHAR_PX = 7.2  # the width of a character of the 12 px labels, a little over the digits' own
NARROW_PX, WIDE_PX = 280, 600  # the plot's least width on a phone (390 px) and on a wider screen
SLOTS_MIN = 6  # fewer categories are centred among this many slots: one bar is not the page's width

Tick = Callable[[int, int], str]  # (value, step) -> its label, with its unit


@dataclass
class Chart:
    title: str
    desc: str
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)  # the text alternative, one row per point
    svg: str = ""
    legend: list[tuple[str, str]] = field(default_factory=list)  # (the mark's class, what it shows)
    y_title: str = ""
    x_title: str = ""

    @property
    def empty(self) -> bool:
        return not self.rows

    @property
    def legend_html(self) -> str:
        items = "".join(f"<li>{_swatch(cls)}{escape(text)}</li>" for cls, text in self.legend)
        return f'<ul class="legend" data-testid="legend">{items}</ul>' if items else ""


# ------------------------------------------------------------------ axes
def nice_step(span: int, ticks: int = TICKS) -> int:
    """The least of 1, 2, 5, 10, 20, 50, ... that cuts `span` into at most `ticks` steps."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step * ticks >= span:
                return m * step
        step *= 10


def nice_axis(lo: int, hi: int) -> tuple[int, int, int]:
    """The axis's ends widened to whole steps, and the step."""
    step = nice_step(max(hi - lo, 1))
    lo, hi = lo // step * step, -(-hi // step) * step
    return lo, max(hi, lo + step), step


def percent_tick(unit: int = 1_000_000) -> Tick:
    """Parts per `unit` as a percentage with the decimals the step needs: `5%`, `2.5%`, `0.25%`."""
    def label(value: int, step: int) -> str:
        places = 0
        while (step * 100 * 10**places) % unit and places < 6:
            places += 1
        scaled = value * 100 * 10**places // unit
        return _decimal(scaled, places) + "%"
    return label


def money_tick(currency: str | None, exponent: int = 2) -> Tick:
    """Minor units as money with the currency: whole units when the step is (`500 EUR`)."""
    def label(value: int, step: int) -> str:
        places = 0 if step % 10**exponent == 0 else exponent
        text = _decimal(value // 10 ** (exponent - places), places)
        return f"{text} {currency}" if currency else text
    return label


def _decimal(scaled: int, places: int) -> str:
    sign = "-" if scaled < 0 else ""
    units, rest = divmod(abs(scaled), 10**places)
    return f"{sign}{units:,}" + (f".{rest:0{places}d}" if places else "")


@dataclass(frozen=True)
class _Frame:
    lo: int
    hi: int
    step: int
    tick: Tick
    n: int

    @property
    def slots(self) -> int:
        return max(self.n, SLOTS_MIN)

    @property
    def first(self) -> float:
        """The slot of the first value: the values centred among the slots."""
        return (self.slots - self.n) / 2

    def y(self, value: int) -> float:
        return TOP + (self.hi - value) * PLOT_H / (self.hi - self.lo)

    def x(self, i: float) -> str:
        """The left of value `i`'s slot (its centre at i + 0.5) as a percentage of the width."""
        return f"{(i + self.first) * 100 / self.slots:.3f}%"

    def width(self, share: float) -> str:
        """`share` of a slot as a percentage of the width."""
        return f"{share * 100 / self.slots:.3f}%"

    def labels(self) -> list[str]:
        return [self.tick(v, self.step) for v in range(self.lo, self.hi + 1, self.step)]

    def gutter(self) -> int:
        return int(max(len(t) for t in self.labels()) * CHAR_PX) + 10

    def overhang(self, labels: Sequence[str]) -> int:
        """Room beside the plot for the first and last x labels: what half of one reaches
        past half its slot, the slot as narrow as on a phone."""
        return max(0, int(max(len(lab) for lab in labels) * CHAR_PX / 2 - NARROW_PX / self.slots / 2) + 2)


def _frame(lo: int, hi: int, tick: Tick, n: int) -> _Frame:
    lo, hi, step = nice_axis(lo, hi)
    return _Frame(lo, hi, step, tick, n)


def _stride(labels: Sequence[str], n: int, width_px: int) -> int:
    """Every how many slots a label fits at a plot `width_px` wide."""
    widest = max(len(lab) for lab in labels) * CHAR_PX * 1.3
    return max(1, -(-int(widest * n) // width_px))


def _svg(f: _Frame, title: str, desc: str, labels: Sequence[str], marks: list[str]) -> str:
    """The plot: grid and y labels at each step, the marks, the x labels under their slots
    (every k-th when they would overlap; more of them where the screen is wide)."""
    grid = []
    for value, text in zip(range(f.lo, f.hi + 1, f.step), f.labels()):
        y = f.y(value)
        cls = "zero" if value == 0 and f.lo < 0 else "gridline"
        grid.append(f'<line class="{cls}" x1="0" x2="100%" y1="{y:.1f}" y2="{y:.1f}"/>'
                    f'<text class="tick y" x="-6" y="{y + 4:.1f}" text-anchor="end">{escape(text)}</text>')
    wide = _stride(labels, f.slots, WIDE_PX)
    narrow = -(-_stride(labels, f.slots, NARROW_PX) // wide) * wide  # a multiple: the phone's labels are shown wide too
    xs = []
    for i, lab in enumerate(labels):
        if i % wide:
            continue
        cls = "tick x" + ("" if i % narrow == 0 else " wide")
        xs.append(f'<text class="{cls}" x="{f.x(i + 0.5)}" y="{TOP + PLOT_H + 16}" '
                  f'text-anchor="middle">{escape(lab)}</text>')
    side = f.overhang(labels)
    return "".join([
        f'<div class="plot" style="padding-left:{max(f.gutter(), side)}px;padding-right:{side}px">',
        f'<svg class="chart" width="100%" height="{TOP + PLOT_H + LABELS_H}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title><desc>{escape(desc)}</desc>", *grid, *marks,
        f'<line class="axis" x1="0" x2="100%" y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H}"/>', *xs, "</svg></div>"])


# ------------------------------------------------------------------ charts
def bar_chart(title: str, desc: str, labels: Sequence[str], values: Sequence[int], value_text: Sequence[str],
              headers: tuple[str, str], tick: Tick, names: tuple[str, str], axes: tuple[str, str] = ("", "")
              ) -> Chart:
    """Bars from a zero line, one per label; a negative value (a house loss) is a bar below
    it in another colour. `names`: the legend's words for a bar above and below zero."""
    chart = Chart(title, desc, headers, [(lab, txt) for lab, txt in zip(labels, value_text)],
                  y_title=axes[0], x_title=axes[1])
    if not values:
        return chart
    f = _frame(min(0, *values), max(0, *values), tick, len(values))
    zero, marks = f.y(0), []
    for i, (value, lab, txt) in enumerate(zip(values, labels, value_text)):
        top = f.y(value)
        marks.append(f'<rect class="bar{" neg" if value < 0 else ""}" x="{f.x(i + 0.15)}" y="{min(top, zero):.1f}" '
                     f'width="{f.width(0.7)}" height="{max(abs(zero - top), 1):.1f}">'
                     f"<title>{escape(lab)}: {escape(txt)}</title></rect>")
    chart.svg = _svg(f, title, desc, labels, marks)
    chart.legend = ([("bar", names[0])] if any(v >= 0 for v in values) else []) + \
        ([("bar neg", names[1])] if any(v < 0 for v in values) else [])
    return chart


@dataclass(frozen=True)
class Series:
    """Observed values against expected ones and a band (expected ± band) around them."""

    labels: Sequence[str]
    observed: Sequence[int]
    expected: Sequence[int]
    band: Sequence[int]
    floor: int | None = None  # the band cut here (a rate is never below 0%)
    ceiling: int | None = None  # nor above 100%

    def lows(self) -> list[int]:
        return [e - b if self.floor is None else max(e - b, self.floor) for e, b in zip(self.expected, self.band)]

    def highs(self) -> list[int]:
        return [e + b if self.ceiling is None else min(e + b, self.ceiling) for e, b in zip(self.expected, self.band)]


def band_chart(title: str, desc: str, s: Series, texts: Sequence[tuple[str, ...]], headers: tuple[str, ...],
               names: tuple[str, str, str], axes: tuple[str, str] = ("", ""), tick: Tick | None = None,
               categories: bool = False, marked: str | None = None) -> Chart:
    """Observed against expected with its band. Over days (`categories` false) the observed
    and expected values are lines through the days (one day: a point); per category (up
    cards, dealers) each is a bar from zero, with the expected value a dashed mark across it
    and the band a box behind it. A bar outside its band is drawn in the alarm colour; the
    `marked` category (the dealer tested) is outlined. `names`: the legend's words for
    observed, expected and band."""
    chart = Chart(title, desc, headers, [tuple(t) for t in texts], y_title=axes[0], x_title=axes[1])
    if not s.observed:
        return chart
    lo = min(*s.lows(), *s.observed) if s.floor is None else s.floor
    f = _frame(lo, max(*s.highs(), *s.observed), tick or percent_tick(), len(s.observed))
    tips = [f"{lab}: {t[1]}" for lab, t in zip(s.labels, texts)]
    if categories or f.n == 1:
        marks, out = _category_marks(f, s, tips, marked, bars=categories)
    else:
        marks, out = _series_marks(f, s, tips), False
    chart.svg = _svg(f, title, desc, s.labels, marks)
    chart.legend = [("bar" if categories else "observed", names[0]), ("expected", names[1]), ("band", names[2])]
    if out:
        chart.legend.append(("bar out", f"{names[0]}, outside the band"))
    if marked is not None and marked in s.labels:
        chart.legend.append(("bar marked", f"{marked} (this test)"))
    return chart


def _category_marks(f: _Frame, s: Series, tips: list[str], marked: str | None,
                    bars: bool) -> tuple[list[str], bool]:
    """Per slot: the band's box, the observed bar from zero (or a point, `bars` false: a
    return of about 95% is not a bar from 0), the expected value's dashed mark."""
    marks, any_out, base = [], False, f.y(max(f.lo, 0))
    for i, (lab, obs, exp, low, high) in enumerate(zip(s.labels, s.observed, s.expected, s.lows(), s.highs())):
        top, out = f.y(obs), bars and not low <= obs <= high
        any_out |= out
        cls = "bar" + (" out" if out else "") + (" marked" if lab == marked else "")
        tip = f"<title>{escape(tips[i])}</title>"
        marks.append(f'<rect class="band" x="{f.x(i + 0.05)}" y="{f.y(high):.1f}" width="{f.width(0.9)}" '
                     f'height="{max(f.y(low) - f.y(high), 1):.1f}"/>')
        marks.append(f'<rect class="{cls}" x="{f.x(i + 0.2)}" y="{min(top, base):.1f}" width="{f.width(0.6)}" '
                     f'height="{max(abs(base - top), 1):.1f}">{tip}</rect>' if bars else
                     f'<circle class="observed" cx="{f.x(i + 0.5)}" cy="{top:.1f}" r="4">{tip}</circle>')
        marks.append(f'<line class="expected" x1="{f.x(i + 0.05)}" x2="{f.x(i + 0.95)}" '
                     f'y1="{f.y(exp):.1f}" y2="{f.y(exp):.1f}"/>')
    return marks, any_out


def _series_marks(f: _Frame, s: Series, tips: list[str]) -> list[str]:
    """Band and lines in a nested SVG stretched to the width (value i's centre at 100·(i + first)
    + 50 of its 100·slots units); the points, with their tooltips, in the outer one."""
    def points(values: Sequence[int], order: Sequence[int]) -> str:
        return " ".join(f"{100 * (i + f.first) + 50:g},{f.y(values[i]):.1f}" for i in order)

    n, forward = f.n, range(f.n)
    stretched = (f'<svg x="0" y="0" width="100%" height="{TOP + PLOT_H}" viewBox="0 0 {100 * f.slots} {TOP + PLOT_H}" '
                 f'preserveAspectRatio="none">'
                 f'<polygon class="band" points="{points(s.highs(), forward)} {points(s.lows(), range(n - 1, -1, -1))}"/>'
                 f'<polyline class="expected" vector-effect="non-scaling-stroke" points="{points(s.expected, forward)}"/>'
                 f'<polyline class="observed" vector-effect="non-scaling-stroke" points="{points(s.observed, forward)}"/>'
                 "</svg>")
    return [stretched] + [f'<circle class="observed" cx="{f.x(i + 0.5)}" cy="{f.y(v):.1f}" r="3">'
                          f"<title>{escape(tips[i])}</title></circle>" for i, v in enumerate(s.observed)]


_SWATCHES = {
    "observed": '<line class="observed" x1="0" x2="22" y1="6" y2="6"/><circle class="observed" cx="11" cy="6" r="3"/>',
    "expected": '<line class="expected" x1="0" x2="22" y1="6" y2="6"/>',
    "band": '<rect class="band" x="0" y="0" width="22" height="12"/>',
}


def _swatch(cls: str) -> str:
    """The legend's small picture of a mark, drawn with the mark's own class."""
    inner = _SWATCHES.get(cls, f'<rect class="{cls}" x="4" y="0" width="14" height="12"/>')
    return f'<svg class="key" width="22" height="12" aria-hidden="true">{inner}</svg>'


def percent(ppm: int, unit: int = 1_000_000) -> str:
    """Parts per `unit` as a percentage with two decimals, from integers (`987654` -> `98.77%`)."""
    hundredths = (abs(ppm) * 10_000 * 2 + unit) // (2 * unit)  # half up
    sign = "-" if ppm < 0 and hundredths else ""
    return f"{sign}{hundredths // 100}.{hundredths % 100:02d}%"

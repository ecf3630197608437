"""The console's charts (ops/console/charts.py) as people read them: y ticks at nice steps
(1, 2 or 5 times a power of ten) with their unit, a legend naming every mark drawn, bars
for categories, and an SVG that takes its container's width with text at its CSS size."""
from __future__ import annotations

import re

import pytest

from ops.console.charts import Series, band_chart, bar_chart, money_tick, nice_axis, percent_tick
from ops.console.pages import ggr_chart, ops_chart, rtp_chart
from projections.queries import GgrRow

Y_TICK = re.compile(r'<text class="tick y"[^>]*>([^<]+)</text>')
X_TICK = re.compile(r'<text class="tick x[^"]*"[^>]*>([^<]+)</text>')


def _steps(values: list[float]) -> set[float]:
    return {round(b - a, 9) for a, b in zip(values, values[1:])}


def _nice(step: float) -> bool:
    """1, 2 or 5 times a power of ten."""
    return f"{step:.10g}".replace(".", "").strip("0") in ("1", "2", "5")


@pytest.mark.parametrize(("lo", "hi", "want"), [
    (0, 23, (0, 25, 5)), (-446_100, 2_238_900, (-1_000_000, 3_000_000, 1_000_000)),
    (950_000, 990_000, (950_000, 990_000, 10_000)), (0, 307_692, (0, 400_000, 100_000)), (7, 7, (7, 8, 1))])
def test_the_axis_ends_on_whole_nice_steps(lo: int, hi: int, want: tuple[int, int, int]) -> None:
    assert nice_axis(lo, hi) == want


def test_tick_labels_carry_their_unit_and_the_decimals_of_the_step() -> None:
    pct, eur = percent_tick(), money_tick("EUR")
    assert [pct(v, s) for v, s in ((50_000, 50_000), (25_000, 5_000), (2_500, 500), (-500_000, 500_000))] == \
        ["5%", "2.5%", "0.25%", "-50%"]
    assert [eur(v, s) for v, s in ((150_000, 50_000), (-150, 50), (0, 100))] == ["1,500 EUR", "-1.50 EUR", "0 EUR"]


def _rtp_rows() -> list[dict[str, object]]:
    """Three days of one baccarat table's Player bets: enough for a line with a band."""
    return [{"day": f"2026-11-2{d}", "table_id": "bacc-1", "dealer_id": "dealer-01", "ruleset_id": "baccarat/live-8d",
             "ruleset_version": 1, "bet_type": "player", "lines": 40, "rounds": 40, "staked_minor": 40_000,
             "returned_minor": 38_000 + 1_000 * d, "rounding_kept": "0",
             "stake_sq_sum": 40 * 1_000**2, "stake_max": 1_000} for d in (1, 2, 3)]


def test_a_band_chart_has_ticks_at_nice_steps_in_percent_and_a_legend_of_its_marks() -> None:
    chart = rtp_chart("Return at bacc-1", _rtp_rows())  # type: ignore[arg-type]
    assert not chart.empty
    ticks = Y_TICK.findall(chart.svg)
    assert len(ticks) >= 3 and all(t.endswith("%") for t in ticks)
    values = [float(t.rstrip("%")) for t in ticks]
    assert len(_steps(values)) == 1 and _nice(_steps(values).pop())
    assert X_TICK.findall(chart.svg)[0] == "2026-11-21"
    legend = dict(chart.legend)
    assert set(legend) == {"observed", "expected", "band"}  # the red line, the dashed line, the band
    assert 'class="polyline observed"' not in chart.svg and '<polyline class="observed"' in chart.svg
    for cls, words in chart.legend:
        assert f'class="{cls}"' in chart.legend_html and words in chart.legend_html
    assert chart.y_title and chart.x_title


def test_the_svg_is_as_wide_as_its_container_and_not_scaled() -> None:
    chart = rtp_chart("Return at bacc-1", _rtp_rows())  # type: ignore[arg-type]
    svg = re.search(r"<svg class=\"chart\"[^>]*>", chart.svg)
    assert svg and 'width="100%"' in svg.group(0) and "viewBox" not in svg.group(0)
    assert "<script" not in chart.svg


def test_categories_are_bars_and_the_tested_dealer_is_marked() -> None:
    rows = [{"dealer_id": f"dealer-{i:02d}", "rounds": 100, "voided": 20 if i == 7 else 1, "human_errors": 0}
            for i in range(1, 31)]
    chart = ops_chart("void_rate", rows, "dealer-07")
    assert "<polyline" not in chart.svg and "<polygon" not in chart.svg  # no line joining unrelated dealers
    assert len(re.findall(r'<rect class="bar[ "]', chart.svg)) == 30
    assert re.search(r'<rect class="bar out marked"[^>]*><title>dealer-07: 20.00%', chart.svg)
    assert [cls for cls, _ in chart.legend] == ["bar", "expected", "band", "bar out", "bar marked"]
    assert dict(chart.legend)["bar marked"] == "dealer-07 (this test)"
    labels = X_TICK.findall(chart.svg)
    assert labels[0] == "dealer-01" and 1 < len(labels) < 30  # every k-th: labels never overlap
    narrow = re.findall(r'<text class="tick x"[^>]*>', chart.svg)
    assert 1 < len(narrow) < len(labels)  # fewer still on a phone (the others class "wide")
    assert all(t.endswith("%") for t in Y_TICK.findall(chart.svg))


def test_a_bar_chart_of_money_has_ticks_in_the_currency_and_names_losses() -> None:
    rows = [GgrRow(f"2026-11-2{d}", "bacc-1", "baccarat", "EUR", 10, 100_000, 90_000, 0, g, "0")
            for d, g in ((1, 12_345), (2, -4_000), (3, 30_000))]
    chart = ggr_chart("bacc-1", rows)
    ticks = Y_TICK.findall(chart.svg)
    assert ticks and all(t.endswith(" EUR") for t in ticks) and "0 EUR" in ticks
    amounts = [float(t.split()[0].replace(",", "")) for t in ticks]
    assert amounts == sorted(amounts) and len(_steps(amounts)) == 1 and _nice(_steps(amounts).pop())
    assert dict(chart.legend) == {"bar": "GGR: the house won", "bar neg": "GGR: the house lost"}
    assert chart.svg.count('<rect class="bar neg"') == 1
    lost = ggr_chart("bacc-1", rows[1:2])
    assert [cls for cls, _ in lost.legend] == ["bar neg"]  # no mark named that is not drawn


def test_one_category_or_one_day_still_draws() -> None:
    one = band_chart("t", "d", Series(["A"], [100], [90], [20], floor=0), [("A", "1")], ("a", "b"),
                     ("O", "E", "B"), categories=True)
    bar = re.search(r'<rect class="bar" x="([\d.]+)%"[^>]*width="([\d.]+)%"', one.svg)
    assert bar and float(bar.group(2)) < 15 and 40 < float(bar.group(1)) < 50  # centred, not the page's width
    day = band_chart("t", "d", Series(["2026-11-21"], [950_000], [940_000], [20_000]), [("d", "x")], ("a", "b"),
                     ("O", "E", "B"))
    assert '<circle class="observed"' in day.svg and "<polyline" not in day.svg
    empty = bar_chart("t", "d", [], [], [], ("a", "b"), money_tick("EUR"), ("w", "l"))
    assert empty.empty and empty.svg == "" and empty.legend_html == ""

"""Every kind of monitor test has its chart on /ui/monitor and on its table's page, drawn from
the test's own view rows: a studio of two blackjack tables, one of them biased
(`ledger simulate --biased-table`), with faults (voids, human errors)."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ledger.store import open_app
from ops.console import data
from ops.gamemath.monitor_stats import Finding
from ops.service.app import Settings, create_app
from ops.sim.simulator import Studio, simulated_rule_sets
from projections.sql import Db
from tests.e2e.console.conftest import sign_in
from tests.e2e.service.conftest import make_keys

BIASED = "bj-live-1"
LEVELS = ("table", "dealer", "table_bet_type", "up_card", "dealer_bust", "void_rate", "human_error_rate")
SECTION = re.compile(r'<section data-testid="finding" data-level="([a-z_]+)".*?</section>', re.S)


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('charts')) / 'ledger.db'}"
    rules = [r for r in simulated_rule_sets() if r.id == "blackjack/live-8d"]
    app = open_app(url)
    try:
        app.ingest([line.rstrip(b"\n") for line in Studio(
            2, 400, 4, 60, rule_sets=rules, biased_tables=frozenset({BIASED})).lines()])
    finally:
        app.close()
    return url, make_keys(url)


@pytest.fixture
def client(studio: tuple[str, dict[str, str]]) -> Iterator[TestClient]:
    url, keys = studio
    with TestClient(create_app(Settings(db_url=url, key_cache_s=0.0))) as c:
        sign_in(c, keys["backoffice"])
        yield c


@pytest.fixture
def report(client: TestClient) -> Iterator[data.MonitorReport]:
    assert client.get("/ui/monitor").status_code == 200  # the views caught up
    db = Db.for_store(client.app.state.reader.backend)  # type: ignore[attr-defined]
    try:
        yield data.monitor_report(db)
    finally:
        db.close()


def _points(section: str, testid: str) -> list[int]:
    return [int(n) for n in re.findall(rf'data-testid="{testid}" data-points="(\d+)"', section)]


def test_every_kind_of_test_has_a_chart_with_its_figures(client: TestClient) -> None:
    page = client.get("/ui/monitor?all=1")
    assert page.status_code == 200
    sections = [(m.group(1), m.group(0)) for m in SECTION.finditer(page.text)]
    assert set(LEVELS) <= {level for level, _ in sections}
    for level, section in sections:
        assert _points(section, "monitor-chart") and _points(section, "monitor-chart")[0] > 0, level
        assert "<svg" in section and "<title>" in section and "<desc>" in section, level
        assert "<script" not in section
        figures = re.findall(r"<td>(-?\d+\.\d\d%)</td>", section)
        assert figures, level  # rates and returns as percentages in the text alternative


def test_the_biased_table_is_flagged_and_its_deal_charts_show_every_up_card(client: TestClient) -> None:
    page = client.get("/ui/monitor").text
    flagged = [(m.group(1), m.group(0)) for m in SECTION.finditer(page)
               if 'class="flagged"' in m.group(0) and f">{BIASED}</a>" in m.group(0)]
    assert flagged
    for level, section in flagged:
        assert _points(section, "monitor-chart")[0] > 0, level
    table = client.get(f"/ui/tables/{BIASED}").text
    assert _points(table, "deal-chart") == [10, 10]  # A, 2..9, T: up cards, then busts by up card
    assert "Up cards at table bj-live-1" in table and "Dealer busts by up card at table bj-live-1" in table
    assert "30.77%" in table  # a ten-value up card: 4/13 of the shoe


def test_a_dealers_rate_chart_marks_that_dealer_among_the_others(client: TestClient) -> None:
    page = client.get("/ui/monitor?all=1").text
    for m in SECTION.finditer(page):
        if m.group(1) in data.OPS_LEVELS:
            dealer = re.search(r"· dealer ([^<\s]+)", m.group(0))
            assert dealer and m.group(0).count("(this test)") >= 2, m.group(0)[:300]  # its point and its row
            assert f"<td>{dealer.group(1)} (this test)</td>" in m.group(0)


def _finding(report: data.MonitorReport, level: str, **who: str) -> Finding:
    found: Finding = next(f for f in report.findings if f.level == level
                          and all(getattr(f, k) == v for k, v in who.items()))
    return found


@pytest.mark.parametrize("level", data.DEAL_LEVELS)
def test_deal_points_count_what_the_test_counts(report: data.MonitorReport, level: str) -> None:
    f = _finding(report, level, table_id=BIASED)
    points = data.deal_points(data.rows_of_finding(report, f), level)
    assert [p.label for p in points] == ["A", "2", "3", "4", "5", "6", "7", "8", "9", "T"]
    if level == "dealer_bust":
        assert sum(p.count for p in points) == f.detail["count"]
        assert sum(p.trials for p in points) == f.detail["rounds"]
    else:
        assert {p.trials for p in points} == {f.detail["rounds"]}
        assert points[0].count + points[-1].count == f.detail["count"]  # the test: aces and tens
        assert [p.expected_ppm for p in points] == [76_923] * 9 + [307_692]
    assert all(p.band_ppm > 0 for p in points)


@pytest.mark.parametrize("level", sorted(data.OPS_LEVELS))
def test_rate_points_are_each_dealers_rate_against_the_rest(report: data.MonitorReport, level: str) -> None:
    tests = [f for f in report.findings if f.level == level]
    points = {p.label: p for p in data.rate_points(report.ops_rows, level)}
    assert sorted(points) == sorted(f.dealer_id for f in tests) and len(points) > 1
    for f in tests:
        p = points[f.dealer_id or ""]
        assert (p.count, p.trials) == (f.detail["count"], f.detail["rounds"])
        assert p.observed_ppm == round(f.detail["rate"] * 1_000_000)


PLAY_DAY = "2026-11-21"  # the simulator's studio day (ops/sim/core.py EPOCH); the store is recorded later


def _days(html: str) -> set[str]:
    return set(re.findall(r"<td>(\d{4}-\d\d-\d\d)</td>", html))


def test_the_charts_days_are_the_gaming_days_of_play(client: TestClient) -> None:
    """Issue 28: the monitor's charts read the day the ledger recorded the rounds, beside a GGR
    chart of the day they were played; both are the gaming day of play now."""
    assert _days(client.get("/ui/monitor?all=1").text) == {PLAY_DAY}
    table = client.get(f"/ui/tables/{BIASED}").text
    for testid in ("ggr-chart", "rtp-chart"):
        chart = table[table.index(f'data-testid="{testid}"'):]
        assert _days(chart[:chart.index("</table>")]) == {PLAY_DAY}, testid


def test_the_monitor_page_checks_a_play_day_and_says_why_a_day_is_empty(client: TestClient) -> None:
    day = client.get(f"/ui/monitor?since={PLAY_DAY}&until=2026-11-22").text
    assert f">{BIASED}</a>" in day and 'class="flagged"' in day and 'data-testid="empty-period"' not in day
    empty = client.get("/ui/monitor?since=2026-11-22&until=2026-11-23").text
    assert 'data-reason="no_play"' in empty and "Nothing tested: no play on those gaming days (2026-11-22" in empty
    assert "0 tests" in empty and 'class="flagged"' not in empty
    future = client.get("/ui/monitor?since=2999-01-01").text
    assert 'data-reason="nothing_recorded"' in future and "nothing recorded yet: the store&#39;s last event" in future
    assert client.get("/ui/monitor?since=2026-11-22&until=2026-11-22").status_code == 422


# ------------------------------------------------------------------ the long page: filter and index
INDEX = re.compile(r'<nav id="index".*?</nav>', re.S)


def _sections(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(0)) for m in SECTION.finditer(text)]


def test_the_monitor_filters_by_kind_table_and_flagged(client: TestClient, report: data.MonitorReport) -> None:
    every = _sections(client.get("/ui/monitor?all=1").text)
    assert len(every) == len(report.findings)
    kind = _sections(client.get("/ui/monitor?all=1&kind=up_card").text)
    assert kind and {level for level, _ in kind} == {"up_card"}
    assert len(kind) == sum(f.level == "up_card" for f in report.findings)
    at = _sections(client.get(f"/ui/monitor?all=1&table={BIASED}").text)
    assert len(at) == sum(f.table_id == BIASED for f in report.findings) > 0
    assert all(f">{BIASED}</a>" in s for _, s in at)
    both = _sections(client.get(f"/ui/monitor?all=1&table={BIASED}&kind=dealer_bust").text)
    assert [level for level, _ in both] == ["dealer_bust"]
    flagged = _sections(client.get(f"/ui/monitor?all=&table={BIASED}").text)
    assert flagged and all('class="flagged"' in s for _, s in flagged)
    assert len(flagged) == sum(f.flagged and f.table_id == BIASED for f in report.findings)
    none = client.get("/ui/monitor?all=1&table=no-such-table")
    assert _sections(none.text) == [] and "No test matches the filter." in none.text


def test_the_filter_is_a_get_form_that_keeps_its_choices(client: TestClient) -> None:
    page = client.get(f"/ui/monitor?all=1&table={BIASED}&kind=up_card").text
    form = re.search(r'<form class="filters" method="get" action="/ui/monitor".*?</form>', page, re.S)
    assert form and "<script" not in page
    assert re.search(r'<option value="1" selected>Every test</option>', form.group(0))
    assert re.search(rf'<option value="{BIASED}" selected>', form.group(0))
    assert re.search(r'<option value="up_card" selected>', form.group(0))


def test_an_unknown_kind_is_refused(client: TestClient) -> None:
    page = client.get("/ui/monitor?kind=nonsense")
    assert page.status_code == 422 and "kind must be one of" in page.text


@pytest.mark.parametrize("query", ["all=1", "", f"all=1&table={BIASED}"])
def test_every_index_entry_links_to_its_test_on_the_page(client: TestClient, query: str) -> None:
    page = client.get(f"/ui/monitor?{query}").text
    index = INDEX.search(page)
    assert index
    anchors = re.findall(r'<a href="#([^"]+)">', index.group(0))
    sections = _sections(page)
    assert len(anchors) == len(sections) > 0
    for anchor, (_, section) in zip(anchors, sections):
        assert page.count(f'id="{anchor}"') == 1 and f'id="{anchor}"' in section
        assert re.fullmatch(r"test-[0-9a-f]{12}", anchor)
    every = re.findall(r'<a href="#([^"]+)">', INDEX.search(client.get("/ui/monitor?all=1").text).group(0))  # type: ignore[union-attr]
    assert set(anchors) <= set(every)  # the same test keeps its anchor whatever the filter

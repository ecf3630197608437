"""The player page tells the player's own story (issue 28 item 2): on a simulated studio with
voids and reversals, every page of every player's rounds, read as a person reads them (the
money texts), adds up: before + net = after on each row, net = returned + refunded - staked,
each row starts where the one before it ended, on this page or the next; the period's totals
are the sums of every page's rows, and with no period the closing balance is the account's.
The round page says what each correction changed."""
from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from ops.console import data
from tests.e2e.console.conftest import ConsoleStore, sign_in

ROW = re.compile(r'<tr data-round="([^"]*)" data-currency="([^"]*)">(.*?)</tr>', re.S)
TOTAL = re.compile(r'<tr data-testid="period-total" data-currency="([^"]*)">(.*?)</tr>', re.S)
FIELD = re.compile(r'data-field="(\w+)">([^<]*)<')
MONEY = re.compile(r"^(-?)([\d,]+)\.(\d\d) ([A-Z]{3})$")


def minor(text: str, currency: str) -> int:
    """`-1,234.56 EUR` -> -123456: the page shows money, the test adds it up."""
    found = MONEY.match(html.unescape(text).strip())
    assert found and found.group(4) == currency, text
    value = int(found.group(2).replace(",", "")) * 100 + int(found.group(3))
    return -value if found.group(1) else value


def fields(cells: str, currency: str) -> dict[str, int]:
    return {name: minor(text, currency) for name, text in FIELD.findall(cells)
            if name in ("staked", "returned", "refunded", "net", "before", "after")}


@pytest.fixture
def signed_in(client: TestClient, console_store: ConsoleStore) -> Iterator[TestClient]:
    sign_in(client, console_store.keys["backoffice"])
    yield client


def pages(client: TestClient, player: str, query: str = "") -> Iterator[str]:
    """Every page of the player's story, newest first (page 1), as HTML."""
    page = 1
    while True:
        text = client.get(f"/ui/players/{player}?page={page}{query}").text
        yield text
        if 'rel="prev"' not in text:  # no older page
            return
        page += 1


def test_every_page_of_every_player_adds_up(signed_in: TestClient, console_store: ConsoleStore,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data, "PLAYER_ROUNDS_PAGE", 4)  # many pages from a small studio
    from ledger.eventlog import EventLog
    from projections import queries
    from projections.runner import Projector

    log = EventLog.open(console_store.url)
    projector = Projector(log)
    try:
        projector.catch_up()
        accounts = {(b.owner, b.currency): b.balance_minor
                    for b in queries.balances(projector.db, kind="player").accounts}
    finally:
        projector.close()
        log.close()
    players = sorted({p for p, _ in accounts})
    walked = corrected = 0
    for player in players:
        rows: list[tuple[str, str, dict[str, int]]] = []
        totals: dict[str, dict[str, int]] = {}
        for text in pages(signed_in, player):  # newest page first: its rows go after the older ones
            on_page = [(ref, cur, fields(cells, cur)) for ref, cur, cells in ROW.findall(text)]
            assert len(on_page) <= 4
            rows = on_page + rows
            page_totals = {cur: fields(cells, cur) for cur, cells in TOTAL.findall(text)}
            assert not totals or page_totals == totals  # the period's totals on every page
            totals = page_totals
            corrected += text.count('data-field="correction"')
        last: dict[str, int] = {}
        for ref, cur, f in rows:
            assert f["net"] == f["returned"] + f["refunded"] - f["staked"], (player, ref)
            assert f["after"] == f["before"] + f["net"], (player, ref)
            assert f["before"] == last.get(cur, totals[cur]["before"]), (player, ref)  # from the row before it
            last[cur] = f["after"]
        for cur, t in totals.items():
            mine = [f for _, c, f in rows if c == cur]
            for name in ("staked", "returned", "refunded", "net"):
                assert t[name] == sum(f[name] for f in mine), (player, name)
            assert t["before"] == 0 and t["after"] == last[cur] == accounts[(player, cur)], (player, cur)
        walked += len(rows)
    assert walked > 100 and corrected >= 2  # not vacuous: many rows, corrected rounds among them


def test_a_period_opens_with_the_balance_of_the_rounds_before_it(signed_in: TestClient) -> None:
    """p0006 played on 2026-11-21 only: from the next day on, no round, and the period opens and
    closes with the balance the rounds before it left (the last row of the whole story)."""
    whole = next(pages(signed_in, "p0006"))
    (cur, cells), = TOTAL.findall(whole)
    closing = fields(cells, cur)["after"]
    assert closing != 0 and fields(ROW.findall(whole)[-1][2], cur)["after"] == closing
    later = next(pages(signed_in, "p0006", "&since=2026-11-22"))
    assert not ROW.findall(later) and "No rounds in this period." in later
    (cur, cells), = TOTAL.findall(later)
    assert fields(cells, cur) == {"staked": 0, "returned": 0, "refunded": 0, "net": 0, "before": closing,
                                  "after": closing}
    assert "Period totals, 0 rounds on every page (EUR)" in later


def test_a_corrected_round_says_so_in_its_row(signed_in: TestClient) -> None:
    text = "".join(pages(signed_in, "alice"))
    row = next(cells for ref, _, cells in ROW.findall(text) if ref == "dispute-tp#1")
    assert "voided (corrected)" in row
    assert ("corrected: settlement 1 reversed (it had returned 19.50 EUR); then voided: refunded 10.00 EUR"
            in html.unescape(row))
    f = fields(row, "EUR")
    assert (f["staked"], f["returned"], f["refunded"], f["net"]) == (1000, 0, 1000, 0)  # the void is in force


def test_the_round_page_says_what_each_correction_changed(signed_in: TestClient) -> None:
    same = html.unescape(signed_in.get("/ui/rounds/dispute-rs%231").text)
    assert ('What the correction changed: <span data-field="changed">changed nothing: settlement 2 settles '
            "every bet as settlement 1 did (same outcomes, stakes and returns)</span>") in same
    voided = html.unescape(signed_in.get("/ui/rounds/dispute-tp%231").text)
    assert ("every bet's result of settlement 1 replaced by the refund of what it put in (void)" in voided)
    assert ('<li data-bet="tp-a">tp-a (alice, player_a): win, staked 10.00 EUR, returned 19.50 EUR -> '
            "refunded 10.00 EUR (void)</li>") in voided

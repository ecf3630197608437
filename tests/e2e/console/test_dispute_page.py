"""The dispute page in a real headless browser (Playwright driving Debian's Chromium):
what a person sees for a split blackjack round with a bet behind, a baccarat round and a
voided round; the step control walked through every step, each step's cards and facts
compared with `ledger replay --json`; every amount on the page equal to the JSON's,
formatted from integers. Screenshots go to out/test-artifacts/ (gitignored).

The page is made from the store by `ledger replay --html` (SQLite; the replay document
itself is tested on both stores by the bundle and replay tests)."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.money import format_minor
from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main as cli
from projections.replay_page import RoundNotFound, render_round_html
from tests.support.dispute_rounds import (
    BACCARAT,
    RESETTLED,
    REVERSED_VOIDED,
    SPLIT,
    TOMBSTONE,
    VOIDED,
    ingest_corrections,
    ingest_three,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).parents[3] / "out" / "test-artifacts"


def _unavailable(why: str) -> None:
    pytest.fail(f"the browser tests cannot run (bash ops/deploy/test-services.sh installs Chromium): {why}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('dispute') / 'ledger.db'}"
    app = open_app(url)
    ingest_three(app)
    app.close()
    return url


def replay_json(url: str, ref: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert cli(["replay", ref, "--db", url, "--json", "--proof"]) == 0
    return json.loads(capsys.readouterr().out)


def open_page(browser: Any, url: str, ref: str, tmp_path: Path) -> tuple[Any, list[str]]:
    html = tmp_path / "page.html"
    assert cli(["replay", ref, "--db", url, "--html", str(html)]) == 0
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("request", lambda r: problems.append(f"request {r.url}") if not r.url.startswith("file:") else None)
    page.goto(html.as_uri())
    page.wait_for_selector("body[data-ready=true]")
    return page, problems


def hands(state: dict[str, Any] | None) -> dict[str, list[str]]:
    """The hands the page must draw for a model view (as its script reads them)."""
    out: dict[str, list[str]] = {}
    for key, value in (state or {}).items():
        if isinstance(value, dict) and isinstance(value.get("cards"), list):
            out[key] = value["cards"]
    for hand in (state or {}).get("hands") or []:
        out[hand["name"]] = hand["cards"]
    if (state or {}).get("burn"):
        out["burn"] = state["burn"]  # type: ignore[index]
    return out


def drawn(page: Any) -> dict[str, list[str]]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#felt .hand')].map(
        h => [h.dataset.hand, [...h.querySelectorAll('.card')].map(c => c.dataset.card)]))""")


def text(page: Any, selector: str) -> str:
    return page.locator(selector).inner_text().strip()


def walk_every_step(page: Any, doc: dict[str, Any]) -> None:
    """First, then Next through the whole timeline: each step's facts and cards as the JSON says."""
    steps = doc["steps"]
    page.click("#first")
    assert page.locator("#first").is_disabled() and page.locator("#prev").is_disabled()
    for i, step in enumerate(steps, 1):
        if i > 1:
            page.click("#next")
        assert text(page, "#counter") == f"step {i} of {len(steps)}"
        assert text(page, "#now-event") == step["event"]
        assert text(page, "#now-text") == step["text"]
        assert text(page, "#now-position") == str(step["position"])
        assert text(page, "#now-server") == step["server_time"]
        assert text(page, "#now-studio") == (step["studio_time"] or "\u2014")
        assert text(page, "#now-source") == (step["source"] or "\u2014")
        assert drawn(page) == hands(step["state"]), f"step {i}"
        assert page.locator("#timeline-body tr.current").get_attribute("data-step") == str(i)
    assert page.locator("#next").is_disabled()


def settlement_on_page(page: Any) -> list[tuple[str, str, str, str]]:
    return [tuple(row) for row in page.evaluate("""() => [...document.querySelectorAll('#settlement-body tr[data-bet]')].map(r => [
        r.dataset.bet, r.querySelector('[data-field=staked]').textContent,
        r.querySelector('[data-field=returned]').textContent, r.querySelector('[data-field=net]').textContent])""")]


def money_in_json(doc: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    cur = doc["currency"]
    return [(c["bet_id"], format_minor(c["recorded"]["staked_minor"], cur),
             format_minor(c["recorded"]["returned_minor"], cur),
             format_minor(c["recorded"]["returned_minor"] - c["recorded"]["staked_minor"], cur))
            for c in doc["results"]]


def proof_on_page(page: Any) -> dict[str, str]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#proof-body tr')].map(
        r => [r.dataset.position, r.querySelector('.mono').textContent]))""")


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_split_blackjack_round_with_bet_behind(browser: Any, store: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    doc = replay_json(store, SPLIT, capsys)
    page, problems = open_page(browser, store, SPLIT, tmp_path)
    assert "Round dispute-bj#1" in text(page, "#title") and "blackjack" in text(page, "#title")
    assert text(page, "[data-testid=verdict]").startswith("No findings")
    # The last step shows the finished table: two split hands, the dealer's bust.
    assert drawn(page) == {"dealer": ["6H", "TD", "9H"], "seat:1.1": ["8S", "TS"], "seat:1.2": ["8D", "9C"]}
    assert "total 25" in text(page, "[data-hand=dealer]")
    assert "bb 5.00 EUR (follow_split)" in text(page, "[data-hand='seat:1.2']")
    assert page.locator("[data-card=TS] .tl").inner_text().replace("\n", "") == "10\u2660"
    assert "red" in (page.locator("[data-card='6H']").get_attribute("class") or "")
    walk_every_step(page, doc)
    page.locator("#timeline-body tr[data-step='9']").click()  # the bet behind follows the split
    assert text(page, "#now-event") == "FollowDecided" and text(page, "#now-source") == "player"
    assert "p2 adds 5.00 EUR (follow_split)" in text(page, "#now-text")
    page.locator("#slider").fill("6")
    assert text(page, "#counter") == "step 6 of 16"
    page.keyboard.press("ArrowRight")
    assert text(page, "#counter") == "step 7 of 16"
    assert settlement_on_page(page) == money_in_json(doc)
    assert settlement_on_page(page) == [("m1", "20.00 EUR", "40.00 EUR", "20.00 EUR"),
                                        ("bb", "10.00 EUR", "20.00 EUR", "10.00 EUR")]
    assert "seat:1.1 18 vs dealer bust: win 1:1" in text(page, "#settlement-body tr[data-bet=m1]")
    assert "blackjack/live-8d v1" in text(page, "#rule-note") and doc["ruleset"]["ruleset_hash"] in text(page, "#rule-note")
    assert page.locator("#refunds-section").is_hidden()
    assert proof_on_page(page) == {str(p): e["hash"] for p, e in doc["proof"]["events"].items()}
    assert doc["proof"]["head_hash"] in text(page, "[data-testid=proof-head]")
    page.click("#last")
    screenshot(page, "dispute-split-blackjack")
    assert problems == []
    page.close()


def test_voided_round_shows_pause_void_and_refunds(browser: Any, store: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    doc = replay_json(store, VOIDED, capsys)
    page, problems = open_page(browser, store, VOIDED, tmp_path)
    walk_every_step(page, doc)
    assert text(page, "#now-event") == "Voided" and text(page, "#now-source") == "supervisor-1"
    assert "VOIDED: system_error" in text(page, "#now-text")
    assert page.locator("#timeline-body td.ev-Paused").count() == 1
    assert page.locator("#timeline-body td.ev-Interrupted").count() == 1  # alice's disconnect leaves a trace
    row = page.locator("#timeline-body tr", has=page.locator("td.ev-Interrupted"))
    assert "player_connection_lost of player alice" in row.inner_text()
    assert text(page, "#settlement-body") == "No settlement recorded."
    refunds = page.evaluate("""() => [...document.querySelectorAll('#refunds-body tr')].map(
        r => [r.dataset.bet, r.querySelector('[data-field=refunded]').textContent])""")
    assert refunds == [[r["bet_id"], format_minor(r["amount_minor"], "EUR")] for r in doc["refunds"]]
    assert refunds == [["v1", "10.00 EUR"], ["v2", "3.50 EUR"]]
    screenshot(page, "dispute-voided")
    assert problems == []
    page.close()


def test_baccarat_round(browser: Any, store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = replay_json(store, BACCARAT, capsys)
    page, problems = open_page(browser, store, BACCARAT, tmp_path)
    assert drawn(page) == {"player": ["KS", "8D"], "banker": ["2D", "3C"], "burn": ["AS", "5H"]}
    assert "total 8" in text(page, "[data-hand=player]") and "total 5" in text(page, "[data-hand=banker]")
    walk_every_step(page, doc)
    assert settlement_on_page(page) == money_in_json(doc)
    assert settlement_on_page(page) == [("bc-p", "10.00 EUR", "20.00 EUR", "10.00 EUR"),
                                        ("bc-b", "20.00 EUR", "0.00 EUR", "-20.00 EUR")]
    screenshot(page, "dispute-baccarat")
    assert problems == []
    page.close()


def test_render_round_html_for_the_service(store: str) -> None:
    log = EventLog.open(store)
    html = render_round_html(log, SPLIT)
    assert html.startswith("<!DOCTYPE html>") and "<title>Round dispute-bj#1: dispute replay</title>" in html
    assert "http://" not in html and "https://" not in html  # nothing to fetch
    with pytest.raises(RoundNotFound):
        render_round_html(log, "nowhere#1")


def test_data_cannot_close_the_script_element() -> None:
    from projections.replay_page import embedded_json

    assert "</script>" not in embedded_json({"note": "</script><script>alert(1)</script>"})
    assert json.loads(embedded_json({"note": "</script> & <!--"})) == {"note": "</script> & <!--"}


# ------------------------------------------------------------------ corrected rounds (issue 20)
# What a handler reads must say what is in force and what was reversed: never a reversed
# win shown as the result, the refunds beside the bets, each player's final net.


@pytest.fixture(scope="module")
def corrected(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('corrected') / 'ledger.db'}"
    app = open_app(url)
    ingest_corrections(app)
    app.close()
    return url


def bet_row(page: Any, bet_id: str) -> str:
    return text(page, f"#bets-body tr[data-bet='{bet_id}']")


def test_reversed_then_voided_round(browser: Any, corrected: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    doc = replay_json(corrected, REVERSED_VOIDED, capsys)
    page, problems = open_page(browser, corrected, REVERSED_VOIDED, tmp_path)
    headline = text(page, "[data-testid=headline]")
    assert headline.startswith("VOIDED after settlement 1 was reversed: human_error by supervisor-1")
    assert "No result is in force" in headline
    assert "A: Pair of kings, kicker 2 (pair), win" in text(page, "[data-testid=hands]")
    corrections = text(page, "[data-testid=corrections]")
    assert "Settlement #1 at position" in corrections and "REVERSED by supervisor-1" in corrections
    assert "wrong card keyed; then voided" in corrections and "refunded 16.00 EUR" in corrections
    # alice's win of settlement 1 is shown reversed, beside her refund, which is what stands.
    row = bet_row(page, "tp-a")
    assert "refunded 10.00 EUR (void)" in row and "settlement #1: win, returned 19.50 EUR \u2014 reversed by supervisor-1" in row
    assert text(page, "#players-body tr[data-player=alice] [data-field=final-net]") == "0.00 EUR"
    settled_row = text(page, "#settlement-body tr[data-bet=tp-a]")
    assert "REVERSED (not in force)" in settled_row and "in force" not in settled_row.replace("not in force", "")
    assert page.locator("#settlement-body tr.reversed").count() == len(doc["results"]) == 3
    assert text(page, "#now-phase") == "voided"
    assert "Pair of kings, kicker 2 (pair)" in text(page, "[data-hand=A]")  # the rank on the tile
    assert "High Card A-7-4 (high card)" in text(page, "[data-hand=B]")
    assert "status voided" in text(page, "#subtitle")
    walk_every_step(page, doc)
    screenshot(page, "dispute-reversed-voided")
    assert problems == []
    page.close()


def test_reversed_then_resettled_round(browser: Any, corrected: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    doc = replay_json(corrected, RESETTLED, capsys)
    page, problems = open_page(browser, corrected, RESETTLED, tmp_path)
    assert text(page, "[data-testid=headline]") == \
        "Player wins 8\u20135 (settlement 2 in force after settlement 1 was reversed)"
    corrections = text(page, "[data-testid=corrections]")
    assert "Settlement #1" in corrections and "REVERSED by supervisor-1" in corrections
    assert "then settled again (settlement 2)" in corrections
    assert "Settlement #2" in corrections and "IN FORCE, returned 20.00 EUR" in corrections
    row = bet_row(page, "bc-p")
    assert "win, returned 20.00 EUR (settlement #2)" in row and "settlement #1: win, returned 20.00 EUR" in row
    assert text(page, "#players-body tr[data-player=alice] [data-field=final-net]") == "10.00 EUR"
    assert text(page, "#players-body tr[data-player=bob] [data-field=final-net]") == "-20.00 EUR"
    statuses = page.evaluate("""() => [...document.querySelectorAll('#settlement-body tr[data-bet]')].map(
        r => [r.dataset.settlement, r.dataset.bet, r.querySelector('td').innerText.split('\\n')[1]])""")
    assert statuses == [["1", "bc-p", "REVERSED (not in force)"], ["1", "bc-b", "REVERSED (not in force)"],
                        ["2", "bc-p", "in force"], ["2", "bc-b", "in force"]]
    assert "Natural 8" in text(page, "[data-hand=player]")
    assert settlement_on_page(page) == money_in_json(doc)
    screenshot(page, "dispute-reversed-resettled")
    assert problems == []
    page.close()


def test_tombstone_page(browser: Any, corrected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = replay_json(corrected, TOMBSTONE, capsys)
    page, problems = open_page(browser, corrected, TOMBSTONE, tmp_path)
    assert text(page, "#title") == "Round dispute-tomb#7 \u00b7 voided before it opened"
    assert page.title() == "Round dispute-tomb#7: dispute replay"
    sub = text(page, "#subtitle")
    assert "never opened: no rule set, no currency" in sub and "null" not in sub and "?" not in sub
    assert text(page, "[data-testid=headline]").startswith("VOIDED before it opened: system_error by supervisor-1")
    facts = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#tombstone dt')].map(
        dt => [dt.textContent, dt.nextElementSibling.textContent]))""")
    assert facts["Table"] == "dispute-tomb" and facts["Round number"] == "7"
    assert facts["Cause"] == "system_error" and facts["Voided by"] == "supervisor-1" and facts["Note"] == "test void"
    assert facts["Studio time"] == "2024-05-01T12:00:01+00:00" and facts["Server time"] == doc["tombstone"]["server_time"]
    assert "null" not in text(page, "main") and "No rule set: the round was voided before it opened." in text(page, "#rule-note")
    assert text(page, "#now-phase") == "voided"
    assert page.locator("#bets-section").is_hidden()
    screenshot(page, "dispute-tombstone")
    assert problems == []
    page.close()


def test_one_operators_page_of_a_shared_round(browser: Any, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30: `ledger replay --html --operator OP2` of a round where three operators' players
    bet: the page draws (no script error), steps through the redacted document, says how many
    bets the other operators placed and their total, and shows none of their bet ids."""
    from ops.sim.simulator import Studio

    lines = list(Studio(3, 2, seed=3, operators=3).lines())
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    app = open_app(url)
    app.ingest(lines)
    app.close()
    bets = [json.loads(x) for x in lines if b'"place_bet"' in x]
    rounds: dict[str, set[str]] = {}
    for b in bets:
        rounds.setdefault(f"{b['table_id']}#{b['round_no']}", set()).add(b["operator_id"])
    ref = next(r for r, ops in sorted(rounds.items()) if "OP2" in ops and len(ops) > 1)
    theirs = [b for b in bets if f"{b['table_id']}#{b['round_no']}" == ref and b["operator_id"] != "OP2"]
    assert cli(["replay", ref, "--db", url, "--json", "--proof", "--operator", "OP2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    html = tmp_path / "page.html"
    assert cli(["replay", ref, "--db", url, "--html", str(html), "--operator", "OP2"]) == 0
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(html.as_uri())
    page.wait_for_selector("body[data-ready=true]")
    walk_every_step(page, doc)
    others = text(page, "#others-line")
    assert others.startswith(f"Other operators' players: {len(theirs)} bet") and "in all" in others, others
    words = set(re.findall(r"[\w~-]+", page.content()))  # whole ids: b1 is no part of b11
    assert not {b["bet_id"] for b in theirs} & words
    screenshot(page, "dispute-one-operator")
    assert problems == []
    page.close()

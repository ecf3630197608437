"""The console in a real headless browser (Playwright driving Debian's Chromium) against
`ledger serve`'s app on a free port of 127.0.0.1: what a back-office person does, with
JavaScript off (every read must work without it); every page at phone width (390 px)
without horizontal scrolling and reachable by keyboard. Every request the browser makes
is recorded: one to anywhere but this server fails the test."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.money import format_minor
from ops.cli import main as cli
from ops.service.app import Settings
from tests.e2e.console.conftest import ConsoleStore
from tests.e2e.console.test_dispute_page import CHROMIUM, CHROMIUM_ARGS, screenshot
from tests.e2e.service.conftest import LiveServer

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(console_store: ConsoleStore) -> Iterator[str]:
    with LiveServer(Settings(db_url=console_store.url, key_cache_s=0.5)) as live:
        yield live.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright  # never skipped: a missing browser fails here

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing (apt-get install -y chromium)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Visit:
    """A browser context on the server, every request it makes checked to stay on it."""

    def __init__(self, browser: Any, server: str, **options: Any) -> None:
        self.server, self.elsewhere = server, []
        self.context = browser.new_context(**options)
        self.context.on("request", self._check)
        self.page = self.context.new_page()

    def _check(self, request: Any) -> None:
        if not request.url.startswith(self.server + "/"):
            self.elsewhere.append(request.url)

    def go(self, path: str) -> Any:
        self.page.goto(self.server + path)
        return self.page

    def close(self) -> None:
        self.context.close()
        assert self.elsewhere == [], f"requests left 127.0.0.1: {self.elsewhere}"


@pytest.fixture
def visit(browser: Any, server: str) -> Iterator[Any]:
    opened: list[Visit] = []

    def make(**options: Any) -> Visit:
        v = Visit(browser, server, **options)
        opened.append(v)
        return v

    yield make
    for v in opened:
        v.close()


def sign_in(v: Visit, key: str) -> Any:
    page = v.go("/ui/")
    page.fill("#key", key)
    page.press("#key", "Enter")  # the keyboard sends the form
    page.wait_for_load_state()
    return page


def replay(url: str, ref: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert cli(["replay", ref, "--db", url, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).inner_text()).strip()


def test_a_studio_key_cannot_sign_in(visit: Any, console_store: ConsoleStore) -> None:
    v = visit(java_script_enabled=False)
    page = sign_in(v, console_store.keys["studio"])
    assert "A studio key cannot use the console" in text(page, "[data-testid=signin-error]")
    page.goto(v.server + "/ui/rounds")
    assert page.url.startswith(v.server + "/ui/?next=")


def test_a_dispute_handler_works_through_the_console(visit: Any, console_store: ConsoleStore,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    v = visit(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page = sign_in(v, console_store.keys["backoffice"])
    assert page.url == v.server + "/ui/rounds" and "backoffice" in text(page, "[data-testid=who]")

    # search rounds by player: alice played the voided round and the reversed-then-voided one
    page.fill("#f-player", "alice")
    page.click("button:has-text('Search')")
    rows = page.locator("[data-testid=rounds] tbody tr")
    found = {rows.nth(i).get_attribute("data-round") for i in range(rows.count())}
    assert {"dispute-void#1", "dispute-tp#1"} <= found
    voided = page.locator("tr[data-round='dispute-void#1']")
    assert text(voided, "[data-field=status]").startswith("voided")
    # by player: alice's own stake, result and net (issue 28), not the round's totals
    assert text(voided, "[data-field=player-stake]") == "10.00 EUR"
    assert text(voided, "[data-field=player-result]").startswith("refunded")
    assert text(voided, "[data-field=player-net]") == "0.00 EUR"

    # the voided round: what is in force is the void and its refunds
    doc = replay(console_store.url, "dispute-void#1", capsys)
    voided.locator("a").first.click()
    assert "Round dispute-void#1" in text(page, "[data-testid=title]")
    assert text(page, "[data-testid=status]") == "voided"
    assert "VOIDED" in text(page, "[data-testid=corrections]")
    refunds = page.locator("#refunds-body tr")
    assert [(refunds.nth(i).get_attribute("data-bet"), text(refunds.nth(i), "[data-field=refunded]"))
            for i in range(refunds.count())] == [(r["bet_id"], format_minor(r["amount_minor"], "EUR"))
                                                 for r in doc["refunds"]]
    assert text(page, "#settlement-body") == "No settlement recorded."

    # step the timeline from the first step with the Next link, each step as the replay says
    page.click("#first")
    for i, step in enumerate(doc["steps"], 1):
        assert text(page, "#counter") == f"step {i} of {len(doc['steps'])}"
        assert text(page, "#now-event") == step["event"] and text(page, "#now-text") == step["text"]
        assert page.locator("#timeline-body tr.current").get_attribute("data-step") == str(i)
        if i < len(doc["steps"]):
            page.click("#next")
    assert page.locator("#next").get_attribute("aria-disabled") == "true"
    burn = page.locator("[data-hand=burn] .card")
    assert [burn.nth(i).get_attribute("data-card") for i in range(burn.count())] == ["AS", "5H"]

    # the reversed round: the reversed settlement is shown, and not as what is in force
    doc = replay(console_store.url, "dispute-tp#1", capsys)
    page.goto(v.server + "/ui/rounds/dispute-tp%231")
    assert text(page, "[data-testid=status]") == "voided"
    corrections = text(page, "[data-testid=corrections]")
    assert "Settlement #1" in corrections and "REVERSED" in corrections and "IN FORCE" not in corrections
    lines = page.locator("#settlement-body tr[data-settlement]")
    assert lines.count() == len(doc["results"]) > 0
    assert {lines.nth(i).get_attribute("data-status") for i in range(lines.count())} == {"reversed"}
    for bet in doc["bets"]:  # each bet: its refund in force, the reversed win beside it
        row = page.locator(f"[data-testid=bets-in-force] tr[data-bet='{bet['bet_id']}']")
        assert text(row, "[data-field=now]") == f"refunded {format_minor(bet['in_force']['amount_minor'], 'EUR')} (void)"
        assert ("reversed by" in text(row, "[data-field=reversed]")) == bool(bet["reversed"])
    assert any(bet["reversed"] for bet in doc["bets"])
    assert doc["headline"]["text"] == text(page, "[data-testid=headline]")
    screenshot(page, "console-reversed-round")

    # the resettled round: settlement 2 in force, settlement 1 reversed
    page.goto(v.server + "/ui/rounds/dispute-rs%231")
    statuses = page.locator("#settlement-body tr[data-settlement]")
    seen = {(statuses.nth(i).get_attribute("data-settlement"), statuses.nth(i).get_attribute("data-status"))
            for i in range(statuses.count())}
    assert ("1", "reversed") in seen and ("2", "in_force") in seen

    # the bundle button gives the round's zip
    page.goto(v.server + "/ui/rounds/dispute-void%231")
    with page.expect_download() as download:
        page.click("[data-testid=bundle]")
    assert download.value.suggested_filename == "round-dispute-void-1.zip"

    # the player, from the round's link
    page.click("[data-testid=player-links] a:has-text('alice')")
    assert page.url.endswith("/ui/players/alice")
    recall = page.locator("[data-testid=recall] tbody tr[data-round]")
    assert {recall.nth(i).get_attribute("data-round") for i in range(recall.count())} >= {"dispute-void#1", "dispute-tp#1"}
    assert "10.00 EUR" in text(page, "[data-testid=player-refunds]")
    # the player's own story: each row as drawn adds up, and starts where the row above it ended
    def cents(row: Any, field: str) -> int:
        amount = text(row, f"[data-field={field}]").removesuffix(" EUR").replace(",", "")
        return round(float(amount) * 100)

    previous = None
    for i in range(recall.count()):
        row = recall.nth(i)
        assert cents(row, "after") == cents(row, "before") + cents(row, "net")
        assert previous is None or cents(row, "before") == previous
        previous = cents(row, "after")
    assert cents(page.locator("[data-testid=period-total]"), "after") == previous
    tp = page.locator("[data-testid=recall] tr[data-round='dispute-tp#1']")
    assert text(tp, "[data-field=correction]").startswith("corrected: settlement 1 reversed")
    screenshot(page, "console-player-story")

    # a table with a chart of its days
    page.goto(v.server + "/ui/rounds?table=bacc-1")
    page.locator("[data-testid=rounds] tbody tr").first.locator("td").nth(1).locator("a").click()
    assert page.url.endswith("/ui/tables/bacc-1")
    chart = page.locator("[data-testid=ggr-chart]")
    assert int(chart.get_attribute("data-points") or 0) > 0 and chart.locator("svg rect.bar").count() > 0
    assert "GGR per gaming day" in (chart.locator("svg title").first.text_content() or "")
    rtp = page.locator("[data-testid=rtp-chart]")
    assert int(rtp.get_attribute("data-points") or 0) > 0 and rtp.locator("svg circle.observed").count() > 0
    screenshot(page, "console-table")

    # the monitor: every test, charts with data and links to their rounds
    page.goto(v.server + "/ui/monitor?all=1")
    assert page.locator("[data-testid=finding]").count() > 0
    assert page.locator("[data-testid=monitor-chart] svg.chart").count() > 0
    for level in ("table", "up_card", "dealer_bust", "void_rate", "human_error_rate"):  # every kind has its chart
        kind = page.locator(f"[data-testid=finding][data-level={level}]")
        assert kind.count() > 0 and kind.locator("[data-testid=monitor-chart] svg.chart").count() == kind.count(), level  # one chart each
    assert page.locator("[data-testid=finding] a:has-text('The rounds behind this test')").count() > 0

    # the rejections, filtered by a code
    page.goto(v.server + "/ui/rejections")
    codes = page.locator("[data-testid=rejections] tbody tr[data-code]")
    assert codes.count() > 0
    code = codes.first.get_attribute("data-code")
    page.fill("#r-code", code)
    page.click("button:has-text('Filter')")
    assert {codes.nth(i).get_attribute("data-code") for i in range(codes.count())} == {code}

    # the wallet file with planted discrepancies: every one is listed
    page.goto(v.server + "/ui/reconcile")
    page.set_input_files("#wallet", str(console_store.wallet))
    page.click("button:has-text('Reconcile')")
    assert text(page, "[data-testid=discrepancy-count]") == str(len(console_store.planted))
    table = text(page, "[data-testid=discrepancies]")
    for planted in console_store.planted:
        assert planted.reference in table and planted.kind in table, planted
    screenshot(page, "console-reconcile")

    # the audit pages are not for a backoffice key
    page.goto(v.server + "/ui/audit")
    assert "may not use the audit pages" in text(page, "[data-testid=forbidden]")

    # sign out: every page sends back to the sign-in form
    page.click("button:has-text('Sign out')")
    assert page.url == v.server + "/ui/"
    for path in ("/ui/rounds", "/ui/rounds/dispute-void%231", "/ui/players/alice", "/ui/monitor"):
        page.goto(v.server + path)
        assert page.url.startswith(v.server + "/ui/?next=") and page.locator("#key").count() == 1


PAGES = ("/ui/rounds", "/ui/rounds?player=alice", "/ui/rounds/dispute-bj%231", "/ui/rounds/dispute-tp%231?step=4",
         "/ui/rounds/dispute-bj%231/proof", "/ui/players/alice", "/ui/tables/bj-live-1", "/ui/monitor?all=1",
         "/ui/rejections", "/ui/reconcile", "/ui/wallet", "/ui/audit")


def test_every_page_fits_a_phone_and_is_keyboard_reachable(visit: Any, console_store: ConsoleStore) -> None:
    v = visit(viewport=PHONE, is_mobile=True)
    page = v.go("/ui/")
    assert _fits(page), "the sign-in page scrolls sideways at 390 px"
    sign_in(v, console_store.keys["admin"])
    for path in PAGES:
        page = v.go(path)
        assert page.locator("main").count() == 1, path
        assert _fits(page), f"{path} scrolls sideways at 390 px"
        reached = _tab_through(page, 25)
        for wanted in ("Rounds", "Monitor", "Rejections", "Reconcile", "Wallet", "Audit", "Sign out"):
            assert wanted in reached, (path, wanted, reached)
        assert not page.locator("a[tabindex='-1'], button[tabindex='-1'], input[tabindex='-1']").count(), path
        screenshot(page, "console-phone-" + path.strip("/").replace("/", "-").replace("?", "-").replace("%23", "-"))
    # the step control by keyboard alone: focus Next and press Enter
    page = v.go("/ui/rounds/dispute-bj%231?step=1")
    page.focus("#next")
    page.keyboard.press("Enter")
    page.wait_for_load_state()
    assert text(page, "#counter").startswith("step 2 of")


def _fits(page: Any) -> bool:
    return bool(page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"))


def _tab_through(page: Any, presses: int) -> list[str]:
    """The text (or value, or id) of each element Tab moves the focus to."""
    reached = []
    page.locator("body").focus()
    for _ in range(presses):
        page.keyboard.press("Tab")
        reached.append(page.evaluate(
            "() => { const e = document.activeElement; return (e.innerText || e.value || e.id || e.tagName).trim(); }"))
    return reached


def test_a_complaint_from_a_player_id_alone_in_three_page_loads(visit: Any, console_store: ConsoleStore) -> None:
    """Issue 28: from the rounds page, a lower-case start of the player's id (as said on the
    phone) and the time of the play find the disputed round; its link opens it: three page loads
    of the browser, at phone width, without script."""
    from datetime import UTC, datetime, timedelta

    from ledger.eventlog import EventLog
    from ledger.records import Opened, Settled

    log = EventLog.open(console_store.url)
    try:
        records = list(log.records())
    finally:
        log.close()
    opened = {r.originator_id: r for r in records if isinstance(r, Opened)}
    settled = next(r for r in records if isinstance(r, Settled) and r.originator_id in opened
                   and r.results[0].player_id.startswith("p"))
    round_ = opened[settled.originator_id]
    ref, player = f"{round_.table_id}#{round_.round_no}", settled.results[0].player_id
    at = datetime.fromisoformat(round_.studio_time).astimezone(UTC).replace(second=0, microsecond=0)
    v = visit(java_script_enabled=False, viewport=PHONE)
    page = sign_in(v, console_store.keys["backoffice"])
    loads: list[str] = []
    page.on("load", lambda p: loads.append(p.url))
    page.goto(v.server + "/ui/rounds")
    page.fill("#f-player", player[:-1].lower())
    page.fill("#f-since", at.date().isoformat())
    page.fill("#f-until", (at.date() + timedelta(days=1)).isoformat())
    page.fill("#f-time-from", f"{at:%H:%M}")
    page.fill("#f-time-to", f"{at + timedelta(minutes=1):%H:%M}")
    page.click("button:has-text('Search')")
    page.wait_for_load_state()
    assert "of players whose id starts with" in text(page, "[data-testid=count]")
    row = page.locator(f"tr[data-round='{ref}'][data-player='{player}']")
    own = [x for x in settled.results if x.player_id == player]
    assert text(row, "[data-field=player-stake]") == format_minor(sum(x.staked_minor for x in own), "EUR")
    row.locator("a").first.click()
    page.wait_for_load_state()
    assert f"Round {ref}" in text(page, "[data-testid=title]")
    assert len(loads) <= 3, loads
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

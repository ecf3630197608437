"""Isolation proved on the console (issue 30, items 4-5): on the studio day of 3 operators whose
player ids overlap (tests/support/operator_day.py), every page of the console (enumerated from
its own route table, so a new page is covered or fails here), signed in with a backoffice key
of OP2, holds none of the other operators' player keys, bare player ids, bet ids or per-bet
amounts, and shows OP2's players by their own id, never by the ledger's key. The search can
fail: with the key's scope removed it finds them. One browser check: a key of two operators
signs in and picks one."""
from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.keys import ApiKey, key_store
from ledger.store import open_app
from ops.console.pages import router
from ops.service.app import Settings, create_app
from tests.e2e.console.conftest import csrf_of, sign_in
from tests.support.operator_day import LATE, MINE, Day, make_day

# Forms that change something or take an upload: not pages to read (the wallet upload is
# searched below, as OP2's wallet file).
POSTS = {"/ui/", "/ui/signout", "/ui/operator", "/ui/reconcile", "/ui/reconcile.csv", "/ui/audit/export",
         "/ui/audit/verify"}
# Pages whose figures are every operator's (the monitor), or an auditor's: refused (403) to a
# backoffice key limited to operators.
EVERY_OPERATORS_ONLY = {"/ui/monitor", "/ui/audit"}
_VISIBLE = re.compile(r"<style.*?</style>|<[^>]*>", re.S)


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> tuple[Day, str, str]:
    """The day, its payouts delivered to each operator's wallet (the wallet page has some)."""
    folder = tmp_path_factory.mktemp("opcon")
    made = make_day(folder)
    delivered(made[0], made[1], folder)
    return made


def delivered(day: Day, store_url: str, folder: Path) -> None:
    """One deliverer, a fake wallet per operator (as tests/e2e/wallet/test_operators.py): OP1's and
    OP3's wallets refuse every player (dead letters naming them and their stakes), OP2's one."""
    from ledger.eventlog import EventLog
    from ops.bench.fake_wallet import FakeWallet
    from ops.cli import main as cli
    from ops.wallet.config import load
    from ops.wallet.deliverer import Deliverer
    from projections.wallet_outbox import read_status

    refused = {op: dict.fromkeys(sorted(ids)[:1] if op == MINE else ids, "player_blocked")
               for op, ids in day.players.items()}
    with ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        text = ""
        for op, players in refused.items():
            wallet = stack.enter_context(FakeWallet(f"secret-{op}", refuse_players=players, operator_id=op))
            env.setenv(f"LEDGER_WALLET_SECRET_{op}", f"secret-{op}")
            text += (f'[operators.{op}]\nurl = "{wallet.url}"\nsecret_env = "LEDGER_WALLET_SECRET_{op}"\n'
                     "concurrency = 4\ntimeout_s = 0.5\nbackoff_s = 0.02\nbackoff_max_s = 0.2\n")
        (folder / "wallet.toml").write_text(text)
        deliverer = Deliverer(store_url, load(str(folder / "wallet.toml")))
        try:
            deliverer.run(until_idle=True)
        finally:
            deliverer.close()
    log = EventLog.open(store_url)
    try:
        dead = {op: read_status(log, OperatorScope.of(op))["dead"][0]["tx_id"] for op in ("OP1", MINE)}  # type: ignore[index]
    finally:
        log.close()
    for op, tx in dead.items():  # a decision on a dead letter of each: a person's name and why
        assert cli(["wallet", "resolve", tx, "--by", f"clerk-of-{op}", "--why", "paid at the cage", "--db",
                    store_url]) == 0


@pytest.fixture
def client(day: tuple[Day, str, str]) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(db_url=day[1], key_cache_s=0.0))) as c:
        yield c


def new_key(store_url: str, name: str, operators: list[str] | None = None) -> str:
    """A backoffice key of these operators (none: every operator) in the day's store."""
    app = open_app(store_url)
    try:
        return key_store(app).add("backoffice", name, operators=operators or [])[0]
    finally:
        app.close()


def console_pages() -> list[str]:
    """Every GET route of the console; a new POST route fails here until it is placed."""
    routes = [r for r in router.routes if isinstance(r, APIRoute)]
    posts = {r.path for r in routes if "POST" in r.methods}
    assert posts == POSTS, f"a new console form: search what it answers here ({posts ^ POSTS})"
    return sorted(r.path for r in routes if "GET" in r.methods)


def page_urls(day: Day, steps: dict[str, int]) -> list[str]:
    """Every page with its path filled (the shared round, OP2's player whose id another operator
    also has, the shared round's table), the rounds search by that player, searches and pages
    naming another operator's player, every table, and steps of the shared rounds."""
    values = {"ref": day.shared_round.replace("#", "%23"), "player": day.player,
              "table": day.shared_round.split("#")[0]}

    def fill(m: re.Match[str]) -> str:
        assert m.group(1) in values, f"teach the console's isolation matrix its parameter {m.group(1)}"
        return values[m.group(1)]

    urls = [re.sub(r"\{(\w+)(?::\w+)?\}", fill, page) for page in console_pages()]
    other = f"OP1~{day.player}"  # another operator's player named by the ledger's key
    return [*urls, f"/ui/rounds?player={day.player}", f"/ui/rounds.csv?player={day.player}",
            f"/ui/rounds?operator={MINE}", "/ui/rounds?player=OP", f"/ui/rounds.csv?player={other}",
            f"/ui/players/{other}", *(f"/ui/tables/{t}" for t in day.tables),
            *(f"{_round(r)}?step={n}" for r, count in steps.items() for n in _sampled(count))]


def _sampled(count: int) -> list[int]:
    """Steps of a round to draw: every third and the last (each draws the table from the same
    redacted document; a step of each kind of event is among them)."""
    return sorted({*range(1, count + 1, 3), count})


def _round(ref: str) -> str:
    return "/ui/rounds/" + ref.replace("#", "%23")


def findings(client: TestClient, day: Day, steps: dict[str, int]) -> tuple[dict[str, set[str]], list[str]]:
    """What each page shows of the others (none expected), and the pages that name an OP2 player
    by the ledger's key in text a person reads."""
    found: dict[str, set[str]] = {}
    keyed: list[str] = []
    for url in page_urls(day, steps):
        answer = client.get(url)
        text = unzipped(answer.content) if url.endswith("/bundle") and answer.status_code == 200 else answer.text
        # 404: a table where none of the scope's players played (and no configuration to show)
        assert answer.status_code in (200, 403) or (answer.status_code == 404 and url.startswith("/ui/tables/")), (
            url, answer.status_code, answer.text[:300])
        if day.found(text):
            found[url] = day.found(text)
        if f"{MINE}~" in _VISIBLE.sub(" ", answer.text):
            keyed.append(url)
    return found, keyed


def unzipped(body: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(body)) as z:
        return "".join(z.read(name).decode("utf-8") for name in z.namelist())


def _steps(client: TestClient, day: Day) -> dict[str, int]:
    """How many steps each shared round has, as the key's page shows it."""
    return {r: int(re.search(r"step 1 of (\d+)", client.get(_round(r) + "?step=1").text).group(1))  # type: ignore[union-attr]
            for r in day.shared_rounds}


def test_an_operators_key_sees_no_other_operators_player_on_any_page(client: TestClient,
                                                                     day: tuple[Day, str, str]) -> None:
    found, _, key = day
    assert len(found.ids) > 100 and len(found.amounts) > 50
    assert sign_in(client, key).status_code == 303  # type: ignore[attr-defined]
    steps = _steps(client, found)
    assert len(steps) >= 2 and min(steps.values()) > 3
    leaks, keyed = findings(client, found, steps)
    assert leaks == {} and keyed == []
    # OP2's players by their own id, the operator named; another operator's player is refused
    page = client.get(f"/ui/players/{found.player}")
    assert f"Player {found.player} ({MINE})" in page.text and "player-name" in page.text
    assert client.get(f"/ui/players/{found.player}?operator=OP1").status_code == 403
    for url in EVERY_OPERATORS_ONLY:
        assert client.get(url).status_code == 403, url
    refused = client.get("/ui/rejections").text  # its own refused bet, not OP1's
    assert f"{LATE}{MINE}" in refused and f"{LATE}OP1" not in refused
    bundle = client.get(_round(found.shared_round) + "/bundle")
    assert bundle.status_code == 200 and re.search(r'"redacted": ?true', unzipped(bundle.content))
    shared = client.get(_round(found.shared_round)).text
    assert re.search(r'data-testid="other-operators">Other operators\' players: \d+ bets, [\d,.]+ EUR staked', shared)
    wallet = client.get("/ui/wallet").text  # OP2's own dead letters, none of the others'
    assert "player_blocked" in wallet and f"{MINE} / {sorted(found.players[MINE])[0]}" in wallet
    assert not {"OP1 / ", "OP3 / "} & set(re.findall(r"OP\d / ", wallet))
    assert f"clerk-of-{MINE}" in wallet and "clerk-of-OP1" not in wallet
    rounds = client.get("/ui/rounds").text
    assert f'href="/ui/players/{found.player}?operator={MINE}"' in client.get(
        f"/ui/rounds?player={found.player}").text
    assert "Monitor" not in rounds.split("<main", 1)[0]


def reconciled(client: TestClient) -> str:
    """OP2's wallet file with nothing in it but its header, uploaded: every movement the ledger
    expects of the scope's players is a finding."""
    header = b"transaction_id,type,reference,player,amount_minor,currency,time\n"
    answer = client.post("/ui/reconcile", data={"csrf": csrf_of(client)},
                         files={"wallet": ("op2.csv", header, "text/csv")})
    assert answer.status_code == 200, answer.text[:300]
    assert answer.text.count("<tr data-category") > 10
    return answer.text


def test_the_wallet_upload_reconciles_only_the_operators_players(client: TestClient,
                                                                  day: tuple[Day, str, str]) -> None:
    found, _, key = day
    sign_in(client, key)
    page = reconciled(client)
    assert found.found(page) == set() and f"({MINE})" in page


def test_the_picker_offers_the_keys_operators_only(client: TestClient, day: tuple[Day, str, str]) -> None:
    """A key of OP1 and OP2: the picker narrows every page to one of them (and back to both);
    another operator, by the picker or by `?operator=`, is refused; the form needs its token."""
    found, url, _ = day
    key = new_key(url, "op1-op2-form", ["OP1", MINE])
    sign_in(client, key)
    csrf = csrf_of(client)
    search = f"/ui/rounds?player={found.player}"
    assert client.get(search).status_code == 403  # a player id names one operator's player: pick one
    assert client.post("/ui/operator", data={"csrf": csrf, "operator": "OP3"}).status_code == 403
    assert client.post("/ui/operator", data={"operator": MINE}).status_code == 403
    picked = client.post("/ui/operator", data={"csrf": csrf, "operator": MINE, "next": search + "&operator=OP1"},
                         follow_redirects=False)
    assert picked.status_code == 303 and picked.headers["location"] == search
    assert f"{found.player} ({MINE})" in client.get(search).text
    of_op1 = client.get("/ui/rounds?player=p&operator=OP1").text  # ?operator= wins over the pick
    assert "(OP1)</a>" in of_op1 and f"({MINE})</a>" not in of_op1
    assert client.get(search + "&operator=OP3").status_code == 403
    client.post("/ui/operator", data={"csrf": csrf, "operator": ""})
    assert client.get(search).status_code == 403


def test_a_key_of_every_operator_picks_among_the_stores(client: TestClient, day: tuple[Day, str, str]) -> None:
    found, url, _ = day
    key = new_key(url, "studio-bo")
    sign_in(client, key)
    page = client.get("/ui/rounds").text
    picker = page.split('data-testid="operator-picker"', 1)[1].split("</form>", 1)[0]
    assert re.findall(r'<option value="([^"]*)"', picker) == ["", "OP1", "OP2", "OP3", "default"]
    assert "Monitor" in page.split("<main", 1)[0]
    client.post("/ui/operator", data={"csrf": csrf_of(client), "operator": "OP3"})
    shown = client.get("/ui/rounds?player=p").text
    assert "(OP3)</a>" in shown and f"({MINE})</a>" not in shown
    client.post("/ui/operator", data={"csrf": csrf_of(client), "operator": ""})
    for ref in found.shared_rounds:  # every operator's players, each by its own id and operator
        for url in (_round(ref), _round(ref) + "?step=9", "/ui/rounds.csv?player=p&operator=OP1"):
            text = _VISIBLE.sub(" ", client.get(url).text)
            assert not re.search(r"OP\d~", text) and re.search(r"p\d{4} \(OP\d\)", text), url


def test_an_auditor_of_the_operator_exports_the_trail_redacted(client: TestClient, day: tuple[Day, str, str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit page's export for an auditor key of OP2: the other operators' events redacted
    (hashes kept), and it verifies against the store; with the key's scope removed it names them."""
    found, url, _ = day
    app = open_app(url)
    try:
        auditor = key_store(app).add("auditor", "op2-audit", operators=[MINE])[0]
    finally:
        app.close()
    sign_in(client, auditor)

    def exported() -> bytes:
        answer = client.post("/ui/audit/export", data={"csrf": csrf_of(client, "/ui/audit"), "days": "recorded"})
        assert answer.status_code == 200, answer.text[:300]
        return answer.content

    body = exported()
    assert found.found(unzipped(body)) == set() and re.search(r'"redacted": ?true', unzipped(body))
    verified = client.post("/ui/audit/verify", data={"csrf": csrf_of(client, "/ui/audit"), "against_store": "true"},
                           files={"export": ("export.zip", body, "application/zip")})
    assert verified.status_code == 200 and found.found(verified.text) == set()
    assert 'data-testid="verify-ok"' in verified.text, verified.text[-800:]
    monkeypatch.setattr(ApiKey, "scope", property(lambda self: EVERY_OPERATOR))
    assert found.found(unzipped(exported()))


def test_the_matrix_finds_the_leak_without_the_scope(client: TestClient, day: tuple[Day, str, str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    found, _, key = day
    sign_in(client, key)
    monkeypatch.setattr(ApiKey, "scope", property(lambda self: EVERY_OPERATOR))
    leaks, _ = findings(client, found, {found.shared_round: 2})
    assert found.found(reconciled(client))
    assert "/ui/rounds?player=OP" in leaks, sorted(leaks)
    assert any(url.startswith("/ui/rounds/") for url in leaks) and "/ui/wallet" in leaks, sorted(leaks)
    assert _round(found.shared_round) + "/bundle" in leaks, sorted(leaks)
    assert f"{LATE}OP1" in client.get("/ui/rejections").text
    assert any(found.amounts & f for f in leaks.values()), "no per-bet amount found: the search cannot see one"


def test_a_key_of_two_operators_signs_in_and_picks_one_in_a_browser(day: tuple[Day, str, str],
                                                                    tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.e2e.console.test_dispute_page import CHROMIUM, CHROMIUM_ARGS
    from tests.e2e.service.conftest import LiveServer

    found, url, _ = day
    key = new_key(url, "op1-op2", ["OP1", MINE])
    with LiveServer(Settings(db_url=url, key_cache_s=0.0)) as live, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(java_script_enabled=False)
        page.goto(live.url + "/ui/")
        page.fill("#key", key)
        page.click("button[type=submit]")
        picker = page.locator("[data-testid=operator-picker] select")
        assert sorted(picker.locator("option").all_inner_texts()) == ["OP1", MINE, "all of mine"]
        picker.select_option(MINE)
        page.click("[data-testid=operator-picker] button")
        page.goto(live.url + f"/ui/rounds?player={found.player}")
        shown = page.locator("td[data-label=Player]").all_inner_texts()
        assert shown and set(shown) == {f"{found.player} ({MINE})"}
        assert page.locator("[data-testid=operator-picker] select").input_value() == MINE
        browser.close()

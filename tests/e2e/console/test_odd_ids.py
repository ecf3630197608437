"""Every id the feed allows has a working page (issue 27, item 3), and a control character
in a path or query is a 4xx, never a 5xx (its NUL bullet).

A store holds a table, a round and a player for each legal but awkward id (ledger/commands.py:
`^[A-Za-z0-9_.:\\-/#@]+$`, 1..128 characters). Through a real uvicorn (it decodes `%2F`
before routing), every console page and API route that takes one of them answers 200, and
every link the listing pages emit resolves, as a browser resolves it (`.`, `..`, `%2e` and
`%2e%2e` segments removed), to the page of that very id. On both stores."""
from __future__ import annotations

import hashlib
import http.client
import re
from collections.abc import Iterator
from html import escape, unescape
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import httpx
import pytest

from ledger.store import open_app
from ops.service.app import Settings
from tests.e2e.console.conftest import sign_in
from tests.e2e.console.test_browser import Visit
from tests.e2e.console.test_browser import sign_in as sign_in_by_browser
from tests.e2e.console.test_dispute_page import CHROMIUM, CHROMIUM_ARGS
from tests.e2e.service.conftest import LiveServer, auth, make_keys
from tests.support.feed import Feed, lines

ODD = ["a/b", "javascript://x/", "x/proof", "t#1", "p@x", "a:b", "a.b", ".", "..", "a/../b", "a/" * 64]
PLAIN = "plain-player"
CONTROLS = ["\x00", "\x01", "\x1f", "\x7f", "\x85", "\u202e", "\u2028"]


class OddFeed(Feed):
    """A table, round 1 and a player named `odd`; command ids short enough for a 128-character id."""

    def cmd(self, type_: str, **fields: Any) -> dict[str, Any]:
        command = super().cmd(type_, **fields)
        command["command_id"] = f"{hashlib.sha256(self.table_id.encode()).hexdigest()[:16]}-{self.n}"
        if type_ == "open_round":
            command["dealer_id"] = self.table_id
        if type_ == "configure_table":
            del command["round_no"]
        return command


def odd_commands(odd: str) -> list[bytes]:
    f = OddFeed(odd)
    return lines(
        f.cmd("configure_table", game="baccarat", ruleset_id="baccarat/live-8d", ruleset_version=1, currency="EUR"),
        f.open("baccarat/live-8d"),
        f.bet("b1", odd, "table", "player", 1000),
        f.bet("b2", PLAIN, "table", "banker", 500, mode="traditional"),
        f.close(),
        f.bet("late", odd, "table", "tie", 100),  # refused: betting is closed (a rejection at this table)
        f.cards("AS>burn", "5H>burn", "KS>player", "2D>banker", "8D>player", "3C>banker"),
    )


def build(url: str) -> dict[str, str]:
    app = open_app(url)
    try:
        for odd in ODD:
            results = app.ingest(odd_commands(odd))
            assert [r.status for r in results].count("refused") == 1, [(r.status, r.code, r.message) for r in results]
    finally:
        app.close()
    return make_keys(url)


def segment(text: str) -> str:
    """An id as a path segment, as the console's links carry it: every reserved character
    escaped, and an id of dots only as `%252E` per dot (browsers remove `.`, `..`, `%2e` segments)."""
    return "%252E" * len(text) if set(text) == {"."} else quote(text, safe="")


@pytest.fixture
def served(store_url: str) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    keys = build(store_url)
    with LiveServer(Settings(db_url=store_url, key_cache_s=0.0)) as server:
        yield server, keys


@pytest.fixture
def browser(served: tuple[LiveServer, dict[str, str]]) -> Iterator[httpx.Client]:
    server, keys = served
    with httpx.Client(base_url=server.url, timeout=60) as client:
        assert sign_in(client, keys["backoffice"]).status_code == 303  # type: ignore[arg-type,attr-defined]
        yield client


def _pages(odd: str) -> list[str]:
    ref = segment(f"{odd}#1")
    return [f"/ui/tables/{segment(odd)}", f"/ui/players/{segment(odd)}", f"/ui/rounds/{ref}",
            f"/ui/rounds/{ref}?step=2", f"/ui/rounds/{ref}/proof", f"/ui/rounds/{ref}/bundle",
            f"/ui/rounds?table={quote(odd, safe='')}", f"/ui/rounds?player={quote(odd, safe='')}",
            f"/ui/rounds?dealer={quote(odd, safe='')}", f"/ui/rejections?table={quote(odd, safe='')}"]


def _api(odd: str) -> list[str]:
    ref = segment(f"{odd}#1")
    return [f"/v1/recall/{segment(odd)}", f"/v1/rounds/{ref}", f"/v1/rounds/{ref}/replay",
            f"/v1/rounds/{ref}/replay.html", f"/v1/rounds?table={quote(odd, safe='')}"]


def test_every_page_and_route_of_an_odd_id_answers_it(served: tuple[LiveServer, dict[str, str]],
                                                      browser: httpx.Client) -> None:
    server, keys = served
    with httpx.Client(base_url=server.url, headers=auth(keys["backoffice"]), timeout=60) as api:
        for odd in ODD:
            _console_answers(browser, odd)
            _api_answers(api, odd)


def _console_answers(browser: httpx.Client, odd: str) -> None:
    for path in _pages(odd):
        page = browser.get(path)
        assert page.status_code == 200, (path, page.status_code, page.text[:300])
        if "text/html" in page.headers["content-type"]:
            assert escape(odd) in page.text, path
    assert _h1(browser.get(f"/ui/players/{segment(odd)}").text) == f"Player {odd}"
    assert _h1(browser.get(f"/ui/tables/{segment(odd)}").text) == f"Table {odd}"
    assert _h1(browser.get(f"/ui/rounds/{segment(odd + '#1')}").text).startswith(f"Round {odd}#1 ")
    for path in (f"/ui/rounds/{segment(odd + '#9')}", f"/ui/rounds/{segment(odd + '#9')}/proof",
                 f"/ui/tables/{segment(odd + '-none')}"):
        assert browser.get(path).status_code == 404, path


def _api_answers(api: httpx.Client, odd: str) -> None:
    for path in _api(odd):
        answer = api.get(path)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
    assert api.get(f"/v1/recall/{segment(odd)}").json()["player_id"] == odd
    tables = [r["table_id"] for r in api.get(f"/v1/rounds?table={quote(odd, safe='')}").json()["rounds"]]
    assert odd in tables and all(t.lower().startswith(odd.lower()) for t in tables)  # `table` is a prefix
    assert api.get(f"/v1/rounds/{segment(odd + '#1')}").json()["table_id"] == odd
    missing = api.get(f"/v1/rounds/{segment(odd + '#9')}")
    assert missing.status_code == 404 and missing.json()["code"] == "round_not_found", odd


def test_an_id_of_dots_is_answered_however_a_client_sends_it(served: tuple[LiveServer, dict[str, str]]) -> None:
    """A client that does not normalise (curl --path-as-is, http.client) may send `..` as it is,
    or `%2E%2E`; the console's links carry `%252E%252E`. All three name the player `..`."""
    server, keys = served
    for path in ("/v1/recall/..", "/v1/recall/%2E%2E", "/v1/recall/.%2e", "/v1/recall/%252E%252E",
                 "/v1/recall/%252e%252e"):
        status, body = _raw_get(server, path, keys["backoffice"])
        assert status == 200 and '"player_id":".."' in body, (path, status, body[:300])
    status, body = _raw_get(server, "/v1/recall/%252E", keys["backoffice"])
    assert status == 200 and '"player_id":"."' in body


def _raw_get(server: LiveServer, path: str, key: str) -> tuple[int, str]:
    """GET `path` exactly as written (no client-side normalisation)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request("GET", path, headers=auth(key))
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (href, the link's text)
        self._open: list[Any] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open.append([dict(attrs).get("href") or "", ""])

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open:
            href, text = self._open.pop()
            self.links.append((href, text.strip()))


def links_of(html: str) -> list[tuple[str, str]]:
    parser = _Links()
    parser.feed(html)
    return parser.links


_DOT = {".", "%2e"}
_DOTS = {"..", ".%2e", "%2e.", "%2e%2e"}


def resolved(page: str, href: str) -> str:
    """Where a browser goes (WHATWG URL: `%2e` is a dot, dot segments removed), as path?query."""
    parts = urlsplit(href)
    path = "/".join("." if s.lower() in _DOT else ".." if s.lower() in _DOTS else s for s in parts.path.split("/"))
    target = urlsplit(urljoin("http://h" + page, parts._replace(path=path, fragment="").geturl()))
    return target.path + (f"?{target.query}" if target.query else "")


def _h1(html: str) -> str:
    found = re.search(r"<h1[^>]*>(.*?)</h1>", html, re.S)
    return unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip() if found else ""


ENTITY = re.compile(r"^/ui/(players|tables|rounds)/[^/?]+$")


def test_every_link_of_the_listings_leads_to_its_page(browser: httpx.Client) -> None:
    """From the listings, follow every /ui/ link of every page reached, to the last: each
    answers 200, and a link named by an id opens that id's page."""
    queue = ["/ui/rounds", "/ui/monitor?all=1", "/ui/rejections"]
    followed = set(queue)
    while queue:
        here = queue.pop()
        page = browser.get(here)
        assert page.status_code == 200, here
        if "text/html" not in page.headers["content-type"]:
            continue
        for href, text in links_of(page.text):
            target = resolved(here, href)
            if ENTITY.match(target) and text and target != here:  # a link named by an id opens its page
                assert text in _h1(browser.get(target).text), (here, href, target)
            if target.startswith("/ui/") and target not in followed and target != "/ui/":
                followed.add(target)
                queue.append(target)
    assert len(followed) < 1000
    for odd in ODD:  # the listings' own links reach every odd id's pages
        assert {f"/ui/players/{segment(odd)}", f"/ui/tables/{segment(odd)}", f"/ui/rounds/{segment(odd + '#1')}",
                f"/ui/rounds/{segment(odd + '#1')}/proof", f"/ui/rounds/{segment(odd + '#1')}/bundle"} <= followed, odd


def test_chromium_follows_each_link_to_the_page_of_its_id(tmp_path: Any) -> None:
    """A real browser's URL handling (`..` and `%2E%2E` segments removed, `#` a fragment), not a
    model of it: from the rounds list to each odd id's table, round, player and chain proof."""
    from playwright.sync_api import sync_playwright

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    keys = build(url)
    with LiveServer(Settings(db_url=url, key_cache_s=0.0)) as server, sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            visit = Visit(chromium, server.url)
            page = sign_in_by_browser(visit, keys["backoffice"])
            for odd in ODD:
                visit.go("/ui/rounds")
                assert _click(page, "/ui/tables/", odd) == f"Table {odd}"
                visit.go("/ui/rounds")
                assert _click(page, "/ui/rounds/", f"{odd}#1").startswith(f"Round {odd}#1 ")
                assert _click(page, "/ui/players/", odd) == f"Player {odd}"
                page.go_back()
                assert _click(page, "/ui/rounds/", "Chain proof of this round") == f"Chain proof: round {odd}#1"
            visit.close()
        finally:
            chromium.close()


def _click(page: Any, prefix: str, text: str) -> str:
    """Click the first link to `prefix...` whose text is `text`; the heading of the page it opens."""
    page.locator(f"a[href^='{prefix}']").filter(has_text=re.compile(f"^{re.escape(text)}$")).first.click()
    page.wait_for_load_state()
    return str(page.locator("h1").inner_text()).strip()


def _control_requests(app: Any) -> list[str]:
    """Every GET route with each of its path and query parameters set to `{}` in turn."""
    from fastapi.routing import APIRoute

    paths = []
    for route in _routes(app.routes):
        if not isinstance(route, APIRoute) or "GET" not in route.methods:
            continue
        names = sorted({p.name for p in _params(route.dependant, "path_params")})
        base = route.path_format.format(**{n: "x" for n in names})
        paths += [route.path_format.format(**{m: ("{}" if m == n else "x") for m in names}) for n in names]
        paths += [f"{base}?{alias}={{}}" for alias in sorted({q.alias for q in _params(route.dependant, "query_params")})]
    return paths


def _routes(routes: list[Any]) -> Iterator[Any]:
    """Every route, those of the routers included in the app too (FastAPI keeps them apart)."""
    for route in routes:
        yield from _routes(route.original_router.routes) if hasattr(route, "original_router") else (route,)


def _params(dependant: Any, kind: str) -> Iterator[Any]:
    """A route's parameters of one kind, its dependencies' included."""
    yield from getattr(dependant, kind)
    for sub in dependant.dependencies:
        yield from _params(sub, kind)


def test_a_control_character_in_a_path_or_query_is_a_4xx(served: tuple[LiveServer, dict[str, str]],
                                                         browser: httpx.Client) -> None:
    """Every parameter of every GET route, each control character in turn (a NUL was a 500 on PostgreSQL)."""
    server, keys = served
    requests = _control_requests(server.server.config.app)
    assert "/ui/players/{}" in requests and "/v1/rounds?table={}" in requests and "/ui/rounds?player={}" in requests
    with httpx.Client(base_url=server.url, headers=auth(keys["admin"]), timeout=60) as api:
        for path in (template.format(quote(c.encode("utf-8"), safe="")) for c in CONTROLS for template in requests):
            answer = (browser if path.startswith("/ui/") else api).get(path)
            assert 400 <= answer.status_code < 500, (path, answer.status_code, answer.text[:300])
            if path.startswith("/v1/"):
                assert answer.headers["content-type"] == "application/problem+json", path
                assert answer.json()["code"] == "request_invalid", (path, answer.json())
        assert api.get("/healthz").status_code == 200  # the server still answers on a kept-alive connection

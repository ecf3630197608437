"""Issue 27: what the rejections log keeps of hostile bytes, and a note's own lines, are
shown on the console's pages as escapes, never as themselves; every page answers."""
from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient

from domain.text import char_name, hostile_at
from ledger.store import open_app
from ops.service.app import Settings, create_app
from tests.e2e.console.conftest import sign_in
from tests.e2e.service.conftest import make_keys
from tests.store.ledger.test_hostile_text import RAW_LINES
from tests.support.feed import Feed, baccarat_round, lines


def test_hostile_bytes_and_note_lines_are_shown_escaped_on_every_page(store_url: str, tmp_path: Path) -> None:
    f = Feed("bacc-1")
    app = open_app(store_url)
    try:
        app.ingest([*lines(*baccarat_round(f)[:3]), *(x.rstrip(b"\n") for x in RAW_LINES),
                    json.dumps({**f.void("human_error"), "note": "the shoe fell\n\tcards re-dealt"}).encode()])
    finally:
        app.close()
    keys = make_keys(store_url)
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as client:
        assert sign_in(client, keys["admin"]).status_code == 303  # type: ignore[attr-defined]
        pages = {p: client.get(p) for p in ("/ui/rejections", "/ui/rounds", "/ui/rounds/bacc-1%231",
                                            "/ui/players/alice", "/ui/tables/bacc-1")}
    for page, r in pages.items():
        assert r.status_code == 200, (page, r.status_code)
        assert not [char_name(c) for c in r.text if hostile_at(c, "\n\t") is not None], page
    assert "\\x1b" in pages["/ui/rejections"].text and "\\u202e" in pages["/ui/rejections"].text
    assert "the shoe fell\\n\\tcards re-dealt" in pages["/ui/rounds/bacc-1%231"].text


def test_the_rejections_page_links_only_rounds_and_tables_that_have_a_page(store_url: str, tmp_path: Path) -> None:
    """Issue 27/28: a refused command may name a round never opened or a table never seen (`-`);
    the rejections page names them without a link to a 404, and links those that exist."""
    f, never, nowhere = Feed("bacc-1"), Feed("bacc-1", round_no=9), Feed("-", round_no=1)
    app = open_app(store_url)
    try:
        app.ingest([*lines(*baccarat_round(f)[:3]), *lines(f.close(), f.close()),  # the second close is refused
                    *lines(never.close(), nowhere.close())])  # rounds never opened: refused round_not_open
    finally:
        app.close()
    keys = make_keys(store_url)
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as client:
        assert sign_in(client, keys["admin"]).status_code == 303  # type: ignore[attr-defined]
        page = client.get("/ui/rejections").text
        links = re.findall(r'href="(/ui/(?:rounds|tables)/[^"]+)"', page)
        assert "/ui/rounds/bacc-1%231" in links and len(links) == 1, links
        assert "bacc-1#9 <span class=\"note\">(never opened)</span>" in page and "-#1 <span" in page
        assert all(client.get(link).status_code == 200 for link in links)

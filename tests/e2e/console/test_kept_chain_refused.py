"""A chain kept in the store that disagrees with its own head: the proof page and the bundle
button answer a page that says so (409), never a 500 or a bundle."""
from __future__ import annotations

from fastapi.testclient import TestClient

from ledger.eventlog import EventLog
from projections import chain_index
from projections.sql import Db
from tests.e2e.console.conftest import ConsoleStore, sign_in


def test_a_kept_chain_that_disagrees_is_a_page_not_a_crash(client: TestClient, console_store: ConsoleStore) -> None:
    sign_in(client, console_store.keys["backoffice"])
    page = "/ui/rounds/dispute-bj%231"
    assert client.get(f"{page}/proof").status_code == 200  # the chain is kept from here on
    log = EventLog.open(console_store.url)
    db = Db.for_store(log.backend)
    try:
        with db.transaction():
            db.execute(f"DELETE FROM {chain_index.NODES.name}")
            db.execute(f"UPDATE {chain_index.CHAIN.name} SET hash = ? WHERE seq = 5", ("11" * 32,))
    finally:
        db.close()
        log.close()
    for path in (f"{page}/proof", f"{page}/bundle"):
        response = client.get(path)
        assert response.status_code == 409, (path, response.status_code)
        assert "cannot prove this round" in response.text
        assert response.headers["content-type"].startswith("text/html")

"""The deliverer's writes (projections/wallet_outbox.py) on SQLite and PostgreSQL: a page's
transactions stored only with the position moved from where the page started, a group of
answers recorded whole."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ledger.eventlog import EventLog
from ledger.store import open_app
from projections.sql import Db
from projections.wallet_outbox import Attempt, Concurrent, Outbox
from projections.wallet_tx import WalletTx


def tx(n: int) -> WalletTx:
    return WalletTx(f"tx-{n}", n, "default", f"p{n}", "credit", "return", 100 + n, "EUR", "r", f"b{n}", "", 1,
                    f'{{"transaction_id":"tx-{n}"}}', "pending")


def outbox_of(url: str) -> Outbox:
    open_app(url).close()
    return Outbox(Db.for_store(EventLog.open(url, ledger_required=False).backend))


def test_a_page_is_stored_only_from_the_position_it_started_at(store_url: str) -> None:
    outbox = outbox_of(store_url)
    try:
        outbox.store_page([tx(1), tx(2)], 1, 5)
        assert outbox.position() == 5
        with pytest.raises(Concurrent):
            outbox.store_page([tx(3)], 1, 7)  # another deliverer moved it first: nothing of this page
        assert outbox.position() == 5 and outbox.get("tx-3") is None
        outbox.store_page([], 6, 9)  # a page without wallet transactions moves the position alone
        outbox.store_page([tx(2), tx(4)], 10, 12)  # one already stored stays as it is
        assert outbox.position() == 12
        assert [t.tx_id for t in outbox.open_txs(None)] == ["tx-1", "tx-2", "tx-4"]
    finally:
        outbox.db.close()


def test_a_group_of_answers_is_recorded_whole(store_url: str) -> None:
    outbox = outbox_of(store_url)
    try:
        outbox.store_page([tx(1), tx(2), tx(3)], 1, 3)
        done = [replace(tx(n), status="delivered", attempts=1, done_ms=7, last_answer="ok") for n in (1, 3)]
        outbox.record([Attempt(t, "ok", 200, '{"status":"ok"}') for t in done])
        assert [t.tx_id for t in outbox.open_txs(None)] == ["tx-2"]
        assert outbox.get("tx-3") == done[1]
        assert outbox.db.query("SELECT tx_id, attempt, outcome FROM wallet_attempts ORDER BY tx_id") == [
            ("tx-1", 1, "ok"), ("tx-3", 1, "ok")]
    finally:
        outbox.db.close()

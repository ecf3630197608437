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
    log = EventLog.open(url, ledger_required=False)
    try:  # the outbox has a connection of its own: the log's (and its pool's threads) are not kept
        return Outbox(Db.for_store(log.backend))
    finally:
        log.close()


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


def _commit_setting(db: Db) -> str:
    """How this connection's commits wait for the disk now: SQLite's synchronous (1 NORMAL, 2 FULL),
    PostgreSQL's synchronous_commit."""
    if db.dialect == "sqlite":
        return str(db.query("PRAGMA synchronous")[0][0])
    return str(db.query("SHOW synchronous_commit")[0][0])


def test_a_durable_transaction_waits_for_the_disk_and_the_others_do_not(store_url: str) -> None:
    """`Db.transaction(durable=True)` commits through to the disk (SQLite: synchronous FULL in
    WAL mode, only for that transaction; PostgreSQL: synchronous_commit on); the views' and
    the deliverer's other commits do not wait for it."""
    outbox = outbox_of(store_url)
    db = outbox.db
    full, lazy = ("2", "1") if db.dialect == "sqlite" else ("on", "off")
    try:
        with db.transaction(durable=True):
            assert _commit_setting(db) == full
        assert _commit_setting(db) == lazy
        with db.transaction():
            assert _commit_setting(db) == lazy
        with pytest.raises(RuntimeError), db.transaction(durable=True):
            raise RuntimeError("rolled back")
        assert _commit_setting(db) == lazy  # set back however the transaction ends
    finally:
        db.close()


def test_a_debit_s_rollback_and_a_person_s_decision_are_recorded_durably(store_url: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What must not be lost in a power cut or a server crash: the record of a debit left
    without an answer (its rollback goes out once it commits) and a person's decision; an
    answer's record may be lost (sent again under the same id)."""
    outbox = outbox_of(store_url)
    asked: list[bool] = []
    plain = outbox.db.transaction

    def spied(durable: bool = False):  # type: ignore[no-untyped-def]
        asked.append(durable)
        return plain(durable)

    monkeypatch.setattr(outbox.db, "transaction", spied)
    try:
        outbox.store_page([tx(1), tx(2)], 1, 2)
        rollback = replace(tx(3), kind="rollback", status="pending")
        outbox.record([Attempt(replace(tx(1), status="dead", attempts=1), "no_answer", 0, "", more=(rollback,)),
                       Attempt(replace(tx(2), status="dead", attempts=1), "no_answer", 0, "")])
        assert asked[-1] is True
        outbox.decide("tx-2", "resolve", "ops@casino", "settled by phone")
        assert asked[-1] is True
    finally:
        outbox.db.close()

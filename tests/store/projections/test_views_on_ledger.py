"""The views over the real ledger fed by the simulator, on SQLite and PostgreSQL:
a projection caught up after every chunk of the feed equals a rebuild, the
books balance, GGR equals the house accounts."""
from __future__ import annotations

import uuid
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.sim.simulator import simulate
from projections.runner import Projector
from projections.sql import dump


@contextmanager
def fresh_store(store_url: str):
    """Hypothesis reuses one fixture across examples: give each example its own store."""
    if store_url.startswith("sqlite:///"):
        yield store_url.replace("ledger.db", f"ledger-{uuid.uuid4().hex[:8]}.db")
        return
    base, _, schema = store_url.partition("?schema=")
    mine = f"{schema}_{uuid.uuid4().hex[:6]}"
    yield f"{base}?schema={mine}"
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{mine}" CASCADE')


def check_books(p: Projector) -> None:
    for currency, total, _ in p.db.query(
            "SELECT currency, SUM(balance_minor), COUNT(*) FROM proj_balances GROUP BY currency"):
        assert total == 0, currency
    ggr = dict(((t, c), g) for t, c, g in p.db.query(
        "SELECT table_id, currency, SUM(ggr_minor) FROM proj_ggr GROUP BY table_id, currency"))
    house = dict(((a[len("house:"):], c), b) for a, c, b in p.db.query(
        "SELECT account, currency, balance_minor FROM proj_balances WHERE kind='house'"))
    assert {k: v for k, v in ggr.items() if v} == {k: v for k, v in house.items() if v}
    closed_rounds_holding = p.db.query(
        "SELECT b.account FROM proj_balances b JOIN proj_rounds r ON b.account = 'round:' || r.round_id "
        "WHERE r.status IN ('settled', 'voided') AND b.balance_minor <> 0")
    assert closed_rounds_holding == []


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), chunk=st.integers(50, 400))
def test_incremental_over_simulated_feed_equals_rebuild(store_url, seed: int, chunk: int) -> None:
    feed = list(simulate(tables=3, rounds=6, seed=seed, fault_rate=150))
    with fresh_store(store_url) as url:
        run_chunks(url, feed, chunk)


def run_chunks(url: str, feed: list[bytes], chunk: int) -> None:
    app = open_app(url)
    p = Projector(EventLog(app), page_size=64)
    for i in range(0, len(feed), chunk):
        app.ingest(feed[i:i + chunk])
        p.catch_up()
    check_books(p)
    incremental = {t.name: dump(p.db, t) for v in p.views for t in v.tables}
    p.rebuild()
    p.catch_up()
    assert {t.name: dump(p.db, t) for v in p.views for t in v.tables} == incremental
    p.close()
    app.close()

"""Leases with fencing tokens (ledger/leases.py) on PostgreSQL: one holder at a time, takeover
after expiry by the server's clock, and a holder that lost its lease cannot commit a fenced
write after its successor took over."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ledger.leases import LeaseLost, Leases, fence
from ledger.library.recorders import Fence
from ledger.store import open_app
from tests.e2e.service.conftest import feed

pytestmark = pytest.mark.postgres
TTL_MS = 300
RUN_OUT_S = 0.5  # longer than the lease


@pytest.fixture
def connect(pg_schema_url: str) -> Iterator[Any]:
    """Connections in the test's schema (autocommit; the fixture closes them)."""
    base, schema = pg_schema_url.split("?schema=")
    opened: list[psycopg.Connection[Any]] = []

    def make() -> psycopg.Connection[Any]:
        conn = psycopg.connect(base.split("?")[0], autocommit=True)
        conn.execute(f'SET search_path TO "{schema}"')
        opened.append(conn)
        return conn

    make().execute("CREATE TABLE writes (partition text, token bigint)")
    yield make
    for conn in opened:
        conn.close()


def _write(conn: Any, token: int) -> None:
    """A write for partition p0, fenced by `token`, in its own transaction."""
    with conn.transaction(), conn.cursor() as cur:
        fence(cur, "p0", token)
        cur.execute("INSERT INTO writes VALUES ('p0', %s)", (token,))


def test_one_holder_at_a_time_and_takeover_after_the_lease_ran_out(connect: Any) -> None:
    a, b = Leases(connect(), "host-a", TTL_MS), Leases(connect(), "host-b", TTL_MS)
    a.create()
    token = a.acquire("p0")
    assert token == 1
    assert b.acquire("p0") is None  # held
    assert a.acquire("p0") == token  # the holder again: same token, expiry moved on
    assert a.renew("p0", token)
    time.sleep(RUN_OUT_S)  # not renewed: runs out (the server's clock)
    successor = b.acquire("p0")
    assert successor == token + 1
    assert not a.renew("p0", token)  # the old holder learns it lost the lease
    assert a.acquire("p0") is None


def test_a_holder_that_lost_its_lease_cannot_commit_after_the_takeover(connect: Any) -> None:
    a, b = Leases(connect(), "host-a", TTL_MS), Leases(connect(), "host-b", TTL_MS)
    a.create()
    old = a.acquire("p0")
    assert old is not None
    _write(a.conn, old)  # while held: commits
    time.sleep(RUN_OUT_S)  # a frozen process: its lease runs out, whatever it believes
    new = b.acquire("p0")
    assert new is not None
    with pytest.raises(LeaseLost):
        _write(a.conn, old)  # it wakes up and writes: refused, nothing committed
    _write(b.conn, new)
    assert a.conn.execute("SELECT token FROM writes ORDER BY token").fetchall() == [(old,), (new,)]


def test_a_takeover_waits_for_the_fenced_write_in_flight(connect: Any) -> None:
    a, b = Leases(connect(), "host-a", TTL_MS), Leases(connect(), "host-b", TTL_MS)
    a.create()
    old = a.acquire("p0")
    assert old is not None
    writer = a.conn
    taken: list[int | None] = []
    with writer.transaction(), writer.cursor() as cur:
        fence(cur, "p0", old)  # checked: the row is locked until this transaction ends
        time.sleep(RUN_OUT_S)  # the lease runs out meanwhile
        thread = threading.Thread(target=lambda: taken.append(b.acquire("p0")))
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and not taken  # the successor waits for this commit
        cur.execute("INSERT INTO writes VALUES ('p0', %s)", (old,))
    thread.join(10)
    assert taken == [old + 1]  # took over after the old holder's last commit, not before it


def test_release_hands_the_lease_over_at_once(connect: Any) -> None:
    a, b = Leases(connect(), "host-a", 60_000), Leases(connect(), "host-b", 60_000)
    a.create()
    token = a.acquire("p0")
    assert token is not None
    a.release("p0", token)
    assert b.acquire("p0") == token + 1
    assert Leases(connect(), "host-a", 60_000).acquire("p1") == 1  # leases are per name


def test_a_renewal_does_not_wait_for_the_holders_own_fenced_write(connect: Any) -> None:
    """The fence locks FOR KEY SHARE and the token is a key column: a takeover waits for the
    write in flight (test above), a renewal of the holder's (expires_at only) does not."""
    a = Leases(connect(), "host-a", 60_000)
    a.create()
    token = a.acquire("p0")
    assert token is not None
    writer = connect()
    writer.execute("SET lock_timeout = '2s'")
    with writer.transaction(), writer.cursor() as cur:
        fence(cur, "p0", token)
        assert a.renew_all({"p0": token}) == {"p0"}  # at once: no lock wait (it would time out)


def test_renew_all_keeps_only_the_leases_still_held(connect: Any) -> None:
    a, b = Leases(connect(), "host-a", TTL_MS), Leases(connect(), "host-b", 60_000)
    a.create()
    t0, t1 = a.acquire("p0"), a.acquire("p1")
    assert t0 is not None and t1 is not None
    time.sleep(RUN_OUT_S)
    assert b.acquire("p1") == t1 + 1  # p1 ran out and was taken over
    assert a.renew_all({"p0": t0, "p1": t1}) == {"p0"}
    live = {(lease.name, lease.holder, lease.live) for lease in a.snapshot()}
    assert live == {("p0", "host-a", True), ("p1", "host-b", True)}


# ------------------------------------------------------------------ the ledger's write path
LINES = feed(tables=2, rounds=2, fault_rate=0)


def _commands(app: Any) -> int:
    return len(app.ledger_recorder().select_commands([json.loads(x)["command_id"] for x in LINES]))


@pytest.mark.parametrize("path", ["one_statement", "copy"])
def test_a_fenced_batch_commits_under_its_lease_and_is_refused_after_a_takeover(pg_schema_url: str, path: str) -> None:
    """`LedgerApp.run_batch(fence=...)` checks the lease in the batch's own transaction, on both
    write paths: refused (`LeaseLost`) once another holder took the lease, and nothing of the
    batch commits."""
    app = open_app(pg_schema_url)
    try:
        if path == "copy":
            app.recorder.one_statement_rows_max = 0  # type: ignore[attr-defined]
        base, schema = pg_schema_url.split("?schema=")
        conn = psycopg.connect(base, autocommit=True)
        conn.execute(f'SET search_path TO "{schema}"')
        a, b = Leases(conn, "host-a", TTL_MS), Leases(conn, "host-b", 60_000)
        token = a.acquire("slot-0")
        assert token is not None
        half = len(LINES) // 2
        app.run_batch(LINES[:half], fence=Fence("slot-0", token))
        done = _commands(app)
        assert done > 0
        time.sleep(RUN_OUT_S)
        assert b.acquire("slot-0") == token + 1
        with pytest.raises(LeaseLost):
            app.run_batch(LINES[half:], fence=Fence("slot-0", token))
        assert _commands(app) == done  # nothing of the refused batch
        app.run_batch(LINES[half:], fence=Fence("slot-0", token + 1))  # the successor's: commits
        assert _commands(app) > done
        conn.close()
    finally:
        app.close()


def test_a_sqlite_store_takes_no_fenced_batch(tmp_path: Any) -> None:
    """Leases live in PostgreSQL: a fence on SQLite is a mistake, never silently ignored."""
    from domain.errors import InvariantBroken

    app = open_app(f"sqlite:///{tmp_path / 'l.db'}")
    try:
        with pytest.raises(InvariantBroken):
            app.run_batch(LINES[:5], fence=Fence("slot-0", 1))
        assert _commands(app) == 0
    finally:
        app.close()

"""Leases with fencing tokens (ledger/leases.py) on PostgreSQL: one holder at a time, takeover
after expiry by the server's clock, and a holder that lost its lease cannot commit a fenced
write after its successor took over."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ledger.leases import LeaseLost, Leases, fence

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

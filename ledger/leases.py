"""Leases with fencing tokens in the store (PostgreSQL): who may write for a partition.

Issue 33's partitions owned by leases (docs/scaling.md, "Partition leases"): `ledger consume
--lease` holds its slots by them (ops/jetstream/leased.py) and fences every batch. A lease is a row `ledger_leases(name, holder, token,
expires_at)`:

- `acquire` takes a lease nobody holds, or one whose time ran out, or one the holder already
  has, and returns its fencing token; every change of holder increments the token.
- `renew` moves the expiry on, only while the token is still the lease's.
- Times are the server's (`now()`), never a holder's clock: a paused process that wakes
  up believing it still holds the lease is judged by the store.
- `fence`, inside the transaction that writes for the partition, locks the lease's row
  (FOR KEY SHARE: the token is a key column, a renewal is no key update and does not wait)
  and refuses (`LeaseLost`) unless the token is still current. A successor's
  takeover updates that row, so it waits for a fenced transaction in flight to end; and a
  fenced transaction that starts after the takeover sees the new token. So a holder that
  lost its lease never commits after its successor took over, whatever its clock says.
  Expiry alone does not refuse: a late commit harms no one until a successor exists.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from domain.errors import require

TABLE = "ledger_leases"
# UNIQUE (name, token) adds nothing to the primary key's integrity: it makes `token` a key column,
# so a takeover (an update of the token) takes the row's FOR UPDATE lock and waits for a fenced
# transaction's FOR KEY SHARE, while a renewal (expires_at only) does not: a holder's renewals
# never queue behind its own batches in flight.
COLUMNS = ("(name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL, "
           "acquired_at timestamptz NOT NULL DEFAULT now(), UNIQUE (name, token))")
CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} {COLUMNS}"
# One statement, so two holders acquiring at once are ordered by the row's lock.
ACQUIRE = (f"INSERT INTO {TABLE} AS l (name, holder, token, expires_at) "
           "VALUES (%(name)s, %(holder)s, 1, now() + make_interval(secs => %(ttl)s / 1000.0)) "
           "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, "
           "token = l.token + CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN 0 ELSE 1 END, "
           "acquired_at = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.acquired_at ELSE now() END "
           "WHERE l.holder = excluded.holder OR l.expires_at <= now() RETURNING l.token")
RENEW = (f"UPDATE {TABLE} SET expires_at = now() + make_interval(secs => %(ttl)s / 1000.0) "
         "WHERE name = %(name)s AND token = %(token)s AND holder = %(holder)s RETURNING token")
RELEASE = f"UPDATE {TABLE} SET expires_at = now() WHERE name = %(name)s AND token = %(token)s AND holder = %(holder)s"
# Every lease of this holder's in one statement (and so one `now()`: a host's row and its
# slots' rows run out at the same instant, and no one sees a dead host's slots free while the
# host still counts as live).
RENEW_ALL = (f"UPDATE {TABLE} l SET expires_at = now() + make_interval(secs => %(ttl)s / 1000.0) "
             "FROM unnest(%(names)s::text[], %(tokens)s::bigint[]) AS x(name, token) "
             "WHERE l.name = x.name AND l.token = x.token AND l.holder = %(holder)s RETURNING l.name")
SNAPSHOT = f"SELECT name, holder, token, expires_at > now() FROM {TABLE}"
FENCE = "SELECT token FROM {table} WHERE name = %(name)s FOR KEY SHARE"


class Lease(NamedTuple):
    name: str
    holder: str
    token: int
    live: bool


class LeaseLost(Exception):
    """The lease's token moved on: another holder took it over; this transaction must not commit."""


class Leases:
    """The leases of one holder (a process: host and pid, say), on an autocommit connection."""

    def __init__(self, conn: Any, holder: str, ttl_ms: int) -> None:
        require(ttl_ms > 0, f"lease time {ttl_ms} ms must be positive")
        require(bool(holder), "a holder needs a name")
        self.conn, self.holder, self.ttl_ms = conn, holder, ttl_ms

    def create(self) -> None:
        self.conn.execute(CREATE)

    def acquire(self, name: str) -> int | None:
        """The fencing token when the lease is this holder's now; None when another holds it."""
        row = self.conn.execute(ACQUIRE, {"name": name, "holder": self.holder, "ttl": self.ttl_ms}).fetchone()
        return None if row is None else int(row[0])

    def renew(self, name: str, token: int) -> bool:
        """True while the lease is still this holder's under `token` (its expiry moved on)."""
        params = {"name": name, "token": token, "holder": self.holder, "ttl": self.ttl_ms}
        return self.conn.execute(RENEW, params).fetchone() is not None

    def renew_all(self, tokens: Mapping[str, int]) -> set[str]:
        """The names among `tokens` still this holder's (their expiry moved on, all at one instant)."""
        params = {"names": list(tokens), "tokens": list(tokens.values()), "holder": self.holder, "ttl": self.ttl_ms}
        return {str(r[0]) for r in self.conn.execute(RENEW_ALL, params).fetchall()}

    def snapshot(self) -> list[Lease]:
        """Every lease as the store has it now (live: not run out by the server's clock)."""
        return [Lease(str(n), str(h), int(t), bool(live)) for n, h, t, live in self.conn.execute(SNAPSHOT).fetchall()]

    def release(self, name: str, token: int) -> None:
        """Hand the lease back at once (a clean stop): the next acquire takes it without waiting."""
        self.conn.execute(RELEASE, {"name": name, "token": token, "holder": self.holder})


def fence(cursor: Any, name: str, token: int, table: str = TABLE) -> None:
    """Inside the caller's write transaction: LeaseLost unless `token` is still the lease's.
    The row stays locked (FOR KEY SHARE) until the transaction ends, so no takeover lands between
    this check and the commit. `table` may be schema-qualified (the store's recorder's)."""
    row = cursor.execute(FENCE.format(table=table), {"name": name}).fetchone()
    current = None if row is None else int(row["token"] if isinstance(row, Mapping) else row[0])
    if current != token:
        raise LeaseLost(f"lease {name}: token {token} is no longer current ({current})")

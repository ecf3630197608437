"""Whether the store answers, known without waiting for it (/readyz, and the fast 503 of writes).

A task on the worker's event loop probes the store every `PROBE_INTERVAL_S` on a connection
of its own, each probe bounded by `PROBE_TIMEOUT_S`: a refused or dropped connection fails
the next probe at once, a server that stopped answering fails it within the timeout, and
the first probe that succeeds after an outage makes the service ready again. So /readyz
turns 503 within ~1.5 s of the store becoming unreachable and 200 within ~0.5 s (plus a
connect) of its return. Before, /readyz read the head through the reader's pool, whose
retries (eventsourcing: 10 attempts, each waiting up to the pool's timeout for a
connection) held the answer until the store came back.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ledger.store import PG_EVENTS_TABLE, env_for

PROBE_INTERVAL_S = 0.5
PROBE_TIMEOUT_S = 1.0
RETRY_AFTER_S = 2  # what a 503 tells the client: about when the next probes will have looked again


@dataclass
class Status:
    ready: bool
    position: int | None
    error: str | None
    checked: float  # time.monotonic() of the probe


class StoreHealth:
    def __init__(self, probe: Callable[[], Awaitable[int]], interval_s: float = PROBE_INTERVAL_S,
                 timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self.probe, self.interval_s, self.timeout_s = probe, interval_s, timeout_s
        # The store answered at startup (the apps were opened on it): ready until a probe says otherwise.
        self.status = Status(True, None, None, time.monotonic())
        self._task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        return self.status.ready

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="store-health")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        closer = getattr(self.probe, "close", None)
        if closer is not None:
            closer()

    async def check(self) -> Status:
        try:
            async with asyncio.timeout(self.timeout_s):
                position = await self.probe()
        except TimeoutError:
            self.status = Status(False, None, f"the store did not answer within {self.timeout_s:g} s", time.monotonic())
        except Exception as exc:  # any failure to read means not ready
            self.status = Status(False, None, (str(exc).strip() or type(exc).__name__)[:200], time.monotonic())
        else:
            self.status = Status(True, position, None, time.monotonic())
        return self.status

    async def _run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.interval_s)


class PgProbe:
    """The head of the events table, read on one connection of the probe's own (never the
    pool's: a pool waits and retries). A probe that failed or timed out drops its
    connection; the next one connects anew."""

    def __init__(self, db_url: str) -> None:
        from psycopg import sql

        env = env_for(db_url)
        self.kwargs: dict[str, Any] = {
            "dbname": env["POSTGRES_DBNAME"], "host": env["POSTGRES_HOST"], "port": env["POSTGRES_PORT"],
            "user": env["POSTGRES_USER"], "password": env["POSTGRES_PASSWORD"] or None, "autocommit": True,
            "connect_timeout": 2,  # libpq's least; the probe's own timeout is shorter and wins
            "application_name": "ledger-serve-health",
        }
        self.statement = sql.SQL("SELECT max(notification_id) FROM {}.{}").format(
            sql.Identifier(env["POSTGRES_SCHEMA"] or "public"), sql.Identifier(PG_EVENTS_TABLE))
        self.conn: Any = None

    async def __call__(self) -> int:
        import psycopg

        try:
            if self.conn is None:
                self.conn = await psycopg.AsyncConnection.connect(**self.kwargs)
            cursor = await self.conn.execute(self.statement)
            row = await cursor.fetchone()
        except BaseException:  # a timeout (cancelled) included: this connection is in an unknown state
            self.close()
            raise
        return int(row[0] or 0) if row else 0

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.pgconn.finish()  # at once, no round trip: the server may be the one not answering


def probe_for(db_url: str, reader: Any) -> Callable[[], Awaitable[int]]:
    """The store's probe: PostgreSQL on a connection of its own; a SQLite file read in a thread."""
    if env_for(db_url)["PERSISTENCE_MODULE"] == "eventsourcing.postgres":
        return PgProbe(db_url)

    async def sqlite_head() -> int:
        return int(await asyncio.to_thread(reader.head))

    return sqlite_head

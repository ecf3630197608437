"""Whether the store answers, known without waiting for it (/readyz, and the fast 503 of writes).

A task on the worker's event loop probes the store every `PROBE_INTERVAL_S` on a connection
of its own (in a thread), each probe bounded by `PROBE_TIMEOUT_S`: a refused or dropped connection fails
the next probe at once, a server that stopped answering fails it within the timeout, and
the first probe that succeeds after an outage makes the service ready again. So /readyz
turns 503 within ~1.5 s of the store becoming unreachable and 200 within ~0.5 s (plus a
connect) of its return. Before, /readyz read the head through the reader's pool, whose
retries (eventsourcing: 10 attempts, each waiting up to the pool's timeout for a
connection) held the answer until the store came back.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ledger.store import PG_EVENTS_TABLE, env_for

PROBE_INTERVAL_S = 0.5
PROBE_TIMEOUT_S = 1.0
RETRY_AFTER_S = 2  # what a 503 tells the client: about when the next probes will have looked again
VIEWS_INTERVAL_S = 2.0  # how often the stopped views are read again (for /readyz; a stop is rare and stays)


@dataclass
class Status:
    ready: bool
    position: int | None
    error: str | None
    checked: float  # time.monotonic() of the probe


class StoreHealth:
    """The store's status from a probe (a blocking call) run in threads: a probe that does not
    answer in time is left to finish or fail in its thread, never cancelled (psycopg answers
    a cancelled query by asking the server to cancel it, which waits on the same store that
    does not answer), and at most `STUCK_MAX` such probes are waited for at once."""

    STUCK_MAX = 3

    def __init__(self, probe: Callable[[], int], interval_s: float = PROBE_INTERVAL_S,
                 timeout_s: float = PROBE_TIMEOUT_S, views: Callable[[], list[Any]] | None = None,
                 views_interval_s: float = VIEWS_INTERVAL_S) -> None:
        self.probe, self.interval_s, self.timeout_s = probe, interval_s, timeout_s
        # The views stopped at an event (`projections.queries.stopped_views`), read by the task
        # too: /readyz lists them without waiting on the store (a stalled store held it a second).
        self.views, self.views_interval_s = views, views_interval_s
        self.views_stopped: list[Any] = []
        self._views_job: asyncio.Future[list[Any]] | None = None
        self._views_read = -views_interval_s
        # The store answered at startup (the apps were opened on it): ready until a probe says otherwise.
        self.status = Status(True, None, None, time.monotonic())
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._pool = ThreadPoolExecutor(max_workers=self.STUCK_MAX + 1, thread_name_prefix="store-health")
        self._running = 0
        self._in_flight: set[asyncio.Future[Any]] = set()  # probes and reads of the views

    @property
    def ready(self) -> bool:
        return self.status.ready

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="store-health")

    async def stop(self) -> None:
        # The flag as well as the cancel: on Python 3.11 a wait_for whose inner future completes
        # as it is cancelled can swallow the cancellation, and the loop would run on (a server's
        # shutdown hung on it). asyncio.wait neither raises nor cancels: at most one more round.
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=self.interval_s + self.timeout_s + 1.0)
        # A probe still reading must end before the store closes under it (closing a SQLite
        # connection another thread is reading crashed a test process); bounded, as a probe is.
        in_flight = {f for f in self._in_flight if not f.done()}
        if in_flight:
            await asyncio.wait(in_flight, timeout=self.timeout_s)
        self._pool.shutdown(wait=False)
        closer = getattr(self.probe, "close", None)
        if closer is not None:
            closer()

    async def check(self) -> Status:
        if self._running > self.STUCK_MAX:
            self.status = Status(False, None, f"{self._running} probes of the store are still waiting", time.monotonic())
            return self.status
        self._running += 1
        future = asyncio.get_running_loop().run_in_executor(self._pool, self.probe)
        self._in_flight.add(future)
        future.add_done_callback(self._finished)
        try:
            position = await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
        except TimeoutError:
            self.status = Status(False, None, f"the store did not answer within {self.timeout_s:g} s", time.monotonic())
        except Exception as exc:  # any failure to read means not ready
            self.status = Status(False, None, (str(exc).strip() or type(exc).__name__)[:200], time.monotonic())
        else:
            self.status = Status(True, position, None, time.monotonic())
        return self.status

    def _finished(self, future: asyncio.Future[int]) -> None:
        self._running -= 1
        self._in_flight.discard(future)
        if not future.cancelled():
            future.exception()  # retrieved: a late failure of an abandoned probe is no "never retrieved" warning

    async def _read_views(self) -> None:
        """The stopped views, read in the pool and bounded as a probe is; when the read fails or
        is late, the last known stay (the probe says whether the store answers)."""
        if self.views is None or (self._views_job is not None and not self._views_job.done()):
            return
        self._views_read = time.monotonic()
        job = self._views_job = asyncio.get_running_loop().run_in_executor(self._pool, self.views)
        self._in_flight.add(job)  # waited for at stop, as a probe is
        job.add_done_callback(self._views_done)
        try:
            self.views_stopped = await asyncio.wait_for(asyncio.shield(job), self.timeout_s)
        except Exception:  # late or failed: the next round reads again
            pass

    def _views_done(self, future: asyncio.Future[list[Any]]) -> None:
        self._in_flight.discard(future)
        if not future.cancelled():
            future.exception()  # retrieved: a late failure is no "never retrieved" warning

    async def _run(self) -> None:
        while not self._stopping:
            await self.check()
            if self.ready and time.monotonic() - self._views_read >= self.views_interval_s:
                await self._read_views()
            await asyncio.sleep(self.interval_s)


class PgProbe:
    """The head of the events table, read on a connection of the probe's own (never the
    pool's: a pool waits and retries). A connection that failed is closed; one stuck in a
    probe stays with it, and the next probe connects anew. TCP keepalives and libpq's
    tcp_user_timeout end a connection whose server vanished from the network."""

    def __init__(self, db_url: str) -> None:
        from psycopg import sql

        env = env_for(db_url)
        self.kwargs: dict[str, Any] = {
            "dbname": env["POSTGRES_DBNAME"], "host": env["POSTGRES_HOST"], "port": env["POSTGRES_PORT"],
            "user": env["POSTGRES_USER"], "password": env["POSTGRES_PASSWORD"] or None, "autocommit": True,
            "connect_timeout": 2,  # libpq's least; the probe's own timeout is shorter and answers first
            "keepalives": 1, "keepalives_idle": 2, "keepalives_interval": 1, "keepalives_count": 3,
            "tcp_user_timeout": 5000, "application_name": "ledger-serve-health",
        }
        self.statement = sql.SQL("SELECT max(notification_id) FROM {}.{}").format(
            sql.Identifier(env["POSTGRES_SCHEMA"] or "public"), sql.Identifier(PG_EVENTS_TABLE))
        self._idle: Any = None
        self._lock = threading.Lock()

    def __call__(self) -> int:
        import psycopg

        with self._lock:
            conn, self._idle = self._idle, None
        if conn is None:
            conn = psycopg.connect(**self.kwargs)
        try:
            row = conn.execute(self.statement).fetchone()
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if self._idle is None:
                self._idle, conn = conn, None
        if conn is not None:
            conn.close()
        return int(row[0] or 0) if row else 0

    def close(self) -> None:
        with self._lock:
            conn, self._idle = self._idle, None
        if conn is not None:
            conn.close()


def probe_for(db_url: str, reader: Any) -> Callable[[], int]:
    """The store's probe: PostgreSQL on a connection of its own; a SQLite file through the reader."""
    if env_for(db_url)["PERSISTENCE_MODULE"] == "eventsourcing.postgres":
        return PgProbe(db_url)
    return lambda: int(reader.head())

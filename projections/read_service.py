"""The read service: one object per process through which every read reaches the views
(the command line, the HTTP routes and the console's pages alike).

It holds the event log reader, a pool of connections to the views and the catch-up. The
store is the truth: a read first asks the store's head and the views' lowest position (two
small queries) and, when the views are behind, folds what they have not seen (one catch-up
at a time per process: a second runner would only roll back). The first read of a process
always catches up, so a view whose definition changed is rebuilt before it answers. A
catch-up that left some view short of the head (a view stopped at an event, events that
cannot be read) is not run again until the head or the views move: it would find the same.
The stops are reported where they were: `ledger`'s line on standard error (ops/cli/options.py
`open_views`) and `/readyz`'s `views_stopped` (`queries.stopped_views`).
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import psycopg

from ledger.eventlog import EventLog
from projections.runner import PAGE_SIZE_DEFAULT, TRACKING, UNREACHABLE, CatchUp, ProgressFn, Projector
from projections.sql import Db

IDLE_CONNECTIONS_MAX = 4  # a connection costs more than a page's queries: kept for the next reads
CACHED_FIGURES_MAX = 64
T = TypeVar("T")


@dataclass(frozen=True)
class Reading:
    """One read on caught-up views: the connection to them and the store's event log."""

    log: EventLog
    db: Db


class ReadService:
    """Per process: the event log, idle view connections, the catch-up and figures kept per
    store head. `gc_off_per_run`: as `Projector`'s (a server keeps its collector on)."""

    def __init__(self, log: EventLog, *, page_size: int = PAGE_SIZE_DEFAULT, gc_off_per_run: bool = True,
                 owns_log: bool = False) -> None:
        self.log = log
        self.page_size, self.gc_off_per_run, self._owns_log = page_size, gc_off_per_run, owns_log
        self._idle: list[Db] = []
        self._figures: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()  # the pool and the figures
        self._catching_up = threading.Lock()
        self._left: tuple[int, int] | None = None  # (head, lowest position) the last catch-up left; None: none yet

    @classmethod
    def open(cls, db_url: str | None, *, ledger_required: bool = True,
             page_size: int = PAGE_SIZE_DEFAULT) -> ReadService:
        """A read service on its own event log (closed with it)."""
        return cls(EventLog.open(db_url, ledger_required=ledger_required), page_size=page_size, owns_log=True)

    def __enter__(self) -> ReadService:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # ---------------------------------------------------------------- catch-up
    @contextmanager
    def projector(self) -> Iterator[Projector]:
        """The process's turn at the views' runner (`ledger project` rebuilds through it)."""
        with self._catching_up:
            projector = Projector(self.log, page_size=self.page_size, gc_off_per_run=self.gc_off_per_run)
            try:
                yield projector
            finally:
                projector.close()

    def catch_up(self, progress: ProgressFn | None = None) -> CatchUp:
        """Fold every event the views have not seen (`Projector.catch_up`)."""
        head = self.log.head()
        with self.projector() as projector:
            result = projector.catch_up(progress)
            self._left = (head, lowest_position(projector.db))
        return result

    def _behind(self, db: Db, head: int) -> bool:
        if self._left is None:
            return True
        lowest = lowest_position(db)
        return lowest < head and self._left != (head, lowest)

    # ---------------------------------------------------------------- reads
    @contextmanager
    def views(self) -> Iterator[Db]:
        """A connection to the views, caught up with the store's head as of now."""
        head = self.log.head()
        db, behind = self._checked(head)
        try:
            if behind:
                self.catch_up()
            yield db
        except BaseException:
            db.close()  # a failed statement may have left the connection unusable
            raise
        else:
            self._give_back(db)

    @contextmanager
    def reading(self) -> Iterator[Reading]:
        """`views()` with the event log beside it."""
        with self.views() as db:
            yield Reading(self.log, db)

    def figures(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()`'s result for the store's current head, computed once per head (figures
        computed from every row of a view: the monitor's tests, the GGR of every day)."""
        key = (name, self.log.head())
        with self._lock:
            if key in self._figures:
                return self._figures[key]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            if len(self._figures) >= CACHED_FIGURES_MAX:
                self._figures.clear()
            self._figures[key] = value
        return value

    # ---------------------------------------------------------------- the pool
    def _checked(self, head: int) -> tuple[Db, bool]:
        """A connection and whether the views are behind `head` (its first statement). An idle
        connection whose session is gone (a restarted server, terminated sessions: found only by
        using it) is closed with every other idle one, and one new connection tries again: a
        read after the store came back is answered, not a 500."""
        db = self._take()
        try:
            return db, self._behind_or_closed(db, head)
        except UNREACHABLE:
            self._drop_idle()
        db = Db.for_store(self.log.backend)
        return db, self._behind_or_closed(db, head)

    def _behind_or_closed(self, db: Db, head: int) -> bool:
        """`_behind`; a connection it fails on is closed (it may be unusable)."""
        try:
            return self._behind(db, head)
        except BaseException:
            db.close()
            raise

    def _drop_idle(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for db in idle:
            try:
                db.close()
            except UNREACHABLE:  # its session is gone already
                pass

    def _take(self) -> Db:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Db.for_store(self.log.backend)

    def _give_back(self, db: Db) -> None:
        with self._lock:
            if len(self._idle) < IDLE_CONNECTIONS_MAX:
                self._idle.append(db)
                return
        db.close()

    def close(self) -> None:
        self._drop_idle()
        if self._owns_log:
            self.log.close()


def lowest_position(db: Db) -> int:
    """The lowest position of the views (-1 before the first catch-up made them)."""
    try:
        found = db.query(f"SELECT MIN(position) FROM {TRACKING.name}")
    except (psycopg.OperationalError, psycopg.InterfaceError):  # the session is gone: not "no views yet"
        raise
    except Exception:  # no views yet: the catch-up makes them
        return -1
    return int(found[0][0]) if found and found[0][0] is not None else -1

"""How the console's pages read the views: caught up with the store before they answer, as
every read of the service is, without a projector per page when nothing is left to fold.

A page asks the store's head and the views' lowest position (two small queries); only when
the views are behind does it run the service's catch-up (ops/service/routes/deps.py `views`).
The connections to the views are kept for the process's next pages (a connection costs
more than a page's queries). Figures computed from every row of a view (the monitor's
tests, the GGR of every day) are kept per store head: the same head, the same figures.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from fastapi import Request

from ledger.eventlog import EventLog
from projections.runner import TRACKING
from projections.sql import Db

IDLE_CONNECTIONS_MAX = 4
CACHED_FIGURES_MAX = 64
T = TypeVar("T")


class PageReads:
    """Per process: idle view connections and figures kept per store head."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._idle: list[Db] = []
        self._figures: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

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

    @contextmanager
    def views(self, request: Request) -> Iterator[Db]:
        """A connection to the views, caught up with the store's head as of now."""
        head = self.log.head()
        db = self._take()
        try:
            if _lowest_position(db) < head:
                from ops.service.routes.deps import views

                with views(request):
                    pass
            yield db
        except BaseException:
            db.close()  # a failed statement may have left the connection unusable
            raise
        else:
            self._give_back(db)

    def figures(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()`'s result for the store's current head, computed once per head."""
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

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for db in idle:
            db.close()


def _lowest_position(db: Db) -> int:
    try:
        found = db.query(f"SELECT MIN(position) FROM {TRACKING.name}")
    except Exception:  # no views yet: the catch-up makes them
        return -1
    return int(found[0][0]) if found and found[0][0] is not None else -1


_MADE = threading.Lock()


def made_once(request: Request, name: str, make: Callable[[Any], T]) -> T:
    """The app state's `name`, made from the state by `make` on first use (once, whatever
    the threads of the worker)."""
    state = request.app.state
    found: T | None = getattr(state, name, None)
    if found is None:
        with _MADE:
            found = getattr(state, name, None)
            if found is None:
                found = make(state)
                setattr(state, name, found)
    return found


def page_reads(request: Request) -> PageReads:
    return made_once(request, "ui_reads", lambda state: PageReads(state.reader))

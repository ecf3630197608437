"""A reader paging through the notifications never skips an event while writers commit.

Projections read `select_notifications(position, limit)` and move their position past
the last id they saw. If a transaction holding lower ids committed after one holding
higher ids, such a reader would pass over the lower ids for good. The PostgreSQL
recorder takes the library's EXCLUSIVE table lock before it inserts events, so ids
are handed out in commit order; SQLite has one writer at a time anyway.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from eventsourcing.persistence import StoredEvent
from psycopg import Cursor
from psycopg.rows import DictRow, TupleRow

from ledger.library.arrays import EncodedArray
from ledger.library.postgres_recorder import ONE_STATEMENT_ROWS_MAX, LedgerPostgresRecorder
from ledger.store import open_app
from tests.store.ledger.test_recorders import all_ids, rows, things

WRITERS = 3
SAVES = 15  # per writer
PAGE = 7  # small pages: the reader runs many reads while the writers commit


class Reader:
    """Pages from its position as a projection does, remembering every id in order."""

    def __init__(self, app: Any) -> None:
        self.app, self.seen = app, []

    def read(self) -> int:
        start = self.seen[-1] + 1 if self.seen else 1
        notes = self.app.recorder.select_notifications(start, PAGE)
        self.seen.extend(n.id for n in notes)
        return len(notes)

    def missed(self, stored: Sequence[int]) -> list[int]:
        assert self.seen == sorted(set(self.seen)), "ids went backwards or repeated"
        return sorted(set(stored) - set(self.seen))


def _write(url: str, writer: int, errors: list[BaseException], copy: bool = False) -> None:
    try:
        app = open_app(url, CREATE_TABLE="no")  # created once before (concurrent DDL would clash)
        if copy:  # PostgreSQL's large-batch path for these small saves too
            assert isinstance(app.recorder, LedgerPostgresRecorder)
            app.recorder.one_statement_rows_max = 0
        try:
            for i in range(SAVES):
                app.save(*things(3, notes=2), ledger_rows=rows(f"w{writer}-{i}"))
        finally:
            app.close()
    except BaseException as exc:  # reported by the test thread
        errors.append(exc)


@pytest.mark.parametrize("copy", [False, pytest.param(True, marks=pytest.mark.postgres)])
def test_a_reader_paging_while_writers_commit_sees_every_event(store_url: str, copy: bool) -> None:
    readers_app = open_app(store_url)  # creates the tables before the writers start
    try:
        reader, errors = Reader(readers_app), []
        threads = [threading.Thread(target=_write, args=(store_url, w, errors, copy)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            reader.read()
        for t in threads:
            t.join()
        while reader.read():
            pass
        assert errors == []
        stored = all_ids(readers_app)
        assert len(stored) == WRITERS * SAVES * 9
        assert reader.missed(stored) == []
    finally:
        readers_app.close()


# ------------------------------------------------------------------ PostgreSQL, step by step

class PausingRecorder(LedgerPostgresRecorder):
    """Holds its transaction open after the events are written, until told to commit:
    on the COPY path (large batches), and on the one-statement one (small batches), where
    the write function's call runs inside a transaction held open after it returns."""

    hold: threading.Event | None = None
    held: threading.Event | None = None

    def _pause(self) -> None:
        if self.hold is not None and self.held is not None:
            self.held.set()
            assert self.hold.wait(30)

    def _write_events(self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent]) -> list[int]:
        ids = super()._write_events(curs, stored_events)
        self._pause()
        return ids

    def _run_write(self, curs: Cursor[TupleRow], params: list[EncodedArray]) -> None:
        with curs.connection.transaction():  # the call's own transaction, held open
            super()._run_write(curs, params)
            self._pause()


class UnlockedRecorder(PausingRecorder):
    """The same without the table lock: what the lock prevents."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lock_table_statements = []


PATHS = ["one_statement", "copy"]


def _late_commit_scenario(url: str, recorder: type[PausingRecorder], path: str) -> tuple[list[int], list[int], bool]:
    """Writer A draws ids and waits before committing; writer B saves meanwhile; the
    reader reads, then A commits and everyone finishes. Returns (stored ids, ids the
    reader saw, whether B had to wait for A)."""
    topic = f"{recorder.__module__}:{recorder.__qualname__}"
    reader_app = open_app(url)
    a_app, b_app = (open_app(url, APPLICATION_RECORDER_TOPIC=topic, CREATE_TABLE="no") for _ in "ab")
    try:
        a_rec = a_app.recorder
        assert isinstance(a_rec, PausingRecorder)
        a_rec.hold, a_rec.held = threading.Event(), threading.Event()
        for app in (a_app, b_app):
            assert isinstance(app.recorder, LedgerPostgresRecorder)
            app.recorder.one_statement_rows_max = ONE_STATEMENT_ROWS_MAX if path == "one_statement" else 0
        a = threading.Thread(target=a_app.save, args=tuple(things(2, notes=1)))
        a.start()
        assert a_rec.held.wait(30)
        b = threading.Thread(target=b_app.save, args=tuple(things(2, notes=1)))
        b.start()
        b.join(0.5 if recorder is PausingRecorder else 30)  # with the lock B waits; without, it commits
        b_waited = b.is_alive()
        reader = Reader(reader_app)
        while reader.read():
            pass
        a_rec.hold.set()
        a.join(30)
        b.join(30)
        assert not a.is_alive() and not b.is_alive()
        while reader.read():
            pass
        return all_ids(reader_app), reader.seen, b_waited
    finally:
        for app in (a_app, b_app, reader_app):
            app.close()


@pytest.mark.postgres
@pytest.mark.parametrize("path", PATHS)
def test_with_the_lock_a_late_commit_cannot_be_skipped(pg_schema_url: str, path: str) -> None:
    stored, seen, b_waited = _late_commit_scenario(pg_schema_url, PausingRecorder, path)
    assert b_waited
    assert len(stored) == 8 and seen == stored


@pytest.mark.postgres
@pytest.mark.parametrize("path", PATHS)
def test_without_the_lock_the_reader_would_skip_the_late_commit(pg_schema_url: str, path: str) -> None:
    """The check above can fail: without the lock, B commits higher ids first, the
    reader moves past them, and A's lower ids, committed later, are never read."""
    stored, seen, b_waited = _late_commit_scenario(pg_schema_url, UnlockedRecorder, path)
    assert not b_waited
    assert len(stored) == 8
    assert len(set(stored) - set(seen)) == 4  # all of A's events

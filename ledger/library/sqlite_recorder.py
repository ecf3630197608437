"""The SQLite application recorder that also keeps the command index and the rejections log
(ledger/library/recorders.py): a batch's events and rows by one `executemany` per table, in one
transaction. Overrides `eventsourcing.sqlite.SQLiteApplicationRecorder.insert_events` (8.88
against 9.37 µs per event, 1.06x in `python -m ops.bench.library_bench`: kept for the index and
rejection rows it writes in the same transaction; docs/architecture-library.md).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, cast
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor

from domain.errors import require
from ledger.library.recorders import (
    COMMANDS_TABLE,
    KNOWN_COLUMNS,
    REJECTION_COLUMNS,
    REJECTIONS_TABLE,
    KnownCommand,
    LedgerRows,
    VersionRead,
    _chunks,
    _known,
    stale,
)

# Python's sqlite3 binds int, float, str and bytearray as they are, but asks every other value
# (bytes, None) for an adapter first: a registry miss, then `__adapt__` looked up on its protocol
# type, which fails by raising an AttributeError and clearing it (~0.4 µs a value, timeit in
# docs/benchmarks.md). An event's state (bytes) and an accepted command's code (None) are two a
# command. Registered adapters that hand back the same value (`bytes.__bytes__` of a bytes is
# itself; `{}.get` of anything is None) bind the same blob and NULL, without the failed lookup.
sqlite3.register_adapter(bytes, bytes.__bytes__)
sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))


HEX = "%032x"  # `HEX % uuid.int` is `uuid.hex` without the property's Python call (an event, a read)


def _text_id(originator_id: UUID | str) -> str:
    """An id as stored: a UUID (of a subclass) as its hex, a text id as it is."""
    return originator_id.hex if isinstance(originator_id, UUID) else originator_id


class LedgerSQLiteRecorder(SQLiteApplicationRecorder):
    def construct_create_table_statements(self) -> list[str]:
        return super().construct_create_table_statements() + [
            f"CREATE TABLE IF NOT EXISTS {COMMANDS_TABLE} ("
            "command_id TEXT PRIMARY KEY, round_id TEXT, type TEXT NOT NULL, "
            "payload_hash TEXT NOT NULL, status TEXT NOT NULL, code TEXT)",
            f"CREATE TABLE IF NOT EXISTS {REJECTIONS_TABLE} ("
            "id INTEGER PRIMARY KEY AUTOINCREMENT, command_id TEXT, table_id TEXT, round_no INTEGER, "
            "type TEXT, code TEXT NOT NULL, message TEXT NOT NULL, payload TEXT NOT NULL, received_at TEXT NOT NULL)",
        ]

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        """The library's write transaction (its datastore's), with the batch's rows in it."""
        rows: LedgerRows | None = kwargs.get("ledger_rows")
        require(rows is None or rows.fence is None, "leases live in PostgreSQL: a SQLite store takes no fenced batch")
        with self.datastore.transaction(commit=True) as c:
            return self._write_batch(c, stored_events, rows)

    def _write_batch(self, c: SQLiteCursor, stored_events: Sequence[StoredEvent],
                     rows: LedgerRows | None) -> list[int]:
        """The events with one `executemany` (the library runs one `execute` per event to
        read each rowid), then the command index and rejection rows, in the caller's
        transaction. The rowids are consecutive: a write transaction in SQLite is the
        only writer, and a rowid table gives each new row max(rowid) + 1."""
        returning: list[int] = []
        if stored_events:
            c.executemany(self.insert_events_statement, [
                (HEX % e.originator_id.int if type(e.originator_id) is UUID else _text_id(e.originator_id),
                 e.originator_version, e.topic, e.state)
                for e in stored_events
            ])
            c.execute("SELECT last_insert_rowid()")
            last = int(c.fetchone()[0])
            returning = list(range(last - len(stored_events) + 1, last + 1))
        if rows is not None:
            if rows.commands:
                c.executemany(
                    f"INSERT INTO {COMMANDS_TABLE} VALUES (?,?,?,?,?,?)", rows.commands,
                )
            if rows.rejections:
                c.executemany(
                    f"INSERT INTO {REJECTIONS_TABLE} ({', '.join(REJECTION_COLUMNS[1:])}) VALUES (?,?,?,?,?,?,?,?)",
                    rows.rejections,
                )
            if rows.reads:
                self._check_reads(c, rows.reads)
        return returning

    def _check_reads(self, c: SQLiteCursor, reads: Sequence[VersionRead]) -> None:
        """After the batch's writes, so under SQLite's one write lock: nobody can move an
        aggregate on between this read and the commit. Each aggregate must stand where the
        batch left it (`after`: its read version plus its own new events)."""
        ids = [HEX % r.originator_id.int for r in reads]
        stored: dict[str, int] = {}  # by the id as stored (hex): no UUID made per row, a batch reads ~175
        for chunk in _chunks(ids):
            c.execute(
                f"SELECT originator_id, MAX(originator_version) AS v FROM {self.events_table_name} "
                f"WHERE originator_id IN ({','.join('?' * len(chunk))}) GROUP BY originator_id", chunk,
            )
            stored.update((row["originator_id"], int(row["v"])) for row in c.fetchall())
        if any(stored.get(i, 0) != r.after for i, r in zip(ids, reads, strict=True)):
            raise stale(reads, {UUID(i): v for i, v in stored.items()})

    def select_commands(self, command_ids: Sequence[str]) -> dict[str, KnownCommand]:
        found: dict[str, KnownCommand] = {}
        with self.datastore.transaction(commit=False) as c:
            for chunk in _chunks(list(command_ids)):
                marks = ",".join("?" * len(chunk))
                c.execute(f"SELECT {KNOWN_COLUMNS} FROM {COMMANDS_TABLE} WHERE command_id IN ({marks})", chunk)
                for row in c.fetchall():
                    found[row["command_id"]] = _known(row)
        return found

    def existing_ids(self, originator_ids: Sequence[UUID]) -> set[UUID]:
        """Which of these aggregates have events: one query for a batch's new rounds
        instead of a failed `repository.get` (a SELECT) per round."""
        found: set[UUID] = set()
        with self.datastore.transaction(commit=False) as c:
            for chunk in _chunks([i.hex for i in originator_ids]):
                marks = ",".join("?" * len(chunk))
                c.execute(
                    f"SELECT originator_id FROM {self.events_table_name} "
                    f"WHERE originator_version = 1 AND originator_id IN ({marks})", chunk,
                )
                found.update(UUID(row["originator_id"]) for row in c.fetchall())
        return found

    def lookup(self, command_ids: Sequence[str],
               originator_ids: Sequence[UUID]) -> tuple[dict[str, KnownCommand], set[UUID]]:
        """`select_commands` and `existing_ids` (a batch's two reads)."""
        return (self.select_commands(command_ids) if command_ids else {},
                self.existing_ids(originator_ids) if originator_ids else set())

    def select_rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT * FROM {REJECTIONS_TABLE} WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit))
            return [dict(row) for row in c.fetchall()]

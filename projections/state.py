"""Rows a fold reads, the changes it returns, and where they are kept.

A view's fold is pure: `fold(rows, event) -> list[Change]`. It reads rows
through `rows.get(table, key)` and answers with `Put(table, row)` /
`Delete(table, key)`. `MemoryRows` keeps rows in dicts (unit tests, no
database); `CachedRows` is the runner's: reads fall through a page overlay
and a committed cache to the database, changes stay in the overlay until the
page's transaction commits, and a rollback simply drops the overlay.
Folds must never mutate a row they got: they build a new dict.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

from domain.errors import require
from projections.sql import Db, Table, delete_sql, select_sql, upsert_sql

CACHE_ROWS_MAX = 500_000  # beyond this the committed cache is dropped and refilled lazily
_MISSING = object()


class Put(NamedTuple):
    table: str
    row: dict[str, Any]


class Delete(NamedTuple):
    table: str
    key: tuple[Any, ...]


Change = Put | Delete


class Rows(Protocol):
    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None: ...


def key_of(table: Table, row: dict[str, Any]) -> tuple[Any, ...]:
    if len(table.key) == 1:
        return (row[table.key[0]],)
    return tuple([row[k] for k in table.key])


# ------------------------------------------------------------------ helpers
def day_of(timestamp: datetime) -> str:
    """The UTC calendar day of a server timestamp, `YYYY-MM-DD`."""
    return timestamp.astimezone(timezone.utc).date().isoformat()


def iso(timestamp: datetime) -> str:
    if timestamp.tzinfo is not timezone.utc:  # the library records UTC already: skip the conversion
        timestamp = timestamp.astimezone(timezone.utc)
    return timestamp.isoformat()


def fraction_text(f: Fraction) -> str:
    """Exact fraction as TEXT `n/d` (always with a denominator, `0/1` for zero)."""
    return f"{f.numerator}/{f.denominator}"


def parse_fraction(text: str) -> Fraction:
    num, _, den = text.partition("/")
    return Fraction(int(num), int(den or 1))


def postings_delta(postings: list[dict[str, Any]]) -> dict[str, int]:
    """Net change per account; checks again (second path) that the legs are
    integers and sum to zero."""
    delta: dict[str, int] = {}
    for leg in postings:
        account = leg["account"]
        delta[account] = delta.get(account, 0) + leg["amount_minor"]
    total = sum(delta.values())
    if total != 0 or type(total) is not int:
        require(False, f"postings do not sum to zero in int minor units (sum {total!r}): {postings}")
    return delta


# ------------------------------------------------------------------ stores
class MemoryRows:
    """All rows in dicts: for unit tests of folds and for in-process checks."""

    def __init__(self, tables: Iterable[Table]) -> None:
        self.tables = {t.name: t for t in tables}
        self.data: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {name: {} for name in self.tables}

    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        return self.data[table].get(key)

    def apply(self, changes: Iterable[Change]) -> None:
        for change in changes:
            if isinstance(change, Put):
                self.data[change.table][key_of(self.tables[change.table], change.row)] = change.row
            else:
                self.data[change.table].pop(change.key, None)

    def rows(self, table: str) -> list[dict[str, Any]]:
        return [self.data[table][k] for k in sorted(self.data[table], key=_sort_key)]


def _sort_key(key: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, "") if v is None else (1, v) for v in key)


class CachedRows:
    """Rows backed by the database with a write-back page overlay."""

    def __init__(self, db: Db, tables: Iterable[Table]) -> None:
        self.db = db
        self.tables = {t.name: t for t in tables}
        self.committed: dict[str, dict[tuple[Any, ...], Any]] = {n: {} for n in self.tables}
        self.overlay: dict[str, dict[tuple[Any, ...], Any]] = {n: {} for n in self.tables}
        self.complete = False  # True: the cache holds every row (tables were empty); no reads needed
        self._select = {n: select_sql(t) for n, t in self.tables.items()}
        self._upsert = {n: upsert_sql(t) for n, t in self.tables.items()}
        self._delete = {n: delete_sql(t) for n, t in self.tables.items()}
        self.selects = 0

    def get(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        row = self.overlay[table].get(key, _MISSING)
        if row is _MISSING:
            row = self.committed[table].get(key, _MISSING)
        if row is _MISSING:
            row = None if self.complete else self._load(table, key)
            self.committed[table][key] = row
        return row  # type: ignore[return-value]

    def _load(self, table: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
        self.selects += 1
        found = self.db.query(self._select[table], key)
        if not found:
            return None
        spec = self.tables[table]
        row = dict(zip(spec.column_names, found[0]))
        for col in spec.json_columns:
            row[col] = json.loads(row[col]) if row[col] is not None else None
        return row

    def apply(self, changes: Iterable[Change]) -> None:
        overlay, tables = self.overlay, self.tables
        for change in changes:
            if type(change) is Put:
                overlay[change.table][key_of(tables[change.table], change.row)] = change.row
            else:
                overlay[change.table][change.key] = None

    def flush(self) -> int:
        """Write the overlay (inside the caller's transaction). Returns rows written."""
        written = 0
        for name, changed in self.overlay.items():
            if not changed:
                continue
            spec = self.tables[name]
            cols, json_cols = spec.column_names, set(spec.json_columns)
            puts = [
                tuple(_dump(row[c]) if c in json_cols else row[c] for c in cols)
                for row in changed.values() if row is not None
            ]
            deletes = [key for key, row in changed.items() if row is None]
            self.db.executemany(self._upsert[name], puts)
            self.db.executemany(self._delete[name], deletes)
            written += len(puts) + len(deletes)
        return written

    def commit(self) -> None:
        """The page's transaction committed: the overlay becomes the cache."""
        size = 0
        for name, changed in self.overlay.items():
            self.committed[name].update(changed)
            changed.clear()
            size += len(self.committed[name])
        if size > CACHE_ROWS_MAX:
            self.forget()

    def rollback(self) -> None:
        for changed in self.overlay.values():
            changed.clear()

    def forget(self) -> None:
        """Drop everything cached (after a rollback or a concurrent writer)."""
        self.rollback()
        for cached in self.committed.values():
            cached.clear()
        self.complete = False


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


# -------------------------------------------------------------------- views
@dataclass(frozen=True)
class View:
    """A projection: its tables, the events it folds, and its pure fold.
    `reads` names views whose tables the fold reads (they fold each event first)."""

    name: str
    version: int  # bump when the fold's meaning changes: the runner then rebuilds
    tables: tuple[Table, ...]
    handles: frozenset[str]
    fold: Callable[[Rows, Any], list[Change]]
    reads: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        text = repr((self.name, self.version, self.tables))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

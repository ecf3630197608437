"""A tiny adapter over sqlite3 and psycopg connections for the view tables.

SQL is written once with `?` placeholders and `ON CONFLICT ... DO UPDATE`
(both SQLite >= 3.24 and PostgreSQL understand it); the adapter swaps the
placeholder style for psycopg. Connection settings come from the ledger
application's own datastore, so views live in the same SQLite file or the
same PostgreSQL database and schema as the events.
"""
from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from itertools import chain
from operator import itemgetter
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from domain.errors import require
from domain.text import storable
from ledger.backend import SQLITE, Backend
from ledger.library.arrays import EncodedArray, Int8Array, TextArray, encode_array

SQLITE_BUSY_TIMEOUT_S = 30
# Placeholders per SQLite statement: the least SQLITE_MAX_VARIABLE_NUMBER of any build
# (999 before SQLite 3.32, 32766 since), so a multi-row upsert runs everywhere.
SQLITE_VARIABLES_MAX = 999
# Rows per multi-row upsert: 50 measured less write CPU than 100 or 250 (and 20).
SQLITE_UPSERT_ROWS_MAX = 50
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
_FOLDED = re.compile(r"lower\(([a-z_][a-z0-9_]*)\)")  # an index element: the column case-folded


@dataclass(frozen=True, slots=True)
class Table:
    """A view table: typed columns, a primary key, optional extra indexes (an index
    element is a column or `lower(column)`, see `Db.prefix_match`).
    Column types are portable names: `int` (BIGINT), `text`, `json` (TEXT
    holding JSON; a Python list/dict in rows)."""

    name: str
    key: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    indexes: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        names = [c for c, _ in self.columns]
        require(all(_IDENT.match(n) for n in [self.name, *names]), f"bad identifier in {self.name}")
        require(set(self.key) <= set(names), f"{self.name}: key {self.key} not among columns")
        indexed = {_FOLDED.sub(r"\1", column) for index in self.indexes for column in index}
        require(indexed <= set(names), f"{self.name}: an index names no column of the table")

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    @property
    def json_columns(self) -> tuple[str, ...]:
        return tuple(c for c, t in self.columns if t == "json")

def columns_of(row: type) -> tuple[tuple[str, str], ...]:
    """A view table's columns from the dataclass its query answers with, field for field (the
    row's fields are declared once): `int` -> int, `str` or a Literal of texts -> text, a list
    or dict -> json; `X | None` as X."""
    hints = get_type_hints(row)
    return tuple((f.name, _column_type(hints[f.name])) for f in fields(row))


def _column_type(hint: Any) -> str:
    args = [a for a in get_args(hint) if a is not type(None)]
    if get_origin(hint) in (Union, UnionType) and len(args) == 1:
        return _column_type(args[0])
    if hint is int:
        return "int"
    if hint is str or (get_origin(hint) is Literal and all(isinstance(a, str) for a in args)):
        return "text"
    if get_origin(hint) in (list, dict):
        return "json"
    raise TypeError(f"no column type for {hint!r}")


_SQL_TYPES = {"int": "BIGINT", "text": "TEXT", "json": "TEXT"}
_PG_ARRAY_TYPES = {"int": "bigint[]", "text": "text[]", "json": "text[]"}  # binary arrays for unnest upserts
_PG_ARRAY_KINDS: dict[str, type[EncodedArray]] = {"int": Int8Array, "text": TextArray, "json": TextArray}


class Db:
    """One connection (sqlite3 or psycopg) used for view reads and writes."""

    def __init__(self, conn: Any, dialect: str, schema: str | None = None, path: str = "") -> None:
        require(dialect in ("sqlite", "postgres"), f"unknown dialect {dialect}")
        self.conn = conn
        self.dialect = dialect
        self.schema = schema
        self.path = path  # SQLite: the database file ("" or ":memory:": none another process can open)
        self._upserts: dict[tuple[str, int], str] = {}  # SQLite: (table name, rows) -> multi-row upsert
        self._unnests: dict[str, tuple[str, tuple[type[EncodedArray], ...]]] = {}  # PostgreSQL: the upsert, its arrays

    # ------------------------------------------------------------- opening
    @classmethod
    def for_store(cls, backend: Backend) -> Db:
        """Open a connection to the database the ledger stores events in (`EventLog.backend`)."""
        if backend.kind == SQLITE:
            return cls.sqlite(backend.sqlite_path)
        return cls.postgres(backend.pg_connect, schema=backend.schema)

    @classmethod
    def sqlite(cls, db_name: str) -> Db:
        conn = sqlite3.connect(db_name, uri=True, isolation_level=None, timeout=SQLITE_BUSY_TIMEOUT_S,
                               check_same_thread=False)
        # WAL mode (the library's): NORMAL skips the fsync per view commit; a
        # power cut can lose the last commits, whole (rows and position
        # together), which the next run folds again. The ledger's own
        # connection keeps its setting, so events stay as durable as before.
        conn.execute("PRAGMA synchronous=NORMAL")
        return cls(conn, "sqlite", path=db_name)

    @classmethod
    def postgres(cls, kwargs: dict[str, str], schema: str = "public") -> Db:
        import psycopg
        from psycopg.conninfo import make_conninfo

        conn = psycopg.connect(make_conninfo(**kwargs), autocommit=True)
        require(_IDENT.match(schema) is not None, f"bad schema name {schema!r}")
        conn.execute(f"SET search_path TO {schema}")
        return cls(conn, "postgres", schema)

    def close(self) -> None:
        self.conn.close()

    # ----------------------------------------------------------- statements
    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.dialect == "postgres" else text

    def execute(self, text: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the affected row count."""
        cur = self.conn.execute(self._sql(text), params)
        return int(cur.rowcount)

    def execute_cursor(self, text: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; returns the driver's cursor (in `pipeline`, its rowcount is known after `sync`)."""
        return self.conn.execute(self._sql(text), params)

    def executemany(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            cur = self.conn.cursor()
            cur.executemany(self._sql(text), rows)

    def upsert_many(self, table: Table, rows: Sequence[Sequence[Any]]) -> None:
        """Insert or update `rows` (values in column order, distinct keys),
        inside the caller's transaction. SQLite: as many rows per statement as
        its placeholders allow (`_sqlite_upsert`). PostgreSQL gets every row at
        once as one binary array per column (`INSERT ... SELECT FROM unnest(...)`):
        no round trip per row. (COPY into a staging table measured the same.)"""
        if not rows:
            return
        rows = storable_rows(table, rows)
        if self.dialect == "sqlite":
            self._sqlite_upsert(table, rows)
            return
        unnest = self._unnests.get(table.name)
        if unnest is None:
            kinds = tuple(_PG_ARRAY_KINDS[t] for _, t in table.columns)
            unnest = self._unnests[table.name] = (upsert_unnest_sql(table), kinds)
        # The arrays encoded by the live writer's encoder (ledger/library/arrays.py): psycopg's
        # own list dumper, in Python, took about a quarter of a PostgreSQL catch-up's CPU.
        text, kinds = unnest
        self.conn.execute(text, [encode_array(kind, column) for kind, column in zip(kinds, zip(*rows))])

    def _sqlite_upsert(self, table: Table, rows: Sequence[Sequence[Any]]) -> None:
        """Whole statements of `per` rows (one multi-row VALUES: one statement run for many
        rows, 10-16% less write CPU on a catch-up than a run per row in executemany), the
        remainder by executemany. Rows of one statement upsert in order, as one by one."""
        per = max(1, min(SQLITE_UPSERT_ROWS_MAX, SQLITE_VARIABLES_MAX // len(table.columns)))
        whole = len(rows) - len(rows) % per
        if whole:
            text = self._upsert_text(table, per)
            for start in range(0, whole, per):
                self.conn.execute(text, list(chain.from_iterable(rows[start:start + per])))
        if whole < len(rows):
            self.conn.executemany(self._upsert_text(table, 1), rows[whole:])

    def _upsert_text(self, table: Table, rows: int) -> str:
        text = self._upserts.get((table.name, rows))
        if text is None:
            text = self._upserts[table.name, rows] = upsert_sql(table, rows)
        return text

    def query(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(self._sql(text), params)
        return list(cur.fetchall())

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """One holder at a time in the block, per database (and schema) and `name`; a second
        waits. Both locks are bound to their holder's life, so a holder that dies (kill -9,
        a terminated backend) frees it at once, and it never outlives its holder:
        PostgreSQL: a session advisory lock (creating tables, or folding pages, from several
        processes at once races in the catalog and on the positions).
        SQLite: an OS lock (flock) on `<database>.<name>.lock` beside the database. BEGIN
        IMMEDIATE serialises single writes but not a runner's reads between them: two
        projectors folding side by side read each other's rows (docs/scaling.md)."""
        if self.dialect == "sqlite":
            with _file_lock(self.path, name):
                yield
            return
        key = f"casino-ledger:{self.schema}:{name}"
        self.conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        try:
            yield
        finally:
            if not self.conn.closed:  # a lost session took its lock along (and its error says why)
                self.conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    @contextmanager
    def pipeline(self) -> Iterator[Callable[[], None]]:
        """PostgreSQL: the block's statements are sent without waiting for each one's result
        (psycopg's pipeline mode); the `sync` it gives waits for the results so far. A page's
        write took a round trip per statement (about 20), and on the writer thread each
        reply then waited for the GIL while the next page was folded. SQLite: statements
        run at once, `sync` does nothing."""
        if self.dialect == "sqlite":
            yield _nothing
            return
        with self.conn.pipeline() as pipeline:
            yield pipeline.sync

    @contextmanager
    def transaction(self, durable: bool = False) -> Iterator[None]:
        """All or nothing. SQLite takes the write lock up front (BEGIN
        IMMEDIATE) so two runners never interleave a page. Views are derived data:
        a commit lost in a power cut or a server crash is lost whole (rows and
        position together) and simply folded again, so a commit need not wait for
        the disk (SQLite's synchronous=NORMAL in WAL mode, PostgreSQL's
        synchronous_commit off). `durable`: this one does wait (a record whose loss
        would do something twice or never, such as the wallet deliverer's)."""
        if self.dialect == "sqlite":
            if durable:  # WAL mode, FULL: the log is synced at this commit (set outside a transaction)
                self.conn.execute("PRAGMA synchronous=FULL")
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                self.conn.execute("COMMIT")
            finally:
                if durable:
                    self.conn.execute("PRAGMA synchronous=NORMAL")
        else:
            with self.conn.transaction():
                self.conn.execute(f"SET LOCAL synchronous_commit = {'on' if durable else 'off'}")
                yield

    # ------------------------------------------------------------------ DDL
    def create(self, table: Table) -> None:
        cols = ", ".join(f"{c} {_SQL_TYPES[t]}" for c, t in table.columns)
        self.execute(f"CREATE TABLE IF NOT EXISTS {table.name} ({cols}, PRIMARY KEY ({', '.join(table.key)}))")
        for index in table.indexes:
            name = "_".join(_FOLDED.sub(r"\1_folded", column) for column in index)
            self.execute(f"CREATE INDEX IF NOT EXISTS {table.name}_{name} ON {table.name} "
                         f"({', '.join(self._index_element(column) for column in index)})")

    def _index_element(self, column: str) -> str:
        """A column, or `lower(column)`: the column case-folded, in byte order on both stores
        (PostgreSQL's collation "C"), so `prefix_match` can read a prefix's range from it."""
        if _FOLDED.fullmatch(column) is None:
            return column
        return f'({column}) COLLATE "C"' if self.dialect == "postgres" else column

    def prefix_match(self, column: str, prefix: str) -> tuple[str, list[str]]:
        """A case-insensitive prefix match of `column` (a WHERE clause and its parameters) as a
        range of `lower(column)` in byte order: an index on `lower(column)` (`Table.indexes`)
        serves it as an index range scan, on SQLite as on PostgreSQL (where a LIKE would need
        its pattern known when the statement is planned). Both ends are folded by the store's
        own `lower`, as the index is; U+10FFFF sorts after every character an id may hold."""
        folded = f'lower({column}) COLLATE "C"' if self.dialect == "postgres" else f"lower({column})"
        return f"{folded} >= lower(?) AND {folded} < lower(?)", [prefix, prefix + "\U0010ffff"]

    def drop(self, table: Table) -> None:
        self.execute(f"DROP TABLE IF EXISTS {table.name}")

    def table_exists(self, name: str) -> bool:
        if self.dialect == "sqlite":
            rows = self.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,))
        else:
            rows = self.query("SELECT 1 FROM information_schema.tables WHERE table_schema=? AND table_name=?",
                              (self.schema, name))
        return bool(rows)


def _nothing() -> None:
    pass


def storable_rows(table: Table, rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
    """`rows` with each value of a `text` column as every store holds it (`storable`: a NUL,
    which PostgreSQL refuses, and a lone surrogate, which no UTF-8 store takes, escaped): text
    comes from the events, and events recorded before the feed refused such text must not stop
    a view. JSON columns need nothing (their text is ASCII, escapes included). The rows as given
    when nothing needs escaping, checked in one pass over each column's text (a check per value
    cost three times as much: docs/benchmarks.md)."""
    at = tuple(i for i, (_, kind) in enumerate(table.columns) if kind == "text")
    if not at or all(_storable_column(rows, i) for i in at):
        return rows
    return [tuple(storable(v) if i in at and type(v) is str else v for i, v in enumerate(row)) for row in rows]


def _storable_column(rows: Sequence[Sequence[Any]], i: int) -> bool:
    """Whether every text value of column `i` is stored as it is: the values joined in C (NULLs
    and empty strings left out) and searched once."""
    values = map(itemgetter(i), rows)
    try:
        joined = "".join(filter(None, values))
    except TypeError:  # a value that is not text: one by one
        return all(type(v) is not str or storable(v) == v for v in map(itemgetter(i), rows))
    if "\x00" in joined:
        return False
    return joined.isascii() or storable(joined) == joined


def upsert_sql(table: Table, rows: int = 1) -> str:
    """The upsert of `rows` rows (a VALUES tuple of placeholders each)."""
    cols = table.column_names
    values = [c for c in cols if c not in table.key]
    update = ", ".join(f"{c}=excluded.{c}" for c in values)
    conflict = f"DO UPDATE SET {update}" if update else "DO NOTHING"
    one = f"({', '.join(['?'] * len(cols))})"
    return (f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES {', '.join([one] * rows)} "
            f"ON CONFLICT ({', '.join(table.key)}) {conflict}")


def upsert_unnest_sql(table: Table) -> str:
    """PostgreSQL: the upsert of many rows passed as one array per column."""
    cols = table.column_names
    values = [c for c in cols if c not in table.key]
    update = ", ".join(f"{c}=excluded.{c}" for c in values)
    conflict = f"DO UPDATE SET {update}" if update else "DO NOTHING"
    arrays = ", ".join(f"%b::{_PG_ARRAY_TYPES[t]}" for _, t in table.columns)
    return (f"INSERT INTO {table.name} ({', '.join(cols)}) SELECT * FROM unnest({arrays}) "
            f"ON CONFLICT ({', '.join(table.key)}) {conflict}")


def select_sql(table: Table) -> str:
    return f"SELECT {', '.join(table.column_names)} FROM {table.name} WHERE " + " AND ".join(f"{k}=?" for k in table.key)


def dump(db: Db, table: Table) -> list[tuple[Any, ...]]:
    """Every row of `table` in key order (for comparisons: rebuild == incremental)."""
    cols = ", ".join(table.column_names)
    return db.query(f"SELECT {cols} FROM {table.name} ORDER BY {', '.join(table.key)}")


_MEMORY_LOCKS: dict[str, threading.Lock] = {}  # a database no other process can open: a lock per name
_MEMORY_LOCKS_GUARD = threading.Lock()


@contextmanager
def _file_lock(path: str, name: str) -> Iterator[None]:
    """Hold `flock` on `<path>.<name>.lock` (made if missing, never deleted: deleting a lock file
    races a process opening it). flock belongs to the open file, so two holders in one process
    exclude each other too; the kernel drops it when its holder dies."""
    if not path or path == ":memory:":  # a database of this connection alone
        yield
        return
    if "mode=memory" in path:  # shared by this process's connections only
        with _MEMORY_LOCKS_GUARD:
            lock = _MEMORY_LOCKS.setdefault(f"{path}:{name}", threading.Lock())
        with lock:
            yield
        return
    fd = os.open(f"{path.removeprefix('file:').split('?')[0]}.{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks (without the GIL) while another holds it
        yield
    finally:
        os.close(fd)  # releases the lock


"""`EventLog`: the one reader of the store for projections, audits and replays.

Made once per store (from the ledger application opened on its URL), it pages
over the application sequence in global order (`select_notifications`: SQLite
rowid / PostgreSQL notification_id, gap-free in commit order) and decodes each
stored event once, through the application's own mapper (ciphers, compression
and `upcast_vN_vM` apply exactly as in the ledger), into a typed record of
`ledger.records`. Nothing outside `ledger/` touches the recorder or the mapper.

`Backend` says which database a store is (from the environment its URL gave,
never guessed from the recorder's class) and how to connect to it: the views
of `projections/` live in the same SQLite file or PostgreSQL schema.
"""
from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from uuid import UUID

from eventsourcing.persistence import Notification
from psycopg.sql import SQL, Identifier

from domain.errors import require
from ledger.app import LedgerApp
from ledger.records import (
    TABLE_CONFIGURED_TOPIC,
    Decoder,
    Record,
    RecordType,
    TableConfigured,
    decoder_for,
    stored_fields,
    type_of_topic,
)
from ledger.store import StoreUnavailable, db_url_from, env_for, open_app, require_ledger
from ledger.table import table_id_for

PAGE_SIZE_DEFAULT = 1000
PAGE_SIZE_MAX = 100_000
ID_CACHE_MAX = 100_000  # aggregate ids remembered as text (rounds in flight are far fewer)
SQLITE = "sqlite"
POSTGRES = "postgres"
_PG_KEYS = {"dbname": "POSTGRES_DBNAME", "host": "POSTGRES_HOST", "port": "POSTGRES_PORT",
            "user": "POSTGRES_USER", "password": "POSTGRES_PASSWORD"}


@dataclass(frozen=True)
class Backend:
    """Which database a store is, and how to open another connection to it."""

    kind: str  # SQLITE | POSTGRES
    sqlite_path: str = ""
    pg_connect: dict[str, str] = field(default_factory=dict)  # psycopg.connect keyword arguments
    schema: str = "public"

    @classmethod
    def of_env(cls, env: Mapping[str, str]) -> Backend:
        """From the library environment a store URL maps to (`ledger.store.env_for`; an
        application's `env`, which the library built from it)."""
        module = env.get("PERSISTENCE_MODULE")
        if module == "eventsourcing.sqlite":
            return cls(SQLITE, sqlite_path=env.get("SQLITE_DBNAME") or "")
        require(module == "eventsourcing.postgres", f"unknown persistence module {module!r}")
        connect = {k: value for k, key in _PG_KEYS.items() if (value := env.get(key))}
        return cls(POSTGRES, pg_connect=connect, schema=env.get("POSTGRES_SCHEMA") or "public")

    @classmethod
    def of_url(cls, url: str) -> Backend:
        return cls.of_env(env_for(url))


class Page(NamedTuple):
    records: list[Record]  # the decoded ones (only the kinds asked for)
    read: int  # stored events read
    last: int  # position of the last one read (start - 1 when none)


class EventLog:
    """Typed records of one store in global order (see the module doc)."""

    def __init__(self, app: LedgerApp) -> None:
        self.app = app
        self.backend = Backend.of_env(app.env)
        self._recorder: Any = app.recorder  # its backend's class: tables and datastore differ
        self._to_event = app.mapper.to_domain_event
        self._decoders: dict[str, Decoder] = {}
        self._kinds: dict[str, RecordType] = {}
        self._ids: dict[Any, str] = {}  # _id_key(aggregate id) -> its text

    @classmethod
    def open(cls, url: str | None = None, *, ledger_required: bool = True) -> EventLog:
        """The log of the store at `url` (None: LEDGER_DB or the default store), which
        must exist and hold a ledger (`StoreUnavailable` otherwise; nothing is created).
        `ledger_required=False`: the store must exist, its ledger tables may not yet (a
        projector started beside the first ingest on a fresh database)."""
        try:
            require_ledger(url)
        except StoreUnavailable as exc:
            if ledger_required or exc.code != "no_ledger":
                raise
        return cls(open_app(db_url_from(url)))

    def close(self) -> None:
        self.app.close()

    # ------------------------------------------------------------ decoding
    def decode(self, n: Notification) -> Record:
        """One stored event -> its record."""
        decoder = self._decoders.get(n.topic) or self._decoder(n.topic)
        state = self._to_event(n).__dict__
        return decoder(n.id, self._id_text(state["originator_id"]), state)

    def _id_text(self, aggregate_id: Any) -> str:
        """`str(UUID)`, remembered: a round's events share its id, and str() of a UUID is slow
        Python. Keyed by the UUID's int (`_id_key`): UUID.__hash__ is a Python call too."""
        key = _id_key(aggregate_id)
        text = self._ids.get(key)
        if text is None:
            if len(self._ids) >= ID_CACHE_MAX:
                self._ids.clear()
            text = self._ids[key] = str(aggregate_id)
        return text

    def _decoder(self, topic: str) -> Decoder:
        decoder = self._decoders[topic] = decoder_for(topic)
        return decoder

    def decode_stored(self, n: Notification) -> tuple[Record, dict[str, Any]]:
        """One stored event -> its record and its fields exactly as stored (for the audit chain,
        which hashes what is stored, including any field outside the vocabulary)."""
        decoder = self._decoders.get(n.topic) or self._decoder(n.topic)
        state = self._to_event(n).__dict__
        return decoder(n.id, self._id_text(state["originator_id"]), state), stored_fields(state)

    def kind(self, topic: str) -> RecordType:
        found = self._kinds.get(topic)
        if found is None:
            found = self._kinds[topic] = type_of_topic(topic)
        return found

    # ------------------------------------------------------------ reading
    def notifications(self, start: int, limit: int) -> list[Notification]:
        """Stored rows (undecoded) with position >= `start`, at most `limit`."""
        require(start >= 1, f"positions start at 1, got {start}")
        require(1 <= limit <= PAGE_SIZE_MAX, f"page size {limit} outside 1..{PAGE_SIZE_MAX}")
        rows: list[Notification] = self._recorder.select_notifications(start, limit)
        return rows

    def page(self, start: int, limit: int, kinds: frozenset[RecordType] | None = None) -> Page:
        """Up to `limit` stored events from `start`; only those of `kinds` (None: all) are decoded."""
        rows = self.notifications(start, limit)
        if not rows:
            return Page([], 0, start - 1)
        if kinds is not None:
            known, kind = self._kinds.get, self.kind
            wanted = [n for n in rows if (known(n.topic) or kind(n.topic)) in kinds]
            return Page(self.decode_all(wanted), len(rows), rows[-1].id)
        return Page(self.decode_all(rows), len(rows), rows[-1].id)

    def records(self, start: int = 1, limit: int | None = None, *,
                page_size: int = PAGE_SIZE_DEFAULT) -> Iterator[Record]:
        """Records from position `start` in global order, at most `limit` (None: up to the head)."""
        for rows in self._pages(start, limit, page_size):
            yield from self.decode_all(rows)

    def stored(self, start: int = 1, limit: int | None = None, *,
               page_size: int = PAGE_SIZE_DEFAULT) -> Iterator[tuple[Record, dict[str, Any]]]:
        """As `records`, each beside its fields exactly as stored (`decode_stored`)."""
        for rows in self._pages(start, limit, page_size):
            yield from map(self.decode_stored, rows)

    def _pages(self, start: int, limit: int | None, page_size: int) -> Iterator[list[Notification]]:
        """Stored rows from `start`, a page at a time, at most `limit` in all (None: up to the head)."""
        remaining, position = limit, start
        while remaining is None or remaining > 0:
            want = page_size if remaining is None else min(page_size, remaining)
            rows = self.notifications(position, want)
            if rows:
                yield rows
            if len(rows) < want:
                return
            position = rows[-1].id + 1
            if remaining is not None:
                remaining -= len(rows)

    def rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Refused commands (the rejections log, not events), in the order they were refused."""
        rows: list[dict[str, Any]] = self.app.rejections(after_id, limit)
        return rows

    def head(self) -> int:
        """The last recorded position (0 when the store is empty)."""
        last: int | None = self._recorder.max_notification_id()
        return last or 0

    def raw_read(self, page_size: int = PAGE_SIZE_DEFAULT) -> int:
        """Every stored event read and decoded by the library, no record built:
        the physical limit the benchmarks compare readers with. Returns the count."""
        count, position, to_event = 0, 1, self._to_event
        while rows := self._recorder.select_notifications(position, page_size):
            for n in rows:
                to_event(n)
            count += len(rows)
            position = rows[-1].id + 1
        return count

    def table_history(self, table_id: str) -> list[TableConfigured]:
        """Every configuration version of one table, oldest first (empty: never configured)."""
        rows = self._rows_where("originator_id", table_id_for(table_id))
        return [r for r in map(self.decode, rows) if isinstance(r, TableConfigured)]

    def tables(self, table_ids: Iterable[str] | None = None) -> dict[str, list[TableConfigured]]:
        """Every configured table's configuration versions, by table id (sorted), oldest first.
        Given the tables' ids (the `tables` view keeps them: projections/tables.py), each is read
        by its aggregate id, which the store indexes; without them the whole events table is
        read by topic (not indexed: its cost grows with the store, every event of it)."""
        if table_ids is not None:
            histories = {t: self.table_history(t) for t in sorted(set(table_ids))}
            return {t: history for t, history in histories.items() if history}
        found: dict[str, list[TableConfigured]] = {}
        for record in map(self.decode, self._rows_where("topic", TABLE_CONFIGURED_TOPIC)):
            if isinstance(record, TableConfigured):
                found.setdefault(record.table_id, []).append(record)
        return {t: sorted(found[t], key=lambda r: r.version) for t in sorted(found)}

    def _rows_where(self, column: str, value: UUID | str) -> list[Notification]:
        """Stored rows whose `column` (originator_id or topic) equals `value`, in global order."""
        require(column in ("originator_id", "topic"), f"not a lookup column: {column}")
        recorder = self._recorder
        if self.backend.kind == SQLITE:
            key = value.hex if isinstance(value, UUID) else value
            statement = f"SELECT rowid, * FROM {recorder.events_table_name} WHERE {column}=? ORDER BY rowid"
            with recorder.datastore.transaction(commit=False) as c:
                c.execute(statement, [key])
                return [Notification(id=r["rowid"], originator_id=recorder.convert_originator_id(r["originator_id"]),
                                     originator_version=r["originator_version"], topic=r["topic"], state=r["state"])
                        for r in c.fetchall()]
        pg = SQL("SELECT * FROM {schema}.{table} WHERE {column} = %s ORDER BY notification_id").format(
            schema=Identifier(recorder.datastore.schema), table=Identifier(recorder.events_table_name),
            column=Identifier(column))
        with recorder.datastore.transaction(commit=False) as curs:
            curs.execute(pg, (value,))
            return [Notification(id=r["notification_id"], originator_id=r["originator_id"],
                                 originator_version=r["originator_version"], topic=r["topic"],
                                 state=bytes(r["state"]))
                    for r in curs.fetchall()]

    def round_records(self, round_id: UUID) -> list[Record]:
        """Every event of one round, in round order, with global positions (one indexed query)."""
        rows = self._sqlite_round(round_id) if self.backend.kind == SQLITE else self._postgres_round(round_id)
        return [self.decode(n) for n in rows]

    def _sqlite_round(self, round_id: UUID) -> list[Notification]:
        recorder = self._recorder
        statement = (f"SELECT rowid, * FROM {recorder.events_table_name} "
                     "WHERE originator_id=? ORDER BY originator_version")
        with recorder.datastore.transaction(commit=False) as c:
            c.execute(statement, [round_id.hex])
            return [Notification(id=r["rowid"], originator_id=recorder.convert_originator_id(r["originator_id"]),
                                 originator_version=r["originator_version"], topic=r["topic"], state=r["state"])
                    for r in c.fetchall()]

    def _postgres_round(self, round_id: UUID) -> list[Notification]:
        recorder = self._recorder
        statement = SQL("SELECT * FROM {schema}.{table} WHERE originator_id = %s ORDER BY originator_version").format(
            schema=Identifier(recorder.datastore.schema), table=Identifier(recorder.events_table_name))
        with recorder.datastore.transaction(commit=False) as curs:
            curs.execute(statement, (round_id,))
            return [Notification(id=r["notification_id"], originator_id=r["originator_id"],
                                 originator_version=r["originator_version"], topic=r["topic"],
                                 state=bytes(r["state"]))
                    for r in curs.fetchall()]

    def decode_all(self, rows: Sequence[Notification]) -> list[Record]:
        """`decode` of every row, in order (the loop every reader runs: kept tight)."""
        decoders, to_event, ids = self._decoders, self._to_event, self._ids
        out = []
        with no_cyclic_gc():  # a page of records: ~2 us/event less on a typed read
            for n in rows:
                decoder = decoders.get(n.topic) or self._decoder(n.topic)
                state = to_event(n).__dict__
                aggregate_id = state["originator_id"]
                text = ids.get(aggregate_id.int if type(aggregate_id) is UUID else aggregate_id)
                out.append(decoder(n.id, text or self._id_text(aggregate_id), state))
        return out


def _id_key(aggregate_id: Any) -> Any:
    return aggregate_id.int if type(aggregate_id) is UUID else aggregate_id


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Records, their lines and the folds' rows are tuples, dicts and lists without
    cycles: reference counting frees them. Without this, the cyclic collector rescans
    the growing set of new objects many times over while a large page is built."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

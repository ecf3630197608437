"""`EventLog`: the one reader of the store for projections, audits and replays.

Made once per store (from the ledger application opened on its URL), it pages
over the application sequence in global order (`select_notifications`: SQLite
rowid / PostgreSQL notification_id, gap-free in commit order) and decodes each
stored event once into a typed record of `ledger.records`, exactly as the
application's own mapper decodes it (ciphers, compression and `upcast_vN_vM`
apply as in the ledger). Nothing outside `ledger/` touches the recorder or the mapper.

Decoding is its base's, `StoredEventDecoder` (ledger/eventdecode.py): it skips the
library's event objects where they would change nothing. The pages of a catch-up
are selected as plain tuples (`rows`) rather than the recorder's `Notification`s;
`raw_read`, the benchmarks' baseline, stays the library's own.

`Backend` (ledger/backend.py) says which database a store is and how to connect to it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar, cast
from uuid import UUID

from eventsourcing.persistence import Mapper, Notification
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier

from domain.errorcodes import ErrorCode
from domain.errors import require
from ledger.app import LedgerApp
from ledger.backend import SQLITE, Backend
from ledger.eventdecode import Row, StoredEventDecoder
from ledger.partitions import sibling_env
from ledger.records import (
    ROUND_TOPIC_PREFIX,
    TABLE_CONFIGURED_TOPIC,
    Decoder,
    Record,
    RecordType,
    TableConfigured,
)
from ledger.store import StoreUnavailable, db_url_from, open_app, require_ledger
from ledger.table import table_id_for

_R = TypeVar("_R")  # a stored row as one reader selects it (Notification or tuple)

PAGE_SIZE_DEFAULT = 1000
PAGE_SIZE_MAX = 100_000


# A round as `round_spans` plans it: (first position, originator id as `rows` gives it,
# events, last position, events in the range asked).
RoundSpan = tuple[int, Any, int, int, int]
ROUND_VERSION_FIRST = 1  # a round aggregate's first event (eventsourcing's initial version)
POSITION_MAX = 2**62  # above any position (a range without its end)


class Page(NamedTuple):
    records: list[Record]  # the decoded ones (only the kinds asked for)
    read: int  # stored events read
    last: int  # position of the last one read (start - 1 when none)


class EventLog(StoredEventDecoder):
    """Typed records of one store in global order (see the module doc)."""

    def __init__(self, app: LedgerApp) -> None:
        self.app = app
        self.backend = Backend.of_env(app.env)
        self._recorder: Any = app.recorder  # its backend's class: tables and datastore differ
        mapper = app.mapper
        self._to_event = mapper.to_domain_event
        # The ledger's transcoder decodes a state cheaper than `decode`, to the same value.
        self._transcode = getattr(mapper.transcoder, "decode_state", mapper.transcoder.decode)
        # The mapper's own work is only needed for what it adds: ciphers, compression, upcasts
        # (and whatever a mapper of another class does).
        self._bare = (type(mapper).to_domain_event is Mapper.to_domain_event
                      and not mapper.cipher and not mapper.compressor)
        self._direct: dict[str, bool] = {}  # topic -> its states decode without the mapper
        self._decoders: dict[str, Decoder] = {}
        self._kinds: dict[str, RecordType] = {}
        self._ids: dict[Any, str] = {}  # _id_key(aggregate id) -> its text
        # Stored ids are UUIDs (SQLite keeps their hex): their text is str(UUID(stored)).
        datastore = getattr(app.recorder, "datastore", None)
        self._uuid_ids = getattr(datastore, "originator_id_type", "uuid") == "uuid"
        self._select_rows = self._sqlite_rows if self.backend.kind == SQLITE else self._postgres_rows
        # The events table's name, for tools that write the same rows raw (benchmarks).
        self.events_table: str = cast(Any, app.recorder).events_table_name

    @classmethod
    def open(cls, url: str | None = None, *, ledger_required: bool = True) -> EventLog:
        """The log of the store at `url` (None: LEDGER_DB or the default store), which
        must exist and hold a ledger (`StoreUnavailable` otherwise; nothing is created).
        `ledger_required=False`: the store must exist, its ledger tables may not yet (a
        projector started beside the first ingest on a fresh database)."""
        try:
            require_ledger(url)
        except StoreUnavailable as exc:
            if ledger_required or exc.code != ErrorCode.NO_LEDGER:
                raise
        return cls(open_app(db_url_from(url)))

    def close(self) -> None:
        self.app.close()

    def reopened(self) -> EventLog:
        """A log of the same store on connections of its own, for a forked process: the
        parent's connections are the parent's (on PostgreSQL the same sockets, where two
        processes garble each other's answers; SQLite's must not cross a fork either)."""
        return EventLog(type(self.app)(env=sibling_env(self.app.env)))

    # ------------------------------------------------------------ reading
    def notifications(self, start: int, limit: int) -> list[Notification]:
        """Stored rows (undecoded) with position >= `start`, at most `limit`."""
        require(start >= 1, f"positions start at 1, got {start}")
        require(1 <= limit <= PAGE_SIZE_MAX, f"page size {limit} outside 1..{PAGE_SIZE_MAX}")
        rows: list[Notification] = self._recorder.select_notifications(start, limit)
        return rows

    def rows(self, start: int, limit: int) -> list[Row]:
        """Stored rows (undecoded) with position >= `start`, at most `limit`, as plain tuples
        (`Row`): `notifications` without the recorder's objects, for `decode_rows`."""
        require(start >= 1, f"positions start at 1, got {start}")
        require(1 <= limit <= PAGE_SIZE_MAX, f"page size {limit} outside 1..{PAGE_SIZE_MAX}")
        return self._select_rows(start, limit)

    def _sqlite_rows(self, start: int, limit: int) -> list[Row]:
        recorder = self._recorder
        columns = "rowid, originator_id, originator_version, topic, state"
        statement = f"SELECT {columns} FROM {recorder.events_table_name} WHERE rowid>=? ORDER BY rowid LIMIT ?"
        with recorder.datastore.transaction(commit=False) as c:
            cursor = c.sqlite_cursor  # the library's wrapper's sqlite3 cursor
            cursor.row_factory = None  # tuples (the connection makes sqlite3.Row, which cannot be pickled)
            cursor.execute(statement, (start, limit))
            rows: list[Row] = cursor.fetchall()
            return rows

    def _postgres_rows(self, start: int, limit: int) -> list[Row]:
        recorder = self._recorder
        columns = "notification_id, originator_id::text, originator_version, topic, state"
        statement = SQL("SELECT " + columns + " "
                        "FROM {schema}.{table} WHERE notification_id>=%s ORDER BY notification_id LIMIT %s").format(
            schema=Identifier(recorder.datastore.schema), table=Identifier(recorder.events_table_name))
        with recorder.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as curs:
            # Binary results: the states come as their bytes, not as hex text that the server
            # writes and psycopg parses back (a page's select 40% less wall time, half the CPU).
            curs.execute(statement, (start, limit), prepare=True, binary=True)
            rows: list[Row] = curs.fetchall()
        if rows and type(rows[0][4]) is not bytes:  # a bytea loader may give memoryviews
            rows = [(p, i, v, t, bytes(state)) for p, i, v, t, state in rows]
        return rows

    def round_spans(self, after: int, limit: int, start: int, stop: int | None,
                    through: int | None = None) -> list[RoundSpan]:
        """The rounds whose first event lies after position `after`, in first-position order, at
        most `limit`: per round (first position, originator id as `rows` gives it, its events,
        its last position, its events in positions [start, stop] (stop None: the head)). The
        database counts each round on its (originator id, version) key, so a caller can plan a
        replay page by page, holding no entry per round stored. `through`: only the events at
        positions up to it exist for the count (None: all), so pages read while a writer appends
        all plan the same snapshot: ids commit in order (the writer's table lock on PostgreSQL,
        one writer on SQLite), so every position up to a head once read is committed and final."""
        require(after >= 0, f"positions start at 1, got after={after}")
        require(1 <= limit <= PAGE_SIZE_MAX, f"page size {limit} outside 1..{PAGE_SIZE_MAX}")
        last = POSITION_MAX if through is None else through
        high = min(last, POSITION_MAX if stop is None else stop)
        recorder = self._recorder
        if self.backend.kind == SQLITE:
            table = recorder.events_table_name
            same = f"FROM {table} e WHERE e.originator_id=f.originator_id AND e.rowid<=?"
            statement = (f"SELECT f.rowid, f.originator_id, (SELECT count(*) {same}), (SELECT max(e.rowid) {same}), "
                         f"(SELECT count(*) {same} AND e.rowid BETWEEN ? AND ?) FROM {table} f "
                         "WHERE f.rowid>? AND f.rowid<=? AND f.originator_version=? AND substr(f.topic, 1, ?)=? "
                         "ORDER BY f.rowid LIMIT ?")
            with recorder.datastore.transaction(commit=False) as c:
                cursor = c.sqlite_cursor
                cursor.row_factory = None
                cursor.execute(statement, (last, last, last, start, high, after, last, ROUND_VERSION_FIRST,
                                           len(ROUND_TOPIC_PREFIX), ROUND_TOPIC_PREFIX, limit))
                spans: list[RoundSpan] = cursor.fetchall()
                return spans
        # The bound as FILTERs, not in the WHERE: there it let the planner read each round's
        # events by the notification id index, every event up to the mark per round (audit
        # replay on PostgreSQL fell from 63% to 24% of raw); by the originator id, a round's own.
        pg = SQL("SELECT f.notification_id, f.originator_id::text, s.n, s.last, s.touching "
                 "FROM {schema}.{table} f CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE e.notification_id <= %s), "
                 "max(e.notification_id) FILTER (WHERE e.notification_id <= %s), "
                 "count(*) FILTER (WHERE e.notification_id BETWEEN %s AND %s) "
                 "FROM {schema}.{table} e WHERE e.originator_id = f.originator_id) "
                 "s(n, last, touching) "
                 "WHERE f.notification_id > %s AND f.notification_id <= %s AND f.originator_version = %s "
                 "AND left(f.topic, %s) = %s ORDER BY f.notification_id LIMIT %s").format(
            schema=Identifier(recorder.datastore.schema), table=Identifier(recorder.events_table_name))
        with recorder.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as curs:
            curs.execute(pg, (last, last, start, high, after, last, ROUND_VERSION_FIRST, len(ROUND_TOPIC_PREFIX),
                              ROUND_TOPIC_PREFIX, limit), prepare=True)
            spans = curs.fetchall()
        return spans

    def page(self, start: int, limit: int, kinds: frozenset[RecordType] | None = None) -> Page:
        """Up to `limit` stored events from `start`; only those of `kinds` (None: all) are decoded."""
        rows = self.rows(start, limit)
        if not rows:
            return Page([], 0, start - 1)
        if kinds is not None:
            known, kind = self._kinds.get, self.kind
            wanted = [r for r in rows if (known(r[3]) or kind(r[3])) in kinds]
            return Page(self.decode_rows(wanted), len(rows), rows[-1][0])
        return Page(self.decode_rows(rows), len(rows), rows[-1][0])

    def records(self, start: int = 1, limit: int | None = None, *,
                page_size: int = PAGE_SIZE_DEFAULT) -> Iterator[Record]:
        """Records from position `start` in global order, at most `limit` (None: up to the head)."""
        for rows in self._row_pages(start, limit, page_size):
            yield from self.decode_rows(rows)

    def stored(self, start: int = 1, limit: int | None = None, *,
               page_size: int = PAGE_SIZE_DEFAULT) -> Iterator[tuple[Record, dict[str, Any]]]:
        """As `records`, each beside its fields exactly as stored (`decode_stored`)."""
        for rows in self._pages(start, limit, page_size):
            yield from map(self.decode_stored, rows)

    def _pages(self, start: int, limit: int | None, page_size: int) -> Iterator[list[Notification]]:
        """Stored rows from `start`, a page at a time, at most `limit` in all (None: up to the head)."""
        return _paged(self.notifications, lambda n: n.id, start, limit, page_size)

    def _row_pages(self, start: int, limit: int | None, page_size: int) -> Iterator[list[Row]]:
        """As `_pages`, the rows as tuples (`rows`)."""
        return _paged(self.rows, lambda r: r[0], start, limit, page_size)

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
        return {t: sorted(found[t], key=lambda r: r.originator_version) for t in sorted(found)}

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


def _paged(fetch: Callable[[int, int], list[_R]], position_of: Callable[[_R], int], start: int,
           limit: int | None, page_size: int) -> Iterator[list[_R]]:
    """`fetch(position, count)` a page at a time from `start`, at most `limit` rows in all
    (None: up to the head); a short page is the last."""
    remaining, position = limit, start
    while remaining is None or remaining > 0:
        want = page_size if remaining is None else min(page_size, remaining)
        rows = fetch(position, want)
        if rows:
            yield rows
        if len(rows) < want:
            return
        position = position_of(rows[-1]) + 1
        if remaining is not None:
            remaining -= len(rows)

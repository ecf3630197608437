"""The PostgreSQL application recorder that also keeps the command index and the rejections
log (ledger/library/recorders.py). A small batch (the live service's) is ONE statement, a call
of the store's write function (`ledger_write_batch`: the rows as arrays through `unnest`, the
library's table lock and NOTIFY, the events `RETURNING` their ids; its own transaction on the
pool's autocommit connection), a large one (ingest's) by binary `COPY` per table, the events
under the same lock. Overrides `eventsourcing.postgres.PostgresApplicationRecorder.insert_events`
(one statement per live batch: 310 → 160 µs writer CPU per one-command batch,
`python -m ops.bench.live_batch`; docs/architecture-library.md).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import InterfaceError, OperationalError, ProgrammingError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg import Cursor
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, TupleRow, tuple_row
from psycopg.sql import SQL, Composable, Composed, Identifier, Literal

from ledger import leases
from ledger.library.arrays import ByteaArray, EncodedArray, Int8Array, TextArray, UuidArray, encode_array
from ledger.library.recorders import (
    COMMAND_COLUMNS,
    COMMANDS_TABLE,
    IN_LIST_MAX,
    KNOWN_COLUMNS,
    REJECTION_COLUMNS,
    REJECTION_TYPES,
    REJECTIONS_TABLE,
    Fence,
    KnownCommand,
    LedgerRows,
    VersionRead,
    _chunks,
    _known,
    stale,
)

# Rows (events + index rows + rejections) up to which a PostgreSQL batch is written by one
# call of the write function; above, by COPY. One statement saves the round trips of the
# COPY path (each wakes the server and the writer, dearer the busier the machine), while
# unnest costs a little more CPU per row than COPY, so large batches go by COPY.
ONE_STATEMENT_ROWS_MAX = 400
WRITE_FUNCTION = "ledger_write_batch"  # a small batch's whole transaction, one statement (PostgreSQL)
IDLE = TransactionStatus.IDLE


def _copy(curs: Cursor[DictRow], statement: Composed, types: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    with curs.copy(statement) as copy:
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)


_RENDERED: dict[int, tuple[Any, bytes]] = {}


def _bytes(statement: object) -> bytes:
    """A statement as the bytes psycopg would send, rendered once (psycopg renders a
    Composed on every execute: a tenth of a small batch's client CPU)."""
    if isinstance(statement, bytes):
        return statement
    found = _RENDERED.get(id(statement))
    if found is None or found[0] is not statement:
        text = statement.as_bytes(None) if isinstance(statement, Composable) else str(statement).encode()
        found = _RENDERED[id(statement)] = (statement, text)
    return found[1]


REJECTION_ARRAYS = [Int8Array if t == "int8" else TextArray for t in REJECTION_TYPES]
_COMMAND_ARRAYS = [TextArray] * len(COMMAND_COLUMNS)


def _columns(rows: Sequence[Sequence[Any]], kinds: Sequence[type[EncodedArray]]) -> list[EncodedArray]:
    """Rows as one binary array per column (unnest's arguments)."""
    return [encode_array(kind, [row[i] for row in rows]) for i, kind in enumerate(kinds)]


def _first_value(row: DictRow | None) -> int:
    if row is None:
        raise ProgrammingError("the statement returned no row")
    return int(next(iter(row.values())))


class LedgerPostgresRecorder(PostgresApplicationRecorder):
    """Writes a batch with `COPY ... FROM STDIN (FORMAT BINARY)`: the events, the command
    index rows and the rejection rows, in one transaction. The library sends the events
    as one array of composite values in text form, and building that text in Python cost
    more than the database's work: 23k events in 40 batches took 0.69 s its way, 0.14 s
    by COPY (median of 5; ingest_bench's raw figures show the same gap)."""

    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        schema = Identifier(self.datastore.schema)
        self.commands_table = SQL("{0}.{1}").format(schema, Identifier(COMMANDS_TABLE))
        self.rejections_table = SQL("{0}.{1}").format(schema, Identifier(REJECTIONS_TABLE))
        self.sql_create_statements.append(
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} (command_id text PRIMARY KEY, round_id text, type text NOT NULL, "
                "payload_hash text NOT NULL, status text NOT NULL, code text)"
            ).format(self.commands_table)
        )
        self.sql_create_statements.append(
            SQL(
                "CREATE TABLE IF NOT EXISTS {0} (id bigserial PRIMARY KEY, command_id text, table_id text, "
                "round_no bigint, type text, code text NOT NULL, message text NOT NULL, payload text NOT NULL, "
                "received_at text NOT NULL)"
            ).format(self.rejections_table)
        )
        # The partition leases (ledger/leases.py) live beside the events: a fenced batch checks
        # its lease in its own transaction.
        self.leases_table = _bytes(SQL("{0}.{1}").format(schema, Identifier(leases.TABLE))).decode()
        self.sql_create_statements.append(
            SQL("CREATE TABLE IF NOT EXISTS {0}.{1} " + leases.COLUMNS).format(schema, Identifier(leases.TABLE)))
        events_table = SQL("{0}.{1}").format(schema, Identifier(self.events_table_name))
        self.copy_events_statement = SQL(
            "COPY {0} (originator_id, originator_version, topic, state) FROM STDIN (FORMAT BINARY)"
        ).format(events_table)
        self.event_types = [self.datastore.originator_id_type, "int8", "text", "bytea"]
        self.originator_ids: type[EncodedArray] = UuidArray if self.datastore.originator_id_type == "uuid" else TextArray
        self.last_notification_id_statement = SQL("SELECT currval(pg_get_serial_sequence({0}, 'notification_id'))").format(
            Literal(f'"{self.datastore.schema}"."{self.events_table_name}"')
        )
        self.notify_statement = SQL("NOTIFY {0}").format(Identifier(self.channel_name))
        self.copy_commands_statement = SQL("COPY {0} ({1}) FROM STDIN (FORMAT BINARY)").format(
            self.commands_table, SQL(", ").join(map(Identifier, COMMAND_COLUMNS))
        )
        self.copy_rejections_statement = SQL("COPY {0} ({1}) FROM STDIN (FORMAT BINARY)").format(
            self.rejections_table, SQL(", ").join(map(Identifier, REJECTION_COLUMNS[1:]))
        )
        self.select_commands_statement = SQL("SELECT " + KNOWN_COLUMNS + " FROM {0} WHERE command_id = ANY(%b)").format(
            self.commands_table)
        self.write_function = SQL("{0}.{1}").format(schema, Identifier(WRITE_FUNCTION))
        self.sql_create_statements.append(self.write_function_statement(events_table))
        self.call_write_statement = SQL("SELECT n AS notification_id FROM {0}({1}) AS n").format(
            self.write_function, SQL(", ").join(SQL("%b") for _ in range(len(COMMAND_COLUMNS) + len(REJECTION_TYPES) + 7)))
        self.lookup_statement = SQL(
            "SELECT " + KNOWN_COLUMNS + " FROM {0} WHERE command_id = ANY(%b) UNION ALL "
            "SELECT originator_id::text, NULL, NULL, NULL, NULL FROM {1} "
            "WHERE originator_version = 1 AND originator_id = ANY(%b)").format(self.commands_table, events_table)
        self.versions_statement = SQL(
            "SELECT originator_id, max(originator_version) AS v FROM {0} WHERE originator_id = ANY(%b) "
            "GROUP BY originator_id").format(events_table)
        self.existing_ids_statement = SQL(
            "SELECT originator_id FROM {0} WHERE originator_version = 1 AND originator_id = ANY(%s)").format(events_table)

    def write_function_statement(self, events_table: Composable) -> Composed:
        """CREATE the write function of a small batch (`_insert_one_statement`): its arguments are
        the command rows, the rejection rows and the events as one array per column, and
        the statements to run before the events (the library's lock statements and NOTIFY:
        given by the caller, as the COPY path runs them)."""
        def args(prefix: str, names: Sequence[str], types: Sequence[str]) -> list[Composable]:
            return [SQL("{0} {1}[]").format(Identifier(prefix + n), SQL(t)) for n, t in zip(names, types)]

        def unnest(prefix: str, names: Sequence[str]) -> Composed:
            return SQL("SELECT * FROM unnest({0})").format(SQL(", ").join(Identifier(prefix + n) for n in names))

        rejection_names = REJECTION_COLUMNS[1:]
        event_names = ("originator_id", "originator_version", "topic", "state")
        return SQL(
            "CREATE OR REPLACE FUNCTION {function}({args}) RETURNS SETOF bigint LANGUAGE plpgsql AS $BODY$\n"
            "DECLARE s text;\n"
            "BEGIN\n"
            "  INSERT INTO {commands} ({command_columns}) {commands_rows};\n"
            "  IF cardinality(r_command_id) > 0 THEN\n"
            "    INSERT INTO {rejections} ({rejection_columns}) {rejection_rows};\n"
            "  END IF;\n"
            "  IF cardinality(e_originator_version) > 0 THEN\n"
            "    FOREACH s IN ARRAY before_events LOOP EXECUTE s; END LOOP;\n"
            "  END IF;\n"
            # After the lock (no writer of events can move an aggregate on until this commits):
            # each aggregate the batch decided on must still stand at the version it was read
            # at. Checked before the events draw their ids, so a stale batch leaves no gap.
            "  IF cardinality(v_originator_id) > 0 AND EXISTS (\n"
            "      SELECT 1 FROM unnest(v_originator_id, v_version) AS x(id, v)\n"
            "      WHERE x.v <> COALESCE((SELECT max(t.originator_version) FROM {events} t\n"
            "                             WHERE t.originator_id = x.id), 0)) THEN\n"
            "    RAISE EXCEPTION 'stale read: another writer moved an aggregate on' USING ERRCODE = 'unique_violation';\n"
            "  END IF;\n"
            "  IF cardinality(e_originator_version) > 0 THEN\n"
            # unnest returns the rows in array order and the sequence numbers them in that order
            # (under the lock no other insert draws from it): the ids come back in event order.
            "    RETURN QUERY INSERT INTO {events} ({event_columns}) {event_rows} RETURNING notification_id;\n"
            "  END IF;\n"
            "END;\n"
            "$BODY$"
        ).format(
            function=self.write_function,
            args=SQL(", ").join([*args("c_", COMMAND_COLUMNS, ["text"] * len(COMMAND_COLUMNS)),
                                 *args("r_", rejection_names, REJECTION_TYPES),
                                 *args("e_", event_names, [self.datastore.originator_id_type, "int8", "text", "bytea"]),
                                 SQL("before_events text[]"),
                                 *args("v_", ("originator_id", "version"), [self.datastore.originator_id_type, "int8"])]),
            commands=self.commands_table, command_columns=SQL(", ").join(map(Identifier, COMMAND_COLUMNS)),
            commands_rows=unnest("c_", COMMAND_COLUMNS),
            rejections=self.rejections_table, rejection_columns=SQL(", ").join(map(Identifier, rejection_names)),
            rejection_rows=unnest("r_", rejection_names),
            events=events_table, event_columns=SQL(", ").join(map(Identifier, event_names)),
            event_rows=unnest("e_", event_names),
        )

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        """As the library's: first the rows that need no lock, then the events under the
        table lock, commit. Returns the events' notification ids."""
        rows: LedgerRows | None = kwargs.get("ledger_rows")
        count = len(stored_events) + (len(rows.commands) + len(rows.rejections) if rows is not None else 0)
        fence = rows.fence if rows is not None else None
        if count <= self.one_statement_rows_max:
            return self._insert_one_statement(stored_events, rows, fence)
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
            self._fence(curs, fence)
            self._copy_rows(curs, rows)
            if stored_events:  # lock (held to the commit), then the check, then the events
                curs.execute(SQL("; ").join([*self.lock_table_statements, self.notify_statement]))
            if rows is not None and rows.reads:
                self._check_reads(curs, rows.reads)
            return self._write_events(curs, stored_events) if stored_events else None

    one_statement_rows_max = ONE_STATEMENT_ROWS_MAX

    def _fence(self, curs: Cursor[Any], fence: Fence | None) -> None:
        """A lease-holding writer's batch: first in its transaction, the lease's row locked
        (FOR KEY SHARE, to the commit) and its token checked; `LeaseLost` rolls everything back."""
        if fence is not None:
            leases.fence(curs, fence.name, fence.token, self.leases_table)

    def _insert_one_statement(self, stored_events: Sequence[StoredEvent], rows: LedgerRows | None,
                              fence: Fence | None = None) -> list[int] | None:
        """The whole transaction as ONE statement, its own transaction on the pool's autocommit
        connection: the write function (`write_function_statement`) inserts the rows that need
        no lock, runs the library's lock statements and NOTIFY, then inserts the events
        `RETURNING` their ids. One statement costs the writer about half the CPU of the eight
        pipelined ones it replaces (BEGIN .. COMMIT; ops/bench/live_batch.py). A failing insert (a
        command id or an aggregate version already stored) fails the statement: nothing of
        the batch is kept."""
        commands = rows.commands if rows is not None else ()
        rejections = rows.rejections if rows is not None else ()
        reads = rows.reads if rows is not None else ()
        params = [*_columns(commands, _COMMAND_ARRAYS), *_columns(rejections, REJECTION_ARRAYS),
                  encode_array(self.originator_ids, [e.originator_id for e in stored_events]),
                  encode_array(Int8Array, [e.originator_version for e in stored_events]),
                  encode_array(TextArray, [e.topic for e in stored_events]),
                  encode_array(ByteaArray, [e.state for e in stored_events]),
                  self._before_events(),
                  encode_array(self.originator_ids, [r.originator_id for r in reads]),
                  encode_array(Int8Array, [r.read for r in reads])]
        # rows as tuples: the one column read back needs no dict made a row, nor the names a statement
        with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as curs:
            try:
                if fence is None:
                    self._run_write(curs, params)
                else:  # the fence and the write function in one transaction (two more round trips)
                    with conn.transaction():
                        self._fence(curs, fence)
                        self._run_write(curs, params)
            except BaseException:
                if conn.pgconn.transaction_status != IDLE:
                    conn.rollback()
                raise
            if not stored_events:
                return None
            return sorted(row[0] for row in curs.fetchall())

    def _before_events(self) -> EncodedArray:
        """The library's lock statements and NOTIFY as the write function's text array: the same
        for the recorder's life, encoded on first use (a test's recorder empties the lock after
        __init__)."""
        if self._before_events_array is None:
            self._before_events_array = encode_array(
                TextArray, [_bytes(s).decode() for s in (*self.lock_table_statements, self.notify_statement)])
        return self._before_events_array

    _before_events_array: EncodedArray | None = None

    def _run_write(self, curs: Cursor[TupleRow], params: list[EncodedArray]) -> None:
        """Call the write function (the tests wrap this in a transaction to hold it open)."""
        curs.execute(_bytes(self.call_write_statement), params, prepare=True)

    def _write_events(self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent]) -> list[int]:
        """COPY, the table already locked (so readers never see notification ids commit out of order)."""
        _copy(curs, self.copy_events_statement, self.event_types,
              ((e.originator_id, e.originator_version, e.topic, e.state) for e in stored_events))
        # Under the EXCLUSIVE lock only this COPY draws from the column's sequence, one id
        # per row in row order: the ids are the `len` values ending at currval.
        curs.execute(self.last_notification_id_statement)
        last = _first_value(curs.fetchone())
        return list(range(last - len(stored_events) + 1, last + 1))

    def _check_reads(self, curs: Cursor[DictRow], reads: Sequence[VersionRead]) -> None:
        """The write function's check, for the COPY path: each aggregate where the batch read it."""
        curs.execute(_bytes(self.versions_statement), (encode_array(self.originator_ids, [r.originator_id for r in reads]),))
        stored = {UUID(str(row["originator_id"])): int(row["v"]) for row in curs.fetchall()}
        if any(stored.get(r.originator_id, 0) != r.read for r in reads):
            raise stale([r._replace(after=r.read) for r in reads], stored)

    def _copy_rows(self, curs: Cursor[DictRow], rows: LedgerRows | None) -> None:
        """The command index and rejection rows, by COPY (they need no lock)."""
        if rows is None:
            return
        if rows.commands:
            _copy(curs, self.copy_commands_statement, ["text"] * len(COMMAND_COLUMNS), rows.commands)
        if rows.rejections:
            _copy(curs, self.copy_rejections_statement, REJECTION_TYPES, rows.rejections)

    # The two reads before a batch run outside a transaction (the pool's connections are
    # autocommit): one round trip per statement instead of three (BEGIN, SELECT, ROLLBACK).
    # Nothing is lost: at READ COMMITTED each statement had its own snapshot anyway, and
    # the batch's own transaction is what the command index's key and the version check guard.

    def select_commands(self, command_ids: Sequence[str]) -> dict[str, KnownCommand]:
        found: dict[str, KnownCommand] = {}
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            for chunk in _chunks(list(command_ids)):
                curs.execute(_bytes(self.select_commands_statement), (encode_array(TextArray, chunk),), prepare=True)
                for row in curs.fetchall():
                    found[row["command_id"]] = _known(row)
        return found

    def lookup(self, command_ids: Sequence[str],
               originator_ids: Sequence[UUID]) -> tuple[dict[str, KnownCommand], set[UUID]]:
        """`select_commands` and `existing_ids` (a batch's two reads) as ONE statement
        when both fit one lookup; otherwise each on its own."""
        if not command_ids or not originator_ids or max(len(command_ids), len(originator_ids)) > IN_LIST_MAX:
            return (self.select_commands(command_ids) if command_ids else {},
                    self.existing_ids(originator_ids) if originator_ids else set())
        known: dict[str, KnownCommand] = {}
        existing: set[UUID] = set()
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(_bytes(self.lookup_statement), (encode_array(TextArray, command_ids),
                                                         encode_array(self.originator_ids, originator_ids)), prepare=True)
            for row in curs.fetchall():
                if row["payload_hash"] is None:  # an aggregate's row (a command's hash is NOT NULL)
                    existing.add(UUID(row["command_id"]))
                else:
                    known[row["command_id"]] = _known(row)
        return known, existing

    def existing_ids(self, originator_ids: Sequence[UUID]) -> set[UUID]:
        found: set[UUID] = set()
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            for chunk in _chunks(list(originator_ids)):
                curs.execute(self.existing_ids_statement, (list(chunk),))
                found.update(UUID(str(row["originator_id"])) for row in curs.fetchall())
        return found

    def select_rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                SQL("SELECT * FROM {0} WHERE id > %s ORDER BY id LIMIT %s").format(self.rejections_table),
                (after_id, limit),
            )
            return [dict(row) for row in curs.fetchall()]

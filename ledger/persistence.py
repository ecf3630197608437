"""Application recorders that also keep the command index and the rejections log.

`Application.save(*aggregates, ledger_rows=LedgerRows(...))` passes its keyword
arguments down to `recorder.insert_events(stored_events, **kwargs)`, which runs
`_insert_events(cursor, stored_events, **kwargs)` inside the SAME database
transaction as the event inserts (the way the library's ProcessRecorder writes
tracking records). So a command's index row, its rejection row and its events
commit together or not at all; a command id used twice anywhere in the store
breaks the index's primary key and the whole transaction rolls back.

Selected with the library's APPLICATION_RECORDER_TOPIC (see ledger/store.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.sqlite import SQLiteApplicationRecorder
from psycopg.sql import SQL, Identifier

COMMANDS_TABLE = "ledger_commands"
REJECTIONS_TABLE = "ledger_rejections"
REJECTION_COLUMNS = ("id", "command_id", "table_id", "round_no", "type", "code", "message", "payload", "received_at")
IN_LIST_MAX = 500  # ids per lookup query
KNOWN_COLUMNS = "command_id, payload_hash, status, code, round_id"


@dataclass(frozen=True, slots=True)
class CommandRow:
    command_id: str
    round_id: str | None
    type: str
    payload_hash: str
    status: str  # the first delivery's status (accepted | refused), returned again on a retry
    code: str | None


class KnownCommand(NamedTuple):
    """What the index remembers of a handled command: enough to answer a retry."""

    payload_hash: str
    status: str
    code: str | None
    round_id: str | None


@dataclass(frozen=True, slots=True)
class RejectionRow:
    command_id: str | None
    table_id: str | None
    round_no: int | None
    type: str | None
    code: str
    message: str
    payload: str
    received_at: str


@dataclass
class LedgerRows:
    commands: list[CommandRow] = field(default_factory=list)
    rejections: list[RejectionRow] = field(default_factory=list)


def _chunks(ids: Sequence[str]) -> list[Sequence[str]]:
    return [ids[i : i + IN_LIST_MAX] for i in range(0, len(ids), IN_LIST_MAX)]


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

    def _insert_events(self, c: Any, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        returning = super()._insert_events(c, stored_events, **kwargs)
        rows: LedgerRows | None = kwargs.get("ledger_rows")
        if rows is not None:
            if rows.commands:
                c.executemany(
                    f"INSERT INTO {COMMANDS_TABLE} VALUES (?,?,?,?,?,?)", [_command_tuple(r) for r in rows.commands],
                )
            if rows.rejections:
                c.executemany(
                    f"INSERT INTO {REJECTIONS_TABLE} ({', '.join(REJECTION_COLUMNS[1:])}) VALUES (?,?,?,?,?,?,?,?)",
                    [_rejection_tuple(r) for r in rows.rejections],
                )
        return returning

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

    def select_rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        with self.datastore.transaction(commit=False) as c:
            c.execute(f"SELECT * FROM {REJECTIONS_TABLE} WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit))
            return [dict(row) for row in c.fetchall()]


def _command_tuple(r: CommandRow) -> tuple[Any, ...]:
    return (r.command_id, r.round_id, r.type, r.payload_hash, r.status, r.code)


def _known(row: Any) -> KnownCommand:
    return KnownCommand(row["payload_hash"], row["status"], row["code"], row["round_id"])


def _rejection_tuple(r: RejectionRow) -> tuple[Any, ...]:
    return (r.command_id, r.table_id, r.round_no, r.type, r.code, r.message, r.payload, r.received_at)


class LedgerPostgresRecorder(PostgresApplicationRecorder):
    def __init__(self, datastore: Any, *, events_table_name: str = "stored_events") -> None:
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

    def _insert_events(self, curs: Any, stored_events: Sequence[StoredEvent], **kwargs: Any) -> None:
        super()._insert_events(curs, stored_events, **kwargs)
        rows: LedgerRows | None = kwargs.get("ledger_rows")
        if rows is None:
            return
        if rows.commands:
            curs.executemany(
                SQL("INSERT INTO {0} VALUES (%s,%s,%s,%s,%s,%s)").format(self.commands_table),
                [_command_tuple(r) for r in rows.commands],
            )
        if rows.rejections:
            curs.executemany(
                SQL("INSERT INTO {0} (command_id, table_id, round_no, type, code, message, payload, received_at) "
                    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s)").format(self.rejections_table),
                [_rejection_tuple(r) for r in rows.rejections],
            )

    def select_commands(self, command_ids: Sequence[str]) -> dict[str, KnownCommand]:
        found: dict[str, KnownCommand] = {}
        with self.datastore.transaction(commit=False) as curs:
            for chunk in _chunks(list(command_ids)):
                curs.execute(
                    SQL("SELECT " + KNOWN_COLUMNS + " FROM {0} WHERE command_id = ANY(%s)").format(self.commands_table),
                    (list(chunk),),
                )
                for row in curs.fetchall():
                    found[row["command_id"]] = _known(row)
        return found

    def existing_ids(self, originator_ids: Sequence[UUID]) -> set[UUID]:
        found: set[UUID] = set()
        table = SQL("{0}.{1}").format(Identifier(self.datastore.schema), Identifier(self.events_table_name))
        with self.datastore.transaction(commit=False) as curs:
            for chunk in _chunks(list(originator_ids)):
                curs.execute(
                    SQL("SELECT originator_id FROM {0} WHERE originator_version = 1 AND originator_id = ANY(%s)").format(
                        table
                    ),
                    (list(chunk),),
                )
                found.update(UUID(str(row["originator_id"])) for row in curs.fetchall())
        return found

    def select_rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                SQL("SELECT * FROM {0} WHERE id > %s ORDER BY id LIMIT %s").format(self.rejections_table),
                (after_id, limit),
            )
            return [dict(row) for row in curs.fetchall()]

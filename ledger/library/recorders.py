"""The rows the ledger's application recorders keep beside events: the command index and
the rejections log, and what a batch read (its stale-read check).

`Application.save(*aggregates, ledger_rows=LedgerRows(...))` passes its keyword
arguments down to `recorder.insert_events(stored_events, **kwargs)`, which the
recorders override (a public method) to write the rows inside the SAME database
transaction as the event inserts (as the library's ProcessRecorder writes its
tracking records). So a command's index row, its rejection row and its events
commit together or not at all; a command id used twice anywhere in the store
breaks the index's primary key and the whole transaction rolls back.

A batch is written the fast way each database offers: SQLite one `executemany` per
table (ledger/library/sqlite_recorder.py); PostgreSQL, a small batch (the live service's)
as ONE statement, a call of the store's write function (`ledger_write_batch`: the rows as
arrays through `unnest`, the library's table lock and NOTIFY, the events `RETURNING` their
ids; its own transaction on the pool's autocommit connection), a large one (ingest's) by
binary `COPY` per table, the events under the same lock (ledger/library/postgres_recorder.py,
its arrays encoded by ledger/library/arrays.py).
What these overrides rely on from the library is pinned in tests/store/ledger/test_recorders.py.

Selected with the library's APPLICATION_RECORDER_TOPIC (see ledger/store.py).

Overrides, and the measurement that keeps each (docs/architecture-library.md):
`LedgerSQLiteRecorder.insert_events` overrides `eventsourcing.sqlite.SQLiteApplicationRecorder`'s
(8.88 against 9.37 µs per event, 1.06x in `python -m ops.bench.library_bench`: kept for the
index and rejection rows it writes in the same transaction);
`LedgerPostgresRecorder.insert_events` overrides
`eventsourcing.postgres.PostgresApplicationRecorder`'s (one statement per live batch: 310 →
160 µs writer CPU per one-command batch, `python -m ops.bench.live_batch`); `EncodedArray`
and `encode_array` stand in for psycopg's array dumpers (text and bytea 1.15x at 5 values,
int8 3.65x at 1,000 values; uuid is slower, 0.60-0.86x, and the next to hand back).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar
from uuid import UUID

from eventsourcing.persistence import IntegrityError

COMMANDS_TABLE = "ledger_commands"
REJECTIONS_TABLE = "ledger_rejections"
COMMAND_COLUMNS = ("command_id", "round_id", "type", "payload_hash", "status", "code")  # as CommandRow
REJECTION_COLUMNS = ("id", "command_id", "table_id", "round_no", "type", "code", "message", "payload", "received_at")
REJECTION_TYPES = ("text", "text", "int8", "text", "text", "text", "text", "text")  # COPY's types for columns 1..
_Id = TypeVar("_Id", str, UUID)
IN_LIST_MAX = 500  # ids per lookup query
KNOWN_COLUMNS = "command_id, payload_hash, status, code, round_id"


class CommandRow(NamedTuple):  # a tuple, made per command: cheaper than a frozen dataclass, and it is the row
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


class RejectionRow(NamedTuple):
    command_id: str | None
    table_id: str | None
    round_no: int | None
    type: str | None
    code: str
    message: str
    payload: str
    received_at: str


class VersionRead(NamedTuple):
    """An aggregate a batch decided on: the version it was read at (0: nothing stored) and the
    version the batch leaves it at (the same when the batch wrote nothing to it)."""

    originator_id: UUID
    read: int
    after: int


class Fence(NamedTuple):
    """A lease the batch's transaction must still hold (ledger/leases.py): its name and the
    fencing token the writer was given. Checked first in the transaction; `LeaseLost` when the
    token moved on, and nothing of the batch commits."""
    name: str
    token: int


@dataclass
class LedgerRows:
    commands: list[CommandRow] = field(default_factory=list)
    rejections: list[RejectionRow] = field(default_factory=list)
    # Checked in the write's transaction: the store must hold each aggregate at the version
    # the batch read it at, or the batch was decided on a stale read and nothing commits.
    reads: list[VersionRead] = field(default_factory=list)
    fence: Fence | None = None  # a lease-holding writer's (PostgreSQL only)


def stale(reads: Sequence[VersionRead], stored: dict[UUID, int]) -> IntegrityError:
    """The conflict a batch decided on a stale read raises (the application reruns it fresh)."""
    moved = [f"{r.originator_id} read at version {r.read}, stored {stored.get(r.originator_id, 0)}"
             for r in reads if stored.get(r.originator_id, 0) != r.after]
    return IntegrityError("stale read: another writer moved an aggregate on: " + "; ".join(moved[:3]))


def _chunks(ids: Sequence[_Id]) -> list[Sequence[_Id]]:
    return [ids[i : i + IN_LIST_MAX] for i in range(0, len(ids), IN_LIST_MAX)]



def _known(row: Any) -> KnownCommand:
    return KnownCommand(row["payload_hash"], row["status"], row["code"], row["round_id"])


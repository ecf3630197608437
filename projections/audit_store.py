"""Reading the live store for audits and replays (read only).

Global order comes from `projections.reader.read_events`. One round's events
with their global positions need the store's position column, which the
library's `select_events` does not return: `round_events` asks for it with
one indexed query on the library's own events table (SQLite `rowid`,
PostgreSQL `notification_id`), then decodes through the app's mapper exactly
as the reader does.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification

from domain.errors import Refusal
from projections.reader import RecordedEvent, decode, read_events

ROUND_PREFIX = "Round."
ROUND_REF_MAX = 200


def parse_round_ref(ref: str) -> UUID:
    """A round UUID, or `TABLE#ROUND_NO` (the ledger's deterministic id)."""
    from ledger.round import round_id_for

    if "#" in ref:
        table_id, _, number = ref.rpartition("#")
        if not (table_id and number.isdigit() and len(ref) <= ROUND_REF_MAX):
            raise Refusal("bad_round_ref", f"{ref!r}: use a round UUID or TABLE#ROUND_NO like bacc-1#12")
        return round_id_for(table_id, int(number))
    try:
        return UUID(ref)
    except ValueError:
        raise Refusal("bad_round_ref", f"{ref!r}: use a round UUID or TABLE#ROUND_NO like bacc-1#12") from None


def events_table(app: Any) -> str:
    """The library's events table name for this app (`stored_events` on SQLite, `ledger_events` on PostgreSQL)."""
    return app.recorder.events_table_name


def round_events(app: Any, round_id: UUID) -> list[RecordedEvent]:
    """Every event of one round, in round order, with global positions."""
    recorder = app.recorder
    module = type(recorder).__module__ + " " + " ".join(c.__module__ for c in type(recorder).__mro__)
    if "eventsourcing.sqlite" in module:
        rows = _sqlite_rows(recorder, round_id)
    elif "eventsourcing.postgres" in module:
        rows = _postgres_rows(recorder, round_id)
    else:  # any other recorder: scan the whole sequence
        return [e for e in read_events(app) if e.originator_id == str(round_id)]
    return [decode(app.mapper, n) for n in rows]


def _sqlite_rows(recorder: Any, round_id: UUID) -> list[Notification]:
    statement = (f"SELECT rowid, * FROM {recorder.events_table_name} "
                 "WHERE originator_id=? ORDER BY originator_version")
    with recorder.datastore.transaction(commit=False) as c:
        c.execute(statement, [round_id.hex])
        return [Notification(id=r["rowid"], originator_id=recorder.convert_originator_id(r["originator_id"]),
                             originator_version=r["originator_version"], topic=r["topic"], state=r["state"])
                for r in c.fetchall()]


def _postgres_rows(recorder: Any, round_id: UUID) -> list[Notification]:
    from psycopg.sql import SQL, Identifier

    statement = SQL("SELECT * FROM {schema}.{table} WHERE originator_id = %s ORDER BY originator_version").format(
        schema=Identifier(recorder.datastore.schema), table=Identifier(recorder.events_table_name))
    with recorder.datastore.transaction(commit=False) as curs:
        curs.execute(statement, (round_id,))
        return [Notification(id=r["notification_id"], originator_id=r["originator_id"],
                             originator_version=r["originator_version"], topic=r["topic"], state=bytes(r["state"]))
                for r in curs.fetchall()]


def rounds_in_range(app: Any, start: int = 1, stop: int | None = None,
                    progress: Any = None) -> Iterator[tuple[str, list[RecordedEvent]]]:
    """Every round with an event in positions [start, stop], with ALL its events.

    One pass over the sequence from position 1 to the head (a round's first
    events may lie before `start` and a reversal after `stop`), grouping Round
    events in memory; a round is yielded once the pass is complete.
    `progress(n)` is called per event read.
    """
    by_round: dict[str, list[RecordedEvent]] = defaultdict(list)
    wanted: set[str] = set()
    for event in read_events(app, 1, page_size=5000):
        if progress is not None:
            progress(1)
        if not event.name.startswith(ROUND_PREFIX):
            continue
        by_round[event.originator_id].append(event)
        if event.position >= start and (stop is None or event.position <= stop):
            wanted.add(event.originator_id)
    for round_id, events in by_round.items():
        if round_id in wanted:
            yield round_id, events

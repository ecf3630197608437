"""Each of the ledger's overrides of `eventsourcing` against what the library offers, on the same rows.

The table in docs/architecture-library.md comes from this: per override, the library's way
and ours on the golden feed's events (ingested once into a temporary SQLite store),
microseconds per event (or per call), medians of interleaved repeats, and whether both
give the same result (the same bytes, the same values). Times are the CPU time of the
measuring thread (a shared machine's other load does not count; the database's own work
is in this thread for SQLite, on the server for PostgreSQL). Run:

    python -m ops.bench.library_bench [--events 3000] [--repeat 7] [--json]
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast
from uuid import uuid4

from eventsourcing.domain import CollectEventsProtocol, DomainEventProtocol
from eventsourcing.persistence import EventStore, JSONTranscoder, Mapper, StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore
from psycopg.adapt import Dumper, Transformer
from psycopg.types.array import ListBinaryDumper

from ledger.eventlog import EventLog
from ledger.library import arrays, sqlite_recorder
from ledger.library.aggregate import LedgerEvent, PendingEvents, Stamp
from ledger.library.eventstore import LedgerEventStore, library_form
from ledger.library.transcoder import OrjsonTranscoder
from ledger.store import open_app

GOLDEN_FEED = Path(__file__).resolve().parents[2] / "tests" / "store" / "golden" / "day.feed.jsonl.gz"


def _median_us(fn: Callable[[], object], per: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return statistics.median(times) / per * 1e6


def _pair(name: str, library: Callable[[], object], ours: Callable[[], object], per: int, repeat: int,
          same: bool) -> dict[str, Any]:
    """Library and ours, interleaved repeat by repeat (the same load on both)."""
    lib_times, our_times = [], []
    for _ in range(repeat):
        lib_times.append(_median_us(library, per, 1))
        our_times.append(_median_us(ours, per, 1))
    lib, our = statistics.median(lib_times), statistics.median(our_times)
    return {"override": name, "library_us": round(lib, 3), "ours_us": round(our, 3),
            "ratio": round(lib / our, 2) if our else None, "same": same}


def psycopg_dumper(array_oid: int) -> Dumper:
    """psycopg's binary list dumper with the array's element type known (as psycopg's
    `register_array` makes it), its elements dumped by psycopg's dumper of that type."""
    element_oid = arrays.ELEMENT_OIDS[next(k for k in arrays.ELEMENT_OIDS if k.oid == array_oid)]
    kind = type(f"List{array_oid}BinaryDumper", (ListBinaryDumper,), {"oid": array_oid, "element_oid": element_oid})
    return cast(Dumper, kind(list, Transformer()))


def _batch_stamped(events: Sequence[Any], batch_size: int) -> list[Any]:
    """Copies of `events` whose timestamps are one object per `batch_size` events, as a
    ledger batch's events share its one `Stamp.recorded_at` (the transcoder formats it once)."""
    out, stamp = [], None
    for i, event in enumerate(events):
        if i % batch_size == 0:
            stamp = event.timestamp
        copy = object.__new__(type(event))
        copy.__dict__.update(vars(event), timestamp=stamp)
        out.append(copy)
    return out


def _library_transcoder() -> JSONTranscoder:
    """The library's JSON transcoder with the types the application registers."""
    from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, UUIDAsHex

    transcoder = JSONTranscoder()
    for t in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        transcoder.register(t)
    return transcoder


def measure(events_max: int, repeat: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/lib.db"
        app = open_app(url)
        with gzip.open(GOLDEN_FEED, "rt", encoding="utf-8") as f:
            app.ingest([line for line in f])
        log = EventLog(app)
        notifications = app.recorder.select_notifications(start=1, limit=events_max)
        n = len(notifications)
        library_mapper = Mapper[Any](transcoder=_library_transcoder())
        ours = app.mapper
        events = [ours.to_domain_event(s) for s in notifications]
        out = []

        # 1. events: the dataclass constructor against LedgerEvent.recorded
        def fields_of(e: Any) -> dict[str, Any]:
            return {k: v for k, v in vars(e).items()
                    if k not in ("originator_id", "originator_version", "timestamp", "command_id", "studio_time")}
        args: list[tuple[Any, ...]] = [(type(e), e.originator_id, e.originator_version, e.timestamp, Stamp(e.command_id, e.studio_time),
                 fields_of(e)) for e in events if isinstance(e, LedgerEvent)]
        same = all(vars(c(originator_id=i, originator_version=v, timestamp=t, command_id=s.command_id,
                          studio_time=s.studio_time, **f)) == vars(c.recorded(i, v, t, s, f))
                   for c, i, v, t, s, f in args)
        out.append(_pair(
            "event construction (aggregate.py LedgerEvent.recorded)",
            lambda: [c(originator_id=i, originator_version=v, timestamp=t, command_id=s.command_id,
                       studio_time=s.studio_time, **f) for c, i, v, t, s, f in args],
            lambda: [c.recorded(i, v, t, s, f) for c, i, v, t, s, f in args], len(args), repeat, same))

        # 2. writing, as the ledger writes: a batch's events share one timestamp object (ledger/app.py)
        written = _batch_stamped(events, 500)
        plain_mapper = Mapper[Any](transcoder=ours.transcoder)
        same = all(library_form(library_mapper.to_stored_event(e), e, ours.transcoder) == ours.to_stored_event(e)
                   for e in written)
        out.append(_pair("event -> stored bytes (eventstore.py LedgerMapper + transcoder.py)",
                         lambda: [library_mapper.to_stored_event(e) for e in written],
                         lambda: [ours.to_stored_event(e) for e in written], n, repeat, same))
        out.append(_pair("  of which the mapper (eventstore.py LedgerMapper, against Mapper + transcoder.py)",
                         lambda: [plain_mapper.to_stored_event(e) for e in written],
                         lambda: [ours.to_stored_event(e) for e in written], n, repeat,
                         all(library_form(plain_mapper.to_stored_event(e), e, ours.transcoder)
                             == ours.to_stored_event(e) for e in written)))

        # 2b. saving: the library's EventStore.put (a Recording and a Notification per event) against
        # LedgerEventStore.put(recordings=False), both on a recorder that only numbers the rows
        class Numbering:
            def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> list[int]:
                return list(range(1, len(stored_events) + 1))
        library_store = EventStore[Any](mapper=ours, recorder=cast(Any, Numbering()))
        our_store = LedgerEventStore(mapper=ours, recorder=cast(Any, Numbering()))
        out.append(_pair("saving events, recordings skipped (eventstore.py LedgerEventStore)",
                         lambda: library_store.put(written), lambda: our_store.put(written, recordings=False),
                         n, repeat, True))

        # 3. reading: the library's mapper (JSON) against the event log's decode into records
        same = all(vars(library_mapper.to_domain_event(s)) == vars(ours.to_domain_event(s)) for s in notifications)
        out.append(_pair("stored bytes -> event (transcoder.py decode)",
                         lambda: [library_mapper.to_domain_event(s) for s in notifications],
                         lambda: [ours.to_domain_event(s) for s in notifications], n, repeat, same))

        library_transcoder = library_mapper.transcoder
        transcoder = cast(OrjsonTranscoder, ours.transcoder)
        out.append(_pair("  stored state -> dict (transcoder.py decode_state, the event log's)",
                         lambda: [library_transcoder.decode(s.state) for s in notifications],
                         lambda: [transcoder.decode_state(s.state) for s in notifications], n, repeat,
                         all(library_transcoder.decode(s.state) == transcoder.decode_state(s.state)
                             for s in notifications)))
        out.append(_pair("  stored state -> dict (transcoder.py decode, the mapper's)",
                         lambda: [library_transcoder.decode(s.state) for s in notifications],
                         lambda: [ours.transcoder.decode(s.state) for s in notifications], n, repeat,
                         all(library_transcoder.decode(s.state) == ours.transcoder.decode(s.state)
                             for s in notifications)))

        # 4. the event log's page: the recorder's select_notifications against its own select
        rows = log.rows(1, n)
        same = [(s.id, str(s.originator_id), s.originator_version, s.topic, s.state) for s in notifications] == [
            (p, str(log._id_text(i)), v, t, b) for p, i, v, t, b in rows]
        out.append(_pair("a page of stored rows (eventlog.py rows, SQLite)",
                         lambda: app.recorder.select_notifications(start=1, limit=n),
                         lambda: log.rows(1, n), n, repeat, same))
        out.append(_pair("a page of records (eventlog.py: notifications+decode against rows+decode_rows)",
                         lambda: list(map(log.decode, app.recorder.select_notifications(start=1, limit=n))),
                         lambda: log.decode_rows(log.rows(1, n)), n, repeat,
                         list(map(log.decode, notifications)) == log.decode_rows(rows)))

        # 5. SQLite insert: the library's application recorder against LedgerSQLiteRecorder
        stored = [StoredEvent(uuid4(), 1, s.topic, s.state) for s in notifications]

        used: dict[type, list[Any]] = {}

        def insert(kind: type[SQLiteApplicationRecorder]) -> Callable[[], object]:
            """Each call inserts into a recorder made beforehand on its own new file (the insert alone timed)."""
            fresh = []
            for _ in range(repeat):
                recorder = kind(SQLiteDatastore(f"{tmp}/ins-{uuid4().hex}.db"))
                recorder.create_table()
                fresh.append(recorder)

            def run() -> object:
                recorder = fresh.pop()
                used.setdefault(kind, []).append(recorder)
                return recorder.insert_events(stored)
            return run

        def rows_of(recorder: Any) -> list[tuple[Any, ...]]:
            return [(s.id, s.originator_id, s.originator_version, s.topic, s.state)
                    for s in recorder.select_notifications(start=1, limit=n + 1)]
        row = _pair("SQLite insert of a batch (sqlite_recorder.py LedgerSQLiteRecorder)",
                    insert(SQLiteApplicationRecorder), insert(sqlite_recorder.LedgerSQLiteRecorder), n, repeat, True)
        row["same"] = rows_of(used[SQLiteApplicationRecorder][0]) == rows_of(used[sqlite_recorder.LedgerSQLiteRecorder][0])
        out.append(row)
        # 6. Application.save's protocol checks: per aggregate, against once per batch (PendingEvents)
        aggregates: list[Any] = [app.repository.get(i) for i in {e.originator_id for e in events}][:175]
        pending = PendingEvents(aggregates, uuid4())

        def checks(objs: Sequence[object]) -> Callable[[], object]:
            return lambda: [isinstance(o, DomainEventProtocol) or isinstance(o, CollectEventsProtocol) for o in objs]
        out.append(_pair(f"save's protocol checks, a batch of {len(aggregates)} aggregates (aggregate.py PendingEvents)",
                         checks(aggregates), checks([pending]), 1, repeat, True))
        app.close()

    # 7. PostgreSQL binary arrays: psycopg's dumper of the array type against the hand-encoded bytes,
    # at a live batch's size and at a view page's
    states = [s.state for s in notifications]
    for size in (5, 1000):
        values: dict[type[arrays.EncodedArray], list[Any]] = {
            arrays.TextArray: [f"command-{i}" for i in range(size)], arrays.Int8Array: list(range(size)),
            arrays.ByteaArray: (states * (size // len(states) + 1))[:size],
            arrays.UuidArray: [uuid4() for _ in range(size)]}
        for kind, column in values.items():
            dumper = psycopg_dumper(kind.oid)
            out.append(_pair(f"PostgreSQL {kind.__name__} of {size} (arrays.py encode_array)",
                             lambda d=dumper, c=column: d.dump(c),  # type: ignore[misc]
                             lambda k=kind, c=column: arrays.encode_array(k, c),  # type: ignore[misc]
                             1, repeat * 20, bytes(dumper.dump(column) or b"") == arrays.encode_array(kind, column)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=3000, help="stored events measured (of the golden feed's)")
    p.add_argument("--repeat", type=int, default=7, help="interleaved repeats; medians count")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = measure(args.events, args.repeat)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'override':<88} {'library us':>11} {'ours us':>9} {'ratio':>6}  same")
    for r in rows:
        print(f"{r['override']:<88} {r['library_us']:>11.2f} {r['ours_us']:>9.2f} {r['ratio']:>6}  {r['same']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

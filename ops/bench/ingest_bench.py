"""Ingest benchmark: the ledger against the database's own write limit, same rows, same run.

    python -m ops.bench.ingest_bench [--db URL ...] [--commands N] [--tables 50] [--batch-size 500]
                                     [--repeat 3] [--workers N]

For each store (default: a temporary SQLite file and, when reachable, PostgreSQL in
temporary schemas), a simulated feed of single commands from `--tables` tables is
ingested by `LedgerApp.ingest` (parse, check, record, command index; batched
transactions), in one process and with `--workers` processes. Every row the ledger
stored is then written again, in the same transactions (each commit holding exactly
the rows the ledger's batch wrote), into identical, fresh tables (created by the
ledger's own recorder, same keys and indexes) by the database driver alone:

- the events (originator_id, originator_version, topic, state);
- the command-index rows (one per command handled: idempotency and conflict
  detection need them, ledger/library/recorders.py COMMAND_COLUMNS);
- the rejection rows (one per refused command).

Written with:

- PostgreSQL: psycopg `executemany` of plain INSERTs, and `COPY ... FROM STDIN (FORMAT BINARY)`;
- SQLite: `sqlite3` `executemany` of plain INSERTs, same journal mode (WAL) and
  synchronous setting as the ledger's connections.

The raw writers do only that: no table lock, no parsing, no checks. The headline ratio
is ledger events/s over raw `executemany` of all those rows (one connection, one
process), for the ledger in one process and with N workers; the raw writes of the
event rows alone (the baseline before 26 November 2026) are printed beside it. Runs
take turns (ledger 1, ledger N, raw ...) `--repeat` times, each into a fresh store;
the figures are medians.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from ledger.app import BATCH_SIZE_DEFAULT, Result
from ledger.eventlog import EventLog
from ledger.library.recorders import (
    COMMAND_COLUMNS,
    COMMANDS_TABLE,
    REJECTION_COLUMNS,
    REJECTION_TYPES,
    REJECTIONS_TABLE,
)
from ledger.partitions import default_workers
from ledger.store import env_for, open_app
from ops.sim.simulator import simulate

PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
COMMANDS_PER_ROUND_APPROX = 20
EVENT_COLUMNS = "originator_id, originator_version, topic, state"
EVENT_TYPES = ["uuid", "int8", "text", "bytea"]
COMMAND_TYPES = ["text"] * len(COMMAND_COLUMNS)

Row = tuple[UUID, int, str, bytes]  # an event row
CommandIndexRow = tuple[Any, ...]  # as COMMAND_COLUMNS
RejectionLogRow = tuple[Any, ...]  # as REJECTION_COLUMNS without the id the table assigns


@dataclass(frozen=True)
class Stored:
    """What one ledger transaction (or the whole store) holds, in write order."""

    events: Sequence[Row]
    commands: Sequence[CommandIndexRow] = ()
    rejections: Sequence[RejectionLogRow] = ()

    @property
    def rows(self) -> int:
        return len(self.events) + len(self.commands) + len(self.rejections)

    def events_only(self) -> Stored:
        return Stored(self.events)


@dataclass(frozen=True)
class Commit:
    """What the results of one committed ledger batch say it wrote."""

    events: int
    command_ids: list[str]  # of results that may have written an index row, in order
    refused: int  # each refusal wrote one rejection row


@dataclass(frozen=True)
class LedgerRun:
    seconds: float
    cpu_seconds: float  # this process's CPU time: steadier than wall time on a busy machine (1 worker only)
    commands: int
    accepted: int
    events: int
    commits: list[Commit]  # per committed batch, in order (one process only)


def make_feed(commands: int, tables: int, seed: int) -> list[bytes]:
    rounds = max(1, commands // (tables * COMMANDS_PER_ROUND_APPROX) + 1)
    feed: list[bytes] = []
    for line in simulate(tables, rounds, seed=seed, fault_rate=0):
        feed.append(line)
        if len(feed) >= commands:
            break
    return feed


# ------------------------------------------------------------------ stores

def _pg_connect(url: str) -> Any:
    import psycopg

    env = env_for(url)
    return psycopg.connect(dbname=env["POSTGRES_DBNAME"], host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"],
                           user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"] or None,
                           autocommit=True)


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@contextmanager
def fresh_store(url: str, tag: str) -> Iterator[str]:
    """A store URL nobody used: a new SQLite file, or a new PostgreSQL schema dropped afterwards."""
    unique = f"{tag}_{uuid.uuid4().hex[:8]}"
    if url.startswith("sqlite:///"):
        yield f"{url}.{unique}"
        return
    schema = f"bench_{unique}"
    try:
        yield _with_schema(url.split("?")[0], schema)
    finally:
        with _pg_connect(url) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@dataclass(frozen=True)
class Tables:
    events: str
    commands: str
    rejections: str


def _tables(url: str) -> Tables:
    """The ledger's tables in this store, created (when new) by the ledger's own recorder."""
    app = open_app(url)
    name = EventLog(app).events_table
    app.close()
    env = env_for(url)
    if env["PERSISTENCE_MODULE"] == "eventsourcing.postgres":
        schema = f'"{env["POSTGRES_SCHEMA"]}".'
        return Tables(schema + name, schema + COMMANDS_TABLE, schema + REJECTIONS_TABLE)
    return Tables(name, COMMANDS_TABLE, REJECTIONS_TABLE)


# ------------------------------------------------------------------ the ledger

def run_ledger(url: str, feed: list[bytes], batch_size: int, workers: int,
               env: dict[str, str] | None = None) -> tuple[LedgerRun, Stored]:
    app = open_app(url, **(env or {}))
    commits: list[Commit] = []

    def on_batch(results: list[Result]) -> None:
        ids = [r.command_id for r in results if r.status in ("accepted", "refused") and r.command_id is not None]
        refused = sum(r.status == "refused" for r in results)
        commits.append(Commit(sum(len(r.events) for r in results), ids, refused))

    t0, c0 = time.perf_counter(), time.process_time()
    results = app.ingest(feed, batch_size=batch_size, workers=workers, on_batch=on_batch)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    stored = Stored(_stored_rows(app), *_stored_ledger_rows(url))
    app.close()
    accepted = sum(r.status == "accepted" for r in results)
    return LedgerRun(seconds, cpu_seconds, len(feed), accepted, len(stored.events), commits), stored


def _as_uuid(originator_id: UUID | str) -> UUID:
    """The library types a stored id as UUID or text; the ledger's are UUIDs."""
    return originator_id if isinstance(originator_id, UUID) else UUID(originator_id)


def _stored_rows(app: Any) -> list[Row]:
    rows: list[Row] = []
    start = 1
    log = EventLog(app)
    while notes := log.notifications(start, 5000):
        rows.extend((_as_uuid(n.originator_id), n.originator_version, n.topic, n.state) for n in notes)
        start = notes[-1].id + 1
    return rows


def _stored_ledger_rows(url: str) -> tuple[list[CommandIndexRow], list[RejectionLogRow]]:
    """The command-index rows (in no particular order) and the rejection rows (in write order)."""
    tables = _tables(url)
    commands = f"SELECT {', '.join(COMMAND_COLUMNS)} FROM {tables.commands}"
    rejections = f"SELECT {', '.join(REJECTION_COLUMNS[1:])} FROM {tables.rejections} ORDER BY id"
    if url.startswith("sqlite"):
        conn = sqlite3.connect(env_for(url)["SQLITE_DBNAME"])
        try:
            return conn.execute(commands).fetchall(), conn.execute(rejections).fetchall()
        finally:
            conn.close()
    with _pg_connect(url) as pg:
        return pg.execute(commands).fetchall(), pg.execute(rejections).fetchall()


def batched(stored: Stored, commits: Sequence[Commit]) -> list[Stored]:
    """The stored rows cut into the ledger's transactions (a batch that wrote nothing writes
    nothing). A command's index row goes with the first batch whose results name it as
    handled (accepted or refused): the batch that wrote it."""
    by_id = {row[0]: row for row in stored.commands}
    out: list[Stored] = []
    at_event = at_rejection = 0
    for c in commits:
        commands = [by_id.pop(cid) for cid in dict.fromkeys(c.command_ids) if cid in by_id]
        batch = Stored(stored.events[at_event:at_event + c.events], commands,
                       stored.rejections[at_rejection:at_rejection + c.refused])
        at_event, at_rejection = at_event + c.events, at_rejection + c.refused
        if batch.rows:
            out.append(batch)
    if at_event != len(stored.events) or at_rejection != len(stored.rejections) or by_id:
        raise SystemExit(f"the ledger's batches hold {at_event} events, {at_rejection} rejections and "
                         f"{len(stored.commands) - len(by_id)} index rows, the store {len(stored.events)}, "
                         f"{len(stored.rejections)} and {len(stored.commands)}")
    return out


# ------------------------------------------------------------------ raw writers

def _inserts(tables: Tables, mark: str) -> tuple[str, str, str]:
    def insert(table: str, columns: Sequence[str]) -> str:
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"

    return (insert(tables.events, EVENT_COLUMNS.split(", ")), insert(tables.commands, COMMAND_COLUMNS),
            insert(tables.rejections, REJECTION_COLUMNS[1:]))


def raw_pg_executemany(url: str, batches: list[Stored]) -> float:
    events, commands, rejections = _inserts(_tables(url), "%s")
    with _pg_connect(url) as conn:
        t0 = time.perf_counter()
        for batch in batches:
            with conn.transaction(), conn.cursor() as cur:
                for statement, rows in ((events, batch.events), (commands, batch.commands),
                                        (rejections, batch.rejections)):
                    if rows:
                        cur.executemany(statement, rows)
        return time.perf_counter() - t0


def raw_pg_copy(url: str, batches: list[Stored]) -> float:
    tables = _tables(url)
    copies = [
        (f"COPY {tables.events} ({EVENT_COLUMNS}) FROM STDIN (FORMAT BINARY)", EVENT_TYPES),
        (f"COPY {tables.commands} ({', '.join(COMMAND_COLUMNS)}) FROM STDIN (FORMAT BINARY)", COMMAND_TYPES),
        (f"COPY {tables.rejections} ({', '.join(REJECTION_COLUMNS[1:])}) FROM STDIN (FORMAT BINARY)",
         list(REJECTION_TYPES)),
    ]
    with _pg_connect(url) as conn:
        t0 = time.perf_counter()
        for batch in batches:
            with conn.transaction(), conn.cursor() as cur:
                for (statement, types), rows in zip(copies, (batch.events, batch.commands, batch.rejections)):
                    if rows:
                        with cur.copy(statement) as copy:
                            copy.set_types(types)
                            for row in rows:
                                copy.write_row(row)
        return time.perf_counter() - t0


def raw_sqlite_executemany(url: str, batches: list[Stored]) -> float:
    tables = _tables(url)  # also leaves the file in the ledger's journal mode (WAL)
    conn = sqlite3.connect(env_for(url)["SQLITE_DBNAME"], isolation_level=None)
    try:
        events, commands, rejections = _inserts(tables, "?")
        params = [([(r[0].hex, r[1], r[2], r[3]) for r in b.events], b.commands, b.rejections) for b in batches]
        t0 = time.perf_counter()
        for batch in params:
            conn.execute("BEGIN")
            for statement, rows in zip((events, commands, rejections), batch):
                if rows:
                    conn.executemany(statement, rows)
            conn.execute("COMMIT")
        return time.perf_counter() - t0
    finally:
        conn.close()


# ------------------------------------------------------------------ one store

@dataclass
class Figures:
    ledger: dict[int, list[LedgerRun]]
    raw: dict[str, list[float]]
    events: int = 0
    rows: dict[str, int] = field(default_factory=dict)  # rows each raw writer wrote


BASE = "executemany"  # the headline baseline: every row the ledger stored, plain INSERTs
EVENTS_ONLY = " events only"  # the same writer given the event rows alone


def measure_store(url: str, feed: list[bytes], batch_size: int, workers: list[int], repeat: int,
                  env: dict[str, str] | None = None) -> Figures:
    writers: dict[str, Callable[[str, list[Stored]], float]] = (
        {BASE: raw_sqlite_executemany} if url.startswith("sqlite")
        else {BASE: raw_pg_executemany, "COPY": raw_pg_copy}
    )
    raws = {**writers, **{name + EVENTS_ONLY: write for name, write in writers.items()}}
    figures = Figures({w: [] for w in workers}, {name: [] for name in raws})
    for i in range(repeat):
        batches: list[Stored] = []
        for w in workers:
            with fresh_store(url, f"w{w}r{i}") as store:
                run, stored = run_ledger(store, feed, batch_size, w, env)
            figures.ledger[w].append(run)
            if w == 1:  # one process commits in feed order: its batches are the raw transactions
                batches, figures.events = batched(stored, run.commits), run.events
        for name, write in raws.items():
            given = [b.events_only() for b in batches] if name.endswith(EVENTS_ONLY) else batches
            given = [b for b in given if b.rows]
            figures.rows[name] = sum(b.rows for b in given)
            with fresh_store(url, f"raw{i}") as store:
                figures.raw[name].append(write(store, given))
    return figures


def summary(f: Figures) -> dict[str, float]:
    """The report's figures for `--json`: per worker count, the ratio to raw executemany
    (`ratio_1`, `ratio_2`, ...), events/s, and (one process) the ledger's CPU seconds."""
    base = f.events / statistics.median(f.raw[BASE])
    out: dict[str, float] = {"raw_events_per_s": base}
    for w, runs in f.ledger.items():
        s = statistics.median(r.seconds for r in runs)
        out[f"ratio_{w}"] = runs[0].events / s / base
        out[f"events_per_s_{w}"] = runs[0].events / s
        if w == 1:
            out["cpu_seconds_1"] = statistics.median(r.cpu_seconds for r in runs)
    return out


def report(kind: str, f: Figures) -> None:
    raw_rate = {name: f.events / statistics.median(s) for name, s in f.raw.items()}
    base, events_only = raw_rate[BASE], raw_rate[BASE + EVENTS_ONLY]
    for w, runs in f.ledger.items():
        s = statistics.median(r.seconds for r in runs)
        r0 = runs[0]
        label = f"{w} worker{'s' if w > 1 else ''}"
        cpu = f", {statistics.median(r.cpu_seconds for r in runs):.2f}s CPU" if w == 1 else ""
        print(f"{kind:<10} ledger       {r0.commands / s:>8.0f} commands/s {r0.events / s:>8.0f} events/s "
              f"({r0.commands} commands, {r0.events} events, median {s:.2f}s{cpu}, {label})  "
              f"= {r0.events / s / base:.0%} of raw executemany ({r0.events / s / events_only:.0%} of its events only)")
    for name, rate in raw_rate.items():
        print(f"{kind:<10} raw {name:<23} {'':>7} {rate:>8.0f} events/s "
              f"(driver only, {f.rows[name]} rows, same commits, median {statistics.median(f.raw[name]):.2f}s)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", action="append", help="store URL (repeatable); default: temp SQLite + PostgreSQL")
    p.add_argument("--commands", type=int, default=20_000)
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE_DEFAULT)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=3, help="interleaved runs per store; medians count")
    p.add_argument("--workers", type=int, default=default_workers(),
                   help="also measure `ingest --workers N` (default: the cores here); 1 measures one process only")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="extra library setting for the ledger runs, e.g. TRANSCODER_TOPIC=... to measure a lever alone")
    p.add_argument("--json", action="store_true",
                   help="print only a JSON object of each store's figures (for ops.bench.compare: "
                        "--figure postgresql.ratio_1, sqlite.cpu_seconds_1, ...)")
    args = p.parse_args(argv)
    env = dict(item.split("=", 1) for item in args.env)
    feed = make_feed(args.commands, args.tables, args.seed)
    if not args.json:
        print(f"feed: {len(feed)} commands from {args.tables} tables (seed {args.seed}), batch size {args.batch_size}, "
              f"medians of {args.repeat} interleaved runs" + "".join(f", {k}={v}" for k, v in env.items()))
    found: dict[str, dict[str, float]] = {}
    tmp = tempfile.mkdtemp(prefix="ledger-bench-")
    urls = args.db or [f"sqlite:///{os.path.join(tmp, 'bench.db')}", os.environ.get("LEDGER_TEST_PG_URL", PG_DEFAULT)]
    workers = sorted({1, max(1, args.workers)})
    for url in urls:
        kind = "sqlite" if url.startswith("sqlite") else "postgresql"
        try:
            figures = measure_store(url, feed, args.batch_size, workers, max(1, args.repeat), env)
        except Exception as exc:
            print(f"{url.split('@')[-1]}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
            if args.json:
                return 2
            continue
        if args.json:
            found[kind] = summary(figures)
        else:
            report(kind, figures)
    if args.json:
        print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())

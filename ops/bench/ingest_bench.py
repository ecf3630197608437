"""Ingest benchmark: the ledger against the database's own write limit, same rows, same run.

    python -m ops.bench.ingest_bench [--db URL ...] [--commands N] [--tables 50] [--batch-size 500]
                                     [--repeat 3] [--workers N]

For each store (default: a temporary SQLite file and, when reachable, PostgreSQL in
temporary schemas), a simulated feed of single commands from `--tables` tables is
ingested by `LedgerApp.ingest` (parse, check, record, command index; batched
transactions), in one process and with `--workers` processes. The stored rows the
ledger wrote (originator_id, originator_version, topic, state) are then written again,
in the same transactions (as many rows per commit as each ledger batch wrote), into an
identical, fresh events table (created by the ledger's own recorder) by the database
driver alone:

- PostgreSQL: psycopg `executemany` of a plain INSERT, and `COPY ... FROM STDIN (FORMAT BINARY)`;
- SQLite: `sqlite3` `executemany` of a plain INSERT, same journal mode (WAL) and
  synchronous setting as the ledger's connections.

The raw writers do only that: no table lock, no command index, no parsing. The ratio
is ledger events/s over raw `executemany` events/s (one connection, one process), for
the ledger in one process and with N workers. Runs take turns (ledger 1, ledger N,
raw ...) `--repeat` times, each into a fresh store; the figures are medians.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from ledger.app import BATCH_SIZE_DEFAULT
from ledger.shards import default_workers
from ledger.store import env_for, open_app
from ops.simulator import simulate

PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
COMMANDS_PER_ROUND_APPROX = 20
EVENT_COLUMNS = "originator_id, originator_version, topic, state"

Row = tuple[UUID, int, str, bytes]


@dataclass(frozen=True)
class LedgerRun:
    seconds: float
    cpu_seconds: float  # this process's CPU time: steadier than wall time on a busy machine (1 worker only)
    commands: int
    accepted: int
    events: int
    commits: list[int]  # events per committed batch, in order (one process only)


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


def _events_table(url: str) -> str:
    """The ledger's events table in this store, created by the ledger's own recorder."""
    app = open_app(url)
    name: str = app.recorder.events_table_name  # type: ignore[attr-defined]
    app.close()
    env = env_for(url)
    return f'"{env["POSTGRES_SCHEMA"]}".{name}' if env["PERSISTENCE_MODULE"] == "eventsourcing.postgres" else name


# ------------------------------------------------------------------ the ledger

def run_ledger(url: str, feed: list[bytes], batch_size: int, workers: int,
               env: dict[str, str] | None = None) -> tuple[LedgerRun, list[Row]]:
    app = open_app(url, **(env or {}))
    commits: list[int] = []
    t0, c0 = time.perf_counter(), time.process_time()
    results = app.ingest(feed, batch_size=batch_size, workers=workers,
                         on_batch=lambda rs: commits.append(sum(len(r.events) for r in rs)))
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    rows = _stored_rows(app)
    app.close()
    accepted = sum(r.status == "accepted" for r in results)
    return LedgerRun(seconds, cpu_seconds, len(feed), accepted, len(rows), commits), rows


def _stored_rows(app: Any) -> list[Row]:
    rows: list[Row] = []
    start = 1
    while notes := app.recorder.select_notifications(start, 5000):
        rows.extend((n.originator_id, n.originator_version, n.topic, n.state) for n in notes)
        start = notes[-1].id + 1
    return rows


def batched(rows: Sequence[Row], commits: Sequence[int]) -> list[Sequence[Row]]:
    """The rows cut into the ledger's transactions (a batch that recorded nothing writes nothing)."""
    out, at = [], 0
    for n in commits:
        if n:
            out.append(rows[at:at + n])
            at += n
    if at != len(rows):
        raise SystemExit(f"the ledger's batches hold {at} events, the store {len(rows)}")
    return out


# ------------------------------------------------------------------ raw writers

def raw_pg_executemany(url: str, batches: list[Sequence[Row]]) -> float:
    table = _events_table(url)
    insert = f"INSERT INTO {table} ({EVENT_COLUMNS}) VALUES (%s, %s, %s, %s)"
    with _pg_connect(url) as conn:
        t0 = time.perf_counter()
        for batch in batches:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(insert, batch)
        return time.perf_counter() - t0


def raw_pg_copy(url: str, batches: list[Sequence[Row]]) -> float:
    table = _events_table(url)
    statement = f"COPY {table} ({EVENT_COLUMNS}) FROM STDIN (FORMAT BINARY)"
    with _pg_connect(url) as conn:
        t0 = time.perf_counter()
        for batch in batches:
            with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
                copy.set_types(["uuid", "int8", "text", "bytea"])
                for row in batch:
                    copy.write_row(row)
        return time.perf_counter() - t0


def raw_sqlite_executemany(url: str, batches: list[Sequence[Row]]) -> float:
    table = _events_table(url)  # also leaves the file in the ledger's journal mode (WAL)
    conn = sqlite3.connect(env_for(url)["SQLITE_DBNAME"], isolation_level=None)
    try:
        insert = f"INSERT INTO {table} ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?)"
        params = [[(r[0].hex, r[1], r[2], r[3]) for r in batch] for batch in batches]
        t0 = time.perf_counter()
        for batch in params:
            conn.execute("BEGIN")
            conn.executemany(insert, batch)
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


def measure_store(url: str, feed: list[bytes], batch_size: int, workers: list[int], repeat: int,
                  env: dict[str, str] | None = None) -> Figures:
    raws: dict[str, Callable[[str, list[Sequence[Row]]], float]] = (
        {"executemany": raw_sqlite_executemany} if url.startswith("sqlite")
        else {"executemany": raw_pg_executemany, "COPY": raw_pg_copy}
    )
    figures = Figures({w: [] for w in workers}, {name: [] for name in raws})
    for i in range(repeat):
        batches: list[Sequence[Row]] = []
        for w in workers:
            with fresh_store(url, f"w{w}r{i}") as store:
                run, rows = run_ledger(store, feed, batch_size, w, env)
            figures.ledger[w].append(run)
            if w == 1:  # one process commits in feed order: its batches are the raw transactions
                batches, figures.events = batched(rows, run.commits), run.events
        for name, write in raws.items():
            with fresh_store(url, f"raw{i}") as store:
                figures.raw[name].append(write(store, batches))
    return figures


def report(kind: str, f: Figures) -> None:
    raw_rate = {name: f.events / statistics.median(s) for name, s in f.raw.items()}
    base = raw_rate["executemany"]
    for w, runs in f.ledger.items():
        s = statistics.median(r.seconds for r in runs)
        r0 = runs[0]
        label = f"{w} worker{'s' if w > 1 else ''}"
        cpu = f", {statistics.median(r.cpu_seconds for r in runs):.2f}s CPU" if w == 1 else ""
        print(f"{kind:<10} ledger       {r0.commands / s:>8.0f} commands/s {r0.events / s:>8.0f} events/s "
              f"({r0.commands} commands, {r0.events} events, median {s:.2f}s{cpu}, {label})  "
              f"= {r0.events / s / base:.0%} of raw executemany")
    for name, rate in raw_rate.items():
        print(f"{kind:<10} raw {name:<11} {'':>19} {rate:>8.0f} events/s "
              f"(driver only, same rows, same commits, median {statistics.median(f.raw[name]):.2f}s)")


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
    args = p.parse_args(argv)
    env = dict(item.split("=", 1) for item in args.env)
    feed = make_feed(args.commands, args.tables, args.seed)
    print(f"feed: {len(feed)} commands from {args.tables} tables (seed {args.seed}), batch size {args.batch_size}, "
          f"medians of {args.repeat} interleaved runs" + "".join(f", {k}={v}" for k, v in env.items()))
    tmp = tempfile.mkdtemp(prefix="ledger-bench-")
    urls = args.db or [f"sqlite:///{os.path.join(tmp, 'bench.db')}", os.environ.get("LEDGER_TEST_PG_URL", PG_DEFAULT)]
    workers = sorted({1, max(1, args.workers)})
    for url in urls:
        kind = "sqlite" if url.startswith("sqlite") else "postgresql"
        try:
            figures = measure_store(url, feed, args.batch_size, workers, max(1, args.repeat), env)
        except Exception as exc:
            print(f"{url.split('@')[-1]}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
            continue
        report(kind, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())

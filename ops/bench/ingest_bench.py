"""Ingest benchmark: the ledger against a raw eventsourcing baseline, in the same run.

    python -m ops.bench.ingest_bench [--db URL ...] [--commands N] [--tables 50] [--batch-size 200] [--repeat 3]

For each store (default: a temporary SQLite file and, when reachable, PostgreSQL in a
temporary schema), a simulated feed of single commands from `--tables` tables is
ingested by `LedgerApp.ingest` (parse, check, record, command index; batched
transactions). The baseline then appends the very same events with the library alone
(a plain `Application`, `events.put` per round = one transaction per round, mapping
included) into a fresh store of the same kind. Prints commands/s, events/s and the ratio,
for one process and for `--workers` processes (`ingest --workers`: tables split over
processes; default: the cores here). The baseline is the library in one process.
Each store is measured `--repeat` times (fresh stores each time); the best time of the
ledger and the best time of the baseline count, so a busy moment on the machine does not
decide the figure.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from typing import Any

from eventsourcing.application import Application

from ledger.app import BATCH_SIZE_DEFAULT
from ledger.shards import default_workers
from ledger.store import env_for, open_app
from ops.simulator import simulate

PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
COMMANDS_PER_ROUND_APPROX = 20


def make_feed(commands: int, tables: int, seed: int) -> list[bytes]:
    rounds = max(1, commands // (tables * COMMANDS_PER_ROUND_APPROX) + 1)
    feed: list[bytes] = []
    for line in simulate(tables, rounds, seed=seed, fault_rate=0):
        feed.append(line)
        if len(feed) >= commands:
            break
    return feed


class Baseline(Application):
    name = "Baseline"


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    env = env_for(url)
    with psycopg.connect(dbname=env["POSTGRES_DBNAME"], host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"],
                         user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"] or None,
                         autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _all_events(app: Any) -> list[Any]:
    out, start = [], 1
    while True:
        notes = app.recorder.select_notifications(start, 1000)
        if not notes:
            return out
        out.extend(app.mapper.to_domain_event(n) for n in notes)
        start = notes[-1].id + 1


def run_one(url: str, feed: list[bytes], batch_size: int, workers: int = 1) -> dict[str, Any]:
    app = open_app(url)
    t0 = time.perf_counter()
    results = app.ingest(feed, batch_size=batch_size, workers=workers)
    ledger_s = time.perf_counter() - t0
    events = _all_events(app)
    app.close()
    accepted = sum(r.status == "accepted" for r in results)

    # Baseline: the same events, the library alone, one transaction per aggregate (round/shoe).
    by_aggregate: dict[Any, list[Any]] = defaultdict(list)
    for e in events:
        by_aggregate[e.originator_id].append(e)
    env = env_for(url)
    env.pop("APPLICATION_RECORDER_TOPIC")
    base_url_schema = None
    if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        env["SQLITE_DBNAME"] = env["SQLITE_DBNAME"] + ".baseline"
    else:
        base_url_schema = f"bench_base_{uuid.uuid4().hex[:8]}"
        base = open_app(_with_schema(url.split("?")[0], base_url_schema))  # creates the schema
        base.close()
        env["POSTGRES_SCHEMA"] = base_url_schema
    baseline = Baseline(env=env)
    t0 = time.perf_counter()
    for group in by_aggregate.values():
        baseline.events.put(group)
    base_s = time.perf_counter() - t0
    baseline.close()
    if base_url_schema:
        _drop_schema(url, base_url_schema)
    return {
        "commands": len(feed), "accepted": accepted, "events": len(events),
        "ledger_s": ledger_s, "baseline_s": base_s,
        "ledger_cmd_s": len(feed) / ledger_s, "ledger_ev_s": len(events) / ledger_s,
        "baseline_ev_s": len(events) / base_s, "ratio": base_s / ledger_s,
    }


def measure(url: str, i: int, feed: list[bytes], batch_size: int, workers: int) -> dict[str, Any]:
    """One run into a fresh store: a new SQLite file, or a new PostgreSQL schema dropped afterwards."""
    if url.startswith("sqlite:///"):
        return run_one(f"{url}.{workers}.{i}", feed, batch_size, workers)
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    try:
        return run_one(_with_schema(url, schema), feed, batch_size, workers)
    finally:
        try:
            _drop_schema(url, schema)
        except Exception:
            pass


def best_of(repeat: int, run: Any) -> dict[str, Any]:
    runs = [run(i) for i in range(max(1, repeat))]
    best = dict(min(runs, key=lambda r: r["ledger_s"]))
    base_s = min(r["baseline_s"] for r in runs)
    best.update(baseline_s=base_s, baseline_ev_s=best["events"] / base_s, ratio=base_s / best["ledger_s"])
    best["runs"] = len(runs)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", action="append", help="store URL (repeatable); default: temp SQLite + PostgreSQL")
    p.add_argument("--commands", type=int, default=20_000)
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE_DEFAULT)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=3, help="runs per store; the best ledger and best raw time count")
    p.add_argument("--workers", type=int, default=default_workers(),
                   help="also measure `ingest --workers N` (default: the cores here); 1 measures one process only")
    args = p.parse_args(argv)
    feed = make_feed(args.commands, args.tables, args.seed)
    print(f"feed: {len(feed)} commands from {args.tables} tables (seed {args.seed}), batch size {args.batch_size}")
    tmp = tempfile.mkdtemp(prefix="ledger-bench-")
    urls = args.db or [f"sqlite:///{os.path.join(tmp, 'bench.db')}", os.environ.get("LEDGER_TEST_PG_URL", PG_DEFAULT)]
    for url in urls:
        kind = "sqlite" if url.startswith("sqlite") else "postgresql"
        for workers in sorted({1, max(1, args.workers)}):
            try:
                r = best_of(args.repeat, lambda i, url=url, workers=workers: measure(url, i, feed, args.batch_size, workers))
            except Exception as exc:
                print(f"{url.split('@')[-1]}: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
                break
            label = f"{workers} worker{'s' if workers > 1 else ''}"
            print(f"{kind:<10} ledger  {r['ledger_cmd_s']:>8.0f} commands/s {r['ledger_ev_s']:>8.0f} events/s "
                  f"({r['commands']} commands, {r['events']} events, {r['ledger_s']:.2f}s, {label})")
            print(f"{kind:<10} raw     {'':>8} {'':>11} {r['baseline_ev_s']:>8.0f} events/s "
                  f"(library only, one transaction per aggregate, {r['baseline_s']:.2f}s)")
            print(f"{kind:<10} ratio   ledger / raw = {r['ratio']:.0%} ({label})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

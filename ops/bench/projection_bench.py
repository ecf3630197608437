"""Projection catch-up throughput beside the raw rate of reading and decoding
the same events, in the same run.

    python -m ops.bench.projection_bench                       # temp SQLite file
    python -m ops.bench.projection_bench --db postgresql://postgres@127.0.0.1:5432/postgres?schema=bench

An empty store is first filled with a simulated feed (--tables, --rounds,
--seed); a store with events is used as it is. Raw = `EventLog.raw_read`: the
store's rows selected page by page and decoded by the library's mapper, no
record built (the physical limit of reading them); typed = the same rows
decoded into `ledger.records` (what every reader pays); catch-up = `--rebuild`
of every view then catch up from position 0 (read, decode, fold, write rows
and positions, one transaction per page). Goal: catch-up >= 50% of raw.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.sim.simulator import simulate
from projections.runner import PAGE_SIZE_DEFAULT, Projector

GOAL_RATIO = 0.5


def raw_read(log: EventLog, page_size: int) -> tuple[int, float]:
    started = time.perf_counter()
    count = log.raw_read(page_size)
    return count, time.perf_counter() - started


def typed_read(log: EventLog, page_size: int) -> tuple[int, float]:
    started = time.perf_counter()
    count = sum(1 for _ in log.records(page_size=page_size))
    return count, time.perf_counter() - started


def catch_up(log: EventLog, page_size: int) -> tuple[int, float, int]:
    projector = Projector(log, page_size=page_size)
    projector.rebuild()
    started = time.perf_counter()
    result = projector.catch_up()
    elapsed = time.perf_counter() - started
    projector.close()
    return result.events, elapsed, result.rows_written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.projection_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", metavar="URL", help="store URL (default: a temporary SQLite file)")
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--page-size", type=int, default=PAGE_SIZE_DEFAULT)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement; the best counts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    tmp = None
    if args.db is None:
        tmp = tempfile.TemporaryDirectory(prefix="projection-bench-")
        args.db = f"sqlite:///{tmp.name}/bench.db"
    app = open_app(args.db)
    if EventLog(app).head() == 0:
        feed = list(simulate(args.tables, args.rounds, args.seed, fault_rate=50))
        started = time.perf_counter()
        app.ingest(feed)
        print(f"ingested {len(feed)} commands in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        # Measure on a fresh application: the ingest's caches would otherwise
        # make every collection of the cyclic GC slower during the raw reads
        # (the catch-up freezes the heap between pages), favouring the catch-up.
        app.close()
        del feed
        app = open_app(args.db)
    log = EventLog(app)
    gc.collect()

    raw_runs, typed_runs, proj_runs = [], [], []
    for _ in range(args.repeat):  # interleaved: a busy machine slows all alike
        raw_runs.append(raw_read(log, args.page_size))
        typed_runs.append(typed_read(log, args.page_size))
        proj_runs.append(catch_up(log, args.page_size))
    events = raw_runs[0][0]
    raw_per_s = events / min(t for _, t in raw_runs)
    typed_per_s = events / min(t for _, t in typed_runs)
    proj_events, proj_s, rows = min(proj_runs, key=lambda r: r[1])
    proj_per_s = proj_events / proj_s
    log.close()
    report = {
        "store": args.db.split("?")[0].split("://")[0], "events": events, "page_size": args.page_size,
        "raw_read_decode_events_per_s": round(raw_per_s), "typed_records_events_per_s": round(typed_per_s),
        "catch_up_events_per_s": round(proj_per_s),
        "ratio": round(proj_per_s / raw_per_s, 3), "goal_ratio": GOAL_RATIO, "view_rows_written": rows,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['store']}: {events} events, page {args.page_size}")
        print(f"  raw read + decode : {raw_per_s:>10,.0f} events/s")
        print(f"  typed records     : {typed_per_s:>10,.0f} events/s")
        print(f"  projection catch-up: {proj_per_s:>10,.0f} events/s ({rows} view rows written)")
        print(f"  ratio {proj_per_s / raw_per_s:.0%} (goal >= {GOAL_RATIO:.0%})")
    if tmp:
        tmp.cleanup()
    return 0 if proj_per_s >= GOAL_RATIO * raw_per_s else 1


if __name__ == "__main__":
    sys.exit(main())

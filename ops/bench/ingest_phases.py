"""Where one-process ingest spends its CPU: a per-phase table in us per command, with the
raw driver's write of the same rows beside it (ingest_bench's baseline), so the budget
for a target ratio can be read off the same run.

    python -m ops.bench.ingest_phases [--db sqlite:///FILE] [--commands 20000] [--repeat 3]

Each phase is a ledger function wrapped with a CPU timer (time.thread_time; the ledger
runs on one thread here); a phase's figure is its own CPU, its wrapped callees'
excluded, less the timer's own cost per call (calibrated in the same run). The total
is the CPU (time.process_time) of an interleaved run without the timers; the timers'
remaining cost (the extra Python frames) is about the size of what no phase covers (the
feed loop, the collector, plumbing between phases), so the sum of the phases is printed
beside the total rather than a difference. CPU, not wall time: figures taken on a busy
machine stay comparable. The wrapping changes nothing stored.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ledger import app, handlers, intake, unit
from ledger.app import BATCH_SIZE_DEFAULT
from ledger.library import aggregate, eventstore, sqlite_recorder
from ops.bench.ingest_bench import (
    batched,
    fresh_store,
    make_feed,
    raw_sqlite_executemany,
    run_ledger,
)

RULES = "rules: command checks, game model, settlement"
# (owner, attribute, phase): the order is the table's. Several functions may share a phase.
PHASES: tuple[tuple[Any, str, str], ...] = (
    (app.LedgerApp, "_parse", "parse: pydantic validate_json"),
    (intake, "payload_hash", "payload hash: to_json + sha256"),
    (unit.UnitOfWork, "wanted", "batch reads: ids wanted, lookup"),
    (sqlite_recorder.LedgerSQLiteRecorder, "lookup", "batch reads: ids wanted, lookup"),
    (unit.UnitOfWork, "load", "aggregates: load from batch / cache"),
    (aggregate.LedgerAggregate, "_record_fields", "events: construct + apply"),
    (intake.Intake, "take", "per command: index row, result, event names"),
    (intake.Intake, "refuse", "rejection rows"),
    (unit.UnitOfWork, "save", "save: plumbing, cache"),
    (eventstore.LedgerMapper, "to_stored_event", "events: map + encode (orjson)"),
    (sqlite_recorder.LedgerSQLiteRecorder, "_write_batch", "SQL: executemany (events, index, rejections)"),
    (sqlite_recorder.LedgerSQLiteRecorder, "insert_events", "SQL: BEGIN, COMMIT"),
    (app.LedgerApp, "run_batch", "per batch: results list, unit of work"),
)
# Every handler in the table (ledger/handlers.py HANDLERS) is timed as the rules phase.
TABLES: tuple[tuple[dict[Any, Any], str], ...] = ((handlers.HANDLERS, RULES),)


@dataclass
class Timers:
    """Exclusive CPU per phase: a stack of frames, each the time spent in its call's callees."""

    spent: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    stack: list[list[float]] = field(default_factory=list)  # the time of each open call's callees

    def wrap(self, phase: str, func: Callable[..., Any]) -> Callable[..., Any]:
        clock, stack, spent, calls = time.thread_time, self.stack, self.spent, self.calls

        def timed(*args: Any, **kwargs: Any) -> Any:
            frame = [0.0]
            stack.append(frame)
            t0 = clock()
            try:
                return func(*args, **kwargs)
            finally:
                took = clock() - t0
                stack.pop()
                spent[phase] = spent.get(phase, 0.0) + took - frame[0]
                calls[phase] = calls.get(phase, 0) + 1
                if stack:
                    stack[-1][0] += took

        return timed


@contextmanager
def timed_phases(timers: Timers) -> Iterator[Timers]:
    """Every phase's function wrapped for the duration; the originals back afterwards."""
    originals = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in PHASES]
    tables = [(table, dict(table)) for table, _ in TABLES]
    try:
        for owner, name, phase in PHASES:
            setattr(owner, name, timers.wrap(phase, getattr(owner, name)))
        for table, phase in TABLES:
            table.update({key: timers.wrap(phase, func) for key, func in table.items()})
        yield timers
    finally:
        for table, entries in tables:
            table.update(entries)
        for owner, name, original in reversed(originals):
            if original is None:  # inherited: the wrapper goes, the base class's shows again
                delattr(owner, name)
            else:
                setattr(owner, name, original)


def timer_cost() -> float:
    """CPU seconds one wrapped call adds (two clock readings, the frame), measured here."""
    timers = Timers()
    noop = timers.wrap("calibration", lambda: None)
    n = 20_000
    t0 = time.thread_time()
    for _ in range(n):
        noop()
    wrapped = time.thread_time() - t0
    t0 = time.thread_time()
    for _ in range(n):
        (lambda: None)()
    return max(0.0, (wrapped - (time.thread_time() - t0)) / n)


@dataclass(frozen=True)
class Breakdown:
    commands: int
    phases: dict[str, float]  # us per command
    total_cpu_us: float  # un-instrumented ledger CPU per command
    raw_wall_us: float  # the driver's write of the same rows (ingest_bench's baseline), per command
    raw_cpu_us: float  # its CPU, setup (opening the store, the rows as parameters) included
    calls: dict[str, int]  # timed calls per phase, last run (a phase's time can round to 0 on a short feed)


def measure(url: str, feed: list[bytes], batch_size: int, repeat: int) -> Breakdown:
    cost = timer_cost()
    runs: list[dict[str, float]] = []
    totals: list[float] = []
    raws: list[tuple[float, float]] = []
    calls: dict[str, int] = {}
    for i in range(repeat):
        with fresh_store(url, f"plain{i}") as store:  # un-instrumented: the total, and the rows for raw
            run, stored = run_ledger(store, feed, batch_size, 1)
        totals.append(run.cpu_seconds)
        with fresh_store(url, f"raw{i}") as store:
            batches = batched(stored, run.commits)
            c0 = time.process_time()
            wall = raw_sqlite_executemany(store, batches)
            raws.append((wall, time.process_time() - c0))
        with fresh_store(url, f"timed{i}") as store, timed_phases(Timers()) as timers:
            run_ledger(store, feed, batch_size, 1)
        runs.append({p: s - timers.calls[p] * cost for p, s in timers.spent.items()})
        calls = dict(timers.calls)
    per = 1e6 / len(feed)
    names = dict.fromkeys([*(ph for *_, ph in PHASES), *(ph for _, ph in TABLES)])
    phases = {p: statistics.median(r.get(p, 0.0) for r in runs) * per for p in names}
    return Breakdown(len(feed), phases, statistics.median(totals) * per,
                     statistics.median(w for w, _ in raws) * per, statistics.median(c for _, c in raws) * per, calls)


def report(b: Breakdown) -> None:
    print(f"{'phase':<50} {'us/command':>10}")
    for phase, us in b.phases.items():
        print(f"{phase:<50} {us:>10.1f}")
    print(f"{'sum of the phases (instrumented)':<50} {sum(b.phases.values()):>10.1f}")
    print(f"{'ledger, all CPU (an un-instrumented run)':<50} {b.total_cpu_us:>10.1f}")
    print(f"{'raw executemany of the same rows: write loop (wall)':<50} {b.raw_wall_us:>10.1f}")
    print(f"{'raw executemany: CPU (its setup included)':<50} {b.raw_cpu_us:>10.1f}")
    print(f"35% of raw executemany: the ledger in {b.raw_wall_us / 0.35:.1f} us/command of wall time in all")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", help="a sqlite:/// URL (default: a temporary file)")
    p.add_argument("--commands", type=int, default=20_000)
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE_DEFAULT)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=3, help="interleaved runs; medians count")
    p.add_argument("--json", action="store_true",
                   help="print only a JSON object (for ops.bench.compare: --figure total_cpu_us, phases.NAME)")
    args = p.parse_args(argv)
    url = args.db or f"sqlite:///{os.path.join(tempfile.mkdtemp(prefix='ledger-phases-'), 'bench.db')}"
    if not url.startswith("sqlite:///"):
        p.error("--db must be a sqlite:/// URL (the phases name SQLite's recorder)")
    feed = make_feed(args.commands, args.tables, args.seed)
    if args.json:
        b = measure(url, feed, args.batch_size, max(1, args.repeat))
        print(json.dumps({"total_cpu_us": b.total_cpu_us, "raw_cpu_us": b.raw_cpu_us, "raw_wall_us": b.raw_wall_us,
                          "phases": b.phases, "load_average": os.getloadavg()[0]}))
        return 0
    print(f"feed: {len(feed)} commands from {args.tables} tables (seed {args.seed}), batch size {args.batch_size}, "
          f"medians of {args.repeat} runs; load average {os.getloadavg()[0]:.2f}")
    report(measure(url, feed, args.batch_size, max(1, args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

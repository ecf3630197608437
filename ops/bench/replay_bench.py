"""`python -m ops.bench.replay_bench [--db URL]`: `ledger audit replay` throughput
beside the raw rate of reading and decoding the same events, in the same run.

Without --db it simulates a studio into a fresh temporary SQLite file first.
Each measurement is the best of --repeat runs (after one warm-up), so the
figures compare steady states; the measurements take turns run by run. Audit
replay is measured with --workers (default: as the command, one per core) and
with one worker. Goal: replay >= 50% of the raw rate.
"""
from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.eventlog import EventLog

GOAL_RATIO = 0.5


def best_of(repeat: int, works: dict[str, Callable[[], int]]) -> dict[str, tuple[float, int]]:
    """Best time and count of each work. The works take turns within each round of
    runs, so a burst of load from another process slows all of them, not just one."""
    for work in works.values():
        work()  # warm-up: imports, rule-set hashes, page caches
    best = {name: (float("inf"), 0) for name in works}
    for _ in range(repeat):
        for name, work in works.items():
            started = time.perf_counter()
            count = work()
            best[name] = min(best[name], (time.perf_counter() - started, count))
    return best


def measure(log: EventLog, repeat: int, workers: int | None) -> dict[str, Any]:
    from ops.cli.commands.audit import replay_all
    from projections.audit import chain

    def raw() -> int:  # the physical limit: rows read and decoded by the library, no record built
        return log.raw_read(5000)

    def typed() -> int:
        return sum(1 for _ in log.records(1, page_size=5000))

    def replay(w: int | None) -> Callable[[], int]:
        def run() -> int:
            counted: list[Any] = []  # events read, as the progress bar counts them
            summary = replay_all(log, progress=counted.append, workers=w)
            require_clean(summary)
            used.append(summary["workers"])
            return sum(counted)
        return run

    def hashed() -> int:
        return sum(1 for _ in chain(log.stored(1, page_size=5000)))

    used: list[int] = []
    best = best_of(repeat, {"raw": raw, "typed": typed, "replay": replay(workers), "one": replay(1),
                            "chain": hashed})
    (raw_s, n), (typed_s, _), (replay_s, n_replay), (one_s, n_one), (chain_s, _) = best.values()
    workers_used = used[0]
    require(n_replay == n and n_one == n, f"replay read {n_replay} / {n_one} events, raw {n}")
    raw_rate = n / raw_s
    return {
        "events": n,
        "raw_read_decode_events_per_s": round(raw_rate),
        "typed_records_events_per_s": round(n / typed_s),
        "audit_replay_workers": workers_used,
        "audit_replay_events_per_s": round(n / replay_s),
        "replay_vs_raw": round(n / replay_s / raw_rate, 3),
        "audit_replay_1_worker_events_per_s": round(n / one_s),
        "replay_1_worker_vs_raw": round(n / one_s / raw_rate, 3),
        "audit_chain_events_per_s": round(n / chain_s),
        "goal_replay_vs_raw": GOAL_RATIO,
    }


def require(ok: bool, message: str) -> None:
    if not ok:
        raise SystemExit(message)


def require_clean(summary: dict[str, Any]) -> None:
    if summary["findings"]:
        raise SystemExit(f"replay found {len(summary['findings'])} finding(s); benchmark needs a clean store")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.replay_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", metavar="URL",
                        help="a store (default: a temp SQLite file); an empty store is filled by the simulator first")
    parser.add_argument("--tables", type=int, default=10, help="simulated tables (default 10)")
    parser.add_argument("--rounds", type=int, default=100, help="simulated rounds per table (default 100)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement, best kept (default 3)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="audit replay workers (default: as `ledger audit replay`, one per core); "
                        "the single-worker figure is always measured too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from ledger.eventlog import EventLog
    from ledger.store import open_app
    from ops.sim.simulator import simulate

    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        app = open_app(url)
        if EventLog(app).head() == 0:  # an empty store (or none given): fill it with a simulated studio
            started = time.perf_counter()
            app.ingest(simulate(args.tables, args.rounds, args.seed))
            print(f"simulated and ingested {args.tables} tables x {args.rounds} rounds in "
                  f"{time.perf_counter() - started:.1f}s", file=sys.stderr)
            # Measure on a fresh application: the ingest's caches would make every
            # collection of the cyclic GC slower during the reads, raw and replay alike
            # but not equally (a replay allocates less per event), flattering the ratio.
            app.close()
            app = open_app(url)
        gc.collect()
        figures = {"store": url.split(":", 1)[0], **measure(EventLog(app), args.repeat, args.workers)}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"store {figures['store']}, {figures['events']} events")
        print(f"  raw read + decode : {figures['raw_read_decode_events_per_s']:>9,} events/s")
        print(f"  typed records     : {figures['typed_records_events_per_s']:>9,} events/s")
        print(f"  audit replay      : {figures['audit_replay_events_per_s']:>9,} events/s "
              f"({figures['replay_vs_raw']:.0%} of raw; goal {GOAL_RATIO:.0%}) with "
              f"{figures['audit_replay_workers']} worker(s)")
        print(f"  ... with 1 worker : {figures['audit_replay_1_worker_events_per_s']:>9,} events/s "
              f"({figures['replay_1_worker_vs_raw']:.0%} of raw)")
        print(f"  audit chain (hash): {figures['audit_chain_events_per_s']:>9,} events/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

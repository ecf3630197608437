"""`python -m ops.bench.replay_bench [--db URL]`: `ledger audit replay` throughput
beside the raw rate of reading and decoding the same events, in the same run.

Without --db it simulates a studio into a fresh temporary SQLite file first.
Each measurement is the best of --repeat runs (after one warm-up), so the
figures compare steady states. Goal: replay >= 50% of the raw rate.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

GOAL_RATIO = 0.5


def best_of(repeat: int, work: Callable[[], int]) -> tuple[float, int]:
    work()  # warm-up: imports, rule-set hashes, page caches
    best, count = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        count = work()
        best = min(best, time.perf_counter() - started)
    return best, count


def measure(app: Any, repeat: int) -> dict[str, Any]:
    from ops.commands.audit import replay_all
    from projections.audit import chain
    from projections.reader import read_events

    def raw() -> int:
        return sum(1 for _ in read_events(app, 1, page_size=5000))

    def replay() -> int:
        counted = []
        summary = replay_all(app, progress=lambda n=1: counted.append(n))
        require_clean(summary)
        return len(counted)

    def hashed() -> int:
        return sum(1 for _ in chain(read_events(app, 1, page_size=5000)))

    raw_s, n = best_of(repeat, raw)
    replay_s, n_replay = best_of(repeat, replay)
    chain_s, _ = best_of(repeat, hashed)
    return {
        "events": n,
        "raw_read_decode_events_per_s": round(n / raw_s),
        "audit_replay_events_per_s": round(n_replay / replay_s),
        "audit_chain_events_per_s": round(n / chain_s),
        "replay_vs_raw": round((n_replay / replay_s) / (n / raw_s), 3),
        "goal_replay_vs_raw": GOAL_RATIO,
    }


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
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from ledger.store import open_app
    from ops.simulator import simulate
    from projections.reader import head_position

    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        app = open_app(url)
        if head_position(app) == 0:  # an empty store (or none given): fill it with a simulated studio
            started = time.perf_counter()
            app.ingest(simulate(args.tables, args.rounds, args.seed))
            print(f"simulated and ingested {args.tables} tables x {args.rounds} rounds in "
                  f"{time.perf_counter() - started:.1f}s", file=sys.stderr)
        figures = {"store": url.split(":", 1)[0], **measure(app, args.repeat)}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"store {figures['store']}, {figures['events']} events")
        print(f"  raw read + decode : {figures['raw_read_decode_events_per_s']:>9,} events/s")
        print(f"  audit replay      : {figures['audit_replay_events_per_s']:>9,} events/s "
              f"({figures['replay_vs_raw']:.0%} of raw; goal {GOAL_RATIO:.0%})")
        print(f"  audit chain (hash): {figures['audit_chain_events_per_s']:>9,} events/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

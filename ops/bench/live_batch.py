"""The live writer's cost per batch, in-process on PostgreSQL: CPU (time.process_time),
round trips to the server and statements run per `LedgerApp.run_batch` of k commands from live_bench's 50
simulated tables (what the group-commit writer of `ledger serve` runs for each batch, `assume_new` included).

Round trips are counted from libpq's protocol trace of the app's connections: one per
switch from messages the client sent to messages the server sent. CPU and round trips
do not depend on the machine's load the way latencies do.

    python -m ops.bench.live_batch                 # k = 1, 5, 20
    python -m ops.bench.live_batch --k 5 --commands 4000 --repeats 3
    python -m ops.bench.live_batch --k 1,3 --busy 1   # beside a process that keeps one core busy

`--busy N` runs N processes that spin in pure Python meanwhile: when that leaves more runnable
work than cores the writer's CPU a batch grows by ~75% (it sleeps at each round trip and is
preempted, then comes back to cold caches), as it does in `ledger serve` on a busy machine,
where the event loop, the load generator and PostgreSQL run between the writer's turns; with
a core to spare, by ~6% (docs/benchmarks.md, "Where a command's CPU goes").
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ops.bench.live_bench import PG_URL, feed


def count_round_trips(trace: str) -> int:
    """Switches from client (F) to server (B) messages in a libpq trace."""
    trips, last = 0, ""
    for line in trace.splitlines():
        direction = line.split("\t", 1)[0].strip()[:1]
        if direction == "B" and last == "F":
            trips += 1
        if direction in ("F", "B"):
            last = direction
    return trips


def count_statements(trace: str) -> int:
    """Statements the client ran (Execute messages, extended protocol) in a libpq trace."""
    return sum(1 for line in trace.splitlines() if line.startswith("F") and line.split("\t")[2:3] == ["Execute"])


@contextmanager
def traced(app: Any, path: str) -> Iterator[None]:
    """libpq's trace of every connection the app's datastore hands out, into `path`."""
    import psycopg

    datastore = getattr(app.ledger_recorder(), "datastore")  # noqa: B009 - the PostgreSQL recorder's pool
    original = datastore.get_connection
    seen: dict[int, Any] = {}
    out = open(path, "w")  # closed below, once no connection writes to it any more

    @contextmanager
    def get_connection() -> Iterator[Any]:
        with original() as conn:
            if id(conn) not in seen:
                seen[id(conn)] = conn
                conn.pgconn.trace(out.fileno())
                conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            yield conn

    datastore.get_connection = get_connection
    try:
        yield
    finally:
        datastore.get_connection = original
        for conn in seen.values():
            conn.pgconn.untrace()
        out.close()


def run(k: int, commands: int) -> dict[str, Any]:
    import psycopg

    from ledger.store import open_app

    base = PG_URL.split("?")[0]
    schema = f"bench_batch_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    app = open_app(f"{base}?schema={schema}")
    fd, trace_path = tempfile.mkstemp(prefix="live-batch-trace-")
    os.close(fd)
    try:
        lines = feed(commands, f"k{k}")
        batches = [lines[i:i + k] for i in range(0, len(lines), k)]
        warm, measured = batches[: len(batches) // 5], batches[len(batches) // 5:]
        for batch in warm:  # rounds cached, statements prepared: as in a running service
            app.run_batch(batch, assume_new=True)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for batch in measured:
            results = app.run_batch(batch, assume_new=True)
            if any(r.status != "accepted" for r in results):
                raise RuntimeError(f"a command was not accepted: {results}")
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        # round trips on a second pass of fresh commands (tracing costs CPU of its own)
        traced_lines = feed(commands // 2, f"t{k}")
        with traced(app, trace_path):
            traced_batches = [traced_lines[i:i + k] for i in range(0, len(traced_lines), k)]
            for batch in traced_batches[: len(traced_batches) // 5]:
                app.run_batch(batch, assume_new=True)
            start = os.path.getsize(trace_path)
            for batch in traced_batches[len(traced_batches) // 5:]:
                app.run_batch(batch, assume_new=True)
        with open(trace_path) as f:
            f.seek(start)
            text = f.read()
        trips, statements = count_round_trips(text), count_statements(text)
        n = len(measured)
        traced_n = len(traced_batches) - len(traced_batches) // 5
        return {"commands_per_batch": k, "batches": n, "cpu_us_per_batch": round(1e6 * cpu / n),
                "wall_us_per_batch": round(1e6 * wall / n),
                "round_trips_per_batch": round(trips / traced_n, 2),
                "statements_per_batch": round(statements / traced_n, 2)}
    finally:
        app.close()
        os.unlink(trace_path)
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _spin() -> None:
    while True:
        [i * i for i in range(1000)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--k", default="1,5,20", help="commands per batch, comma-separated")
    p.add_argument("--commands", type=int, default=3000, help="commands per run (a fifth warms up)")
    p.add_argument("--repeats", type=int, default=1, help="runs per k; > 1 also prints the medians")
    p.add_argument("--busy", type=int, default=0, metavar="N", help="N processes spinning on the CPU meanwhile")
    args = p.parse_args()
    import multiprocessing

    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    try:
        return _measure(args)
    finally:
        for spinner in spinners:
            spinner.terminate()


def _measure(args: argparse.Namespace) -> int:
    for k in (int(x) for x in args.k.split(",")):
        rows = [run(k, args.commands) for _ in range(args.repeats)]
        for row in rows:
            print(json.dumps(row if args.repeats == 1 else {"run": True, **row}), flush=True)
        if args.repeats > 1:
            print(json.dumps({key: statistics.median(r[key] for r in rows) for key in rows[0]}), flush=True)
    print(json.dumps({"load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

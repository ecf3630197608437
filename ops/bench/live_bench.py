"""Live service benchmark: open-loop load against `ledger serve` on PostgreSQL, group commit
vs one command per transaction (the same server with --max-batch 1), in the same run;
then JetStream end to end with 1 and 2 consumer processes.

The client is a minimal HTTP/1.1 keep-alive client of its own: httpx's asyncio client
measured 5-6x slower than the server's /healthz on this machine, so it hid the server.

Open loop: command i of the feed is due at start + i / rate, whatever the answers before
it. Each of the 50 tables sends its own commands in feed order, one at a time (a table's
next command waits for the previous answer, as a game server would), over many client
connections. Latency is measured from the command's due time, or from its send if the
client's timer sent it earlier (so a server that falls behind is charged for the queue,
not only for the service time, including the wait of a table's next command for the
answer to its previous one).

    python -m ops.bench.live_bench                      # rates 250..4000/s, 4 s per step
    python -m ops.bench.live_bench --rates 250,500,1000,1500,2000 --seconds 5 --repeats 3 --jetstream-commands 5000
    python -m ops.bench.live_bench --rates 1000 --modes group --trace   # where the latency goes
    python -m ops.bench.live_bench --rates 1000 --modes bare,group --repeats 3 --jetstream-commands 0  # CPU beside the floor
    python -m ops.bench.live_bench --rates 1000 --seconds 5 --workers 2
    python -m ops.bench.live_bench --modes group --workers 1,2 --rates 1000,1500,2000,2500,3000 --repeats 3 --jetstream-commands 0
    python -m ops.bench.live_bench --skip-http --jetstream-commands 20000
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from typing import Any

PG_URL = os.environ.get("LEDGER_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
TABLES = 50
TIMER_SLACK_S = 0.0005
WRITER_THREAD = "group-commit"  # the writer thread's name in /proc (ops/service/committer.py names it)


def fresh_schema_url() -> str:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_URL.split("?")[0], autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return f"{PG_URL}?schema={schema}"


def drop_schema(url: str) -> None:
    import psycopg

    with psycopg.connect(PG_URL.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{url.rsplit("=", 1)[1]}" CASCADE')


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def feed(commands: int, tag: str, tables: int = TABLES) -> list[bytes]:
    """At least `commands` clean commands of `tables` tables (50), table and command ids tagged (each step its own rounds)."""
    from ops.sim.simulator import simulate

    rounds = 1
    while True:
        lines = [x.rstrip(b"\n") for x in simulate(tables, rounds, seed=11)]
        if len(lines) >= commands:
            break
        rounds = rounds * 2
    out = []
    for line in lines[:commands]:
        data = json.loads(line)
        data["table_id"] += f"-{tag}"
        data["command_id"] = f"{tag}/{data['command_id']}"
        out.append(json.dumps(data).encode())
    return out


class Conn:
    """A minimal HTTP/1.1 keep-alive client connection (the bench's own: httpx costs more CPU than the server)."""
    def __init__(self, host: str, port: int, headers: str) -> None:
        self.host, self.port, self.headers = host, port, headers
        self._heads: dict[tuple[str, str, str], bytes] = {}
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"",
                      content_type: str = "application/x-ndjson") -> tuple[int, bytes]:
        if self.writer is None or self.reader is None:
            await self.connect()
        assert self.reader is not None and self.writer is not None
        head = self._heads.get((method, path, content_type))
        if head is None:  # the request line and headers but the length, encoded once (the client shares the cores)
            head = self._heads[(method, path, content_type)] = (
                f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: {content_type}\r\n"
                f"{self.headers}Content-Length: ").encode()
        self.writer.write(b"%b%d\r\n\r\n%b" % (head, len(body), body))
        # the status line and headers in one read; only the status and Content-Length are used
        lines = (await self.reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v)
        data = await self.reader.readexactly(length)
        return status, data


class Server:
    """`ledger serve` (one command per transaction with max_batch 1), or with max_batch 0 the
    bare ASGI app on the same uvicorn (ops/bench/bare_asgi.py: the floor of a request)."""

    def __init__(self, url: str, port: int, workers: int, max_batch: int, trace_dir: str | None = None) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.bare = max_batch == 0
        if self.bare:
            self.key = "bare"
            self.proc = subprocess.Popen([sys.executable, "-m", "ops.bench.bare_asgi", "--port", str(port)],
                                         stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            return
        from ledger.keys import key_store
        from ledger.store import open_app

        app = open_app(url)
        try:
            self.key = key_store(app).add("studio", name=f"bench-{uuid.uuid4().hex[:6]}")[0]
        finally:
            app.close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ops.cli", "serve", "--db", url, "--port", str(port), "--workers", str(workers),
             "--max-batch", str(max_batch), "--log-level", "warning"],
            stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env={**os.environ, **({"LEDGER_SERVE_TRACE_DIR": trace_dir} if trace_dir else {})})

    def wait_ready(self) -> None:
        import httpx

        for _ in range(600):
            try:
                if httpx.get(self.base + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("ledger serve did not become ready")

    def batches(self) -> dict[str, float]:
        """Mean commit time and commands per transaction so far (from /metrics; none for the bare app)."""
        import urllib.request

        if self.bare:
            return {}
        text = urllib.request.urlopen(self.base + "/metrics", timeout=10).read().decode()
        got = {k: 0.0 for k in ("ledger_batch_commit_seconds_sum", "ledger_batch_commit_seconds_count",
                                "ledger_batch_commands_sum")}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name in got:
                got[name] = float(value)
        n = got["ledger_batch_commit_seconds_count"] or 1.0
        return {"transactions": int(n), "commit_ms_mean": round(1000 * got["ledger_batch_commit_seconds_sum"] / n, 2),
                "commands_per_transaction": round(got["ledger_batch_commands_sum"] / n, 1)}

    def cpu_s(self) -> dict[str, float]:
        """CPU seconds used so far by the server's processes: their event-loop (main) threads, their
        group-commit writers (the thread named `group-commit`, ops/service/committer.py), and every
        other thread (the store-health probe, the key cache, connection pools). Linux /proc; {} elsewhere."""
        tick = os.sysconf("SC_CLK_TCK")
        got = {"loop": 0.0, "writer": 0.0, "other_threads": 0.0}
        pids, seen = [self.proc.pid], set()
        try:
            while pids:
                pid = pids.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        head, _, tail = f.read().rpartition(")")
                    name, fields = head.partition("(")[2], tail.split()
                    part = "loop" if int(tid) == pid else "writer" if name == WRITER_THREAD else "other_threads"
                    got[part] += (int(fields[11]) + int(fields[12])) / tick
                    with open(f"/proc/{pid}/task/{tid}/children") as f:
                        pids.extend(int(c) for c in f.read().split())
        except OSError:
            return {}
        return got

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


async def open_loop(base: str, key: str, lines: list[bytes], rate: float,
                    timings: list[tuple[int, float, float, float]] | None = None) -> dict[str, Any]:
    """One step of load. `timings`, when given, gets (feed index, due, sent, answered) per command."""
    by_table: dict[str, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        by_table[json.loads(line)["table_id"]].append(i)
    latencies: list[float] = []
    errors = 0
    port = int(base.rsplit(":", 1)[1])
    conns = [Conn("127.0.0.1", port, f"Authorization: Bearer {key}\r\n") for _ in by_table]
    for conn in conns:  # a game server is connected before its table's first command
        await conn.connect()
    start = time.perf_counter() + 0.2

    async def table(conn: Conn, indexes: list[int]) -> None:  # one connection per table (a game server's own)
        nonlocal errors
        for i in indexes:
            due = start + i / rate
            # The event loop wakes on whole milliseconds after a timer is due (epoll's
            # resolution): aiming half a millisecond early makes the send time err by at most
            # +-0.5 ms instead of always late by 0-1 ms; a command sent early is timed from its
            # send (below), so being early never shortens a latency.
            delay = due - TIMER_SLACK_S - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.perf_counter()
            status, body = await conn.request("POST", "/v1/commands", lines[i])
            answered = time.perf_counter()
            if status != 200 or json.loads(body)[0]["status"] != "accepted":
                errors += 1
            latencies.append(answered - min(due, sent))
            if timings is not None:
                timings.append((i, due, sent, answered))

    await asyncio.gather(*(table(conn, ix) for conn, ix in zip(conns, by_table.values())))
    for conn in conns:
        conn.close()
    elapsed = time.perf_counter() - start
    latencies.sort()

    def q(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {"offered_per_s": rate, "acked_per_s": round(len(latencies) / elapsed), "errors": errors,
            "p50_ms": round(q(0.50), 2), "p99_ms": round(q(0.99), 2), "p999_ms": round(q(0.999), 2)}


MODES = {"group": ("group commit", 500), "single": ("one command per transaction", 1),
         "bare": ("bare ASGI app", 0)}  # max_batch 0: ops/bench/bare_asgi.py, the floor of a request
_MODE_KEYS = {label: key for key, (label, _) in MODES.items()}  # --json names a step by its mode's key


def http_steps(rates: list[float], seconds: float, workers: list[int], trace: bool = False,
               modes: tuple[tuple[str, int], ...] = tuple(MODES.values()), warmup_s: float = 1.0,
               repeats: int = 1, report: dict[str, Any] | None = None) -> None:
    """Every rate, each mode and number of workers, `repeats` times, interleaved (every
    configuration sees the same machine load); with repeats > 1 each run's row and then the
    median of the runs. Several worker counts: the best rates' ratio to one worker's.
    With `report` (--json), each step's row goes into it, keyed MODE_RATE[_wN], and nothing is printed."""
    best: dict[str, float] = {}
    show = print if report is None else (lambda *a, **k: None)
    for rate in rates:
        runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for _ in range(repeats):
            for name, max_batch in modes:
                for n in workers:
                    row = http_step(rate, seconds, n, name, max_batch, trace, warmup_s)
                    runs[name if len(workers) == 1 else f"{name}/workers={n}"].append(row)
                    show(json.dumps(row if repeats == 1 else {"run": True, **row}), flush=True)
                    if report is not None:
                        key = f"{_MODE_KEYS[name]}_{int(rate)}" + ("" if len(workers) == 1 else f"_w{n}")
                        report.setdefault(key, []).append(row)
        for name, rows in runs.items():
            row = rows[0] if repeats == 1 else median_row(rows)
            if repeats > 1:
                show(json.dumps(row), flush=True)
            if row["p99_ms"] <= 50 and row["errors"] == 0 and row["acked_per_s"] >= 0.9 * rate:
                best[name] = max(best.get(name, 0), rate)
    if report is not None:
        for key, rows in report.items():
            row = rows[0] if len(rows) == 1 else median_row(rows)
            cpu = row.get("cpu_us_per_command", {})
            report[key] = {**row, "server_cpu_us_per_command": sum(v for k, v in cpu.items() if k != "client")}
        return
    print(json.dumps({"highest_rate_with_p99_le_50ms": best}), flush=True)
    for name, _ in modes:
        one = best.get(f"{name}/workers=1")
        if not one:
            continue
        for n in workers[1:]:
            print(json.dumps({"mode": name, f"workers={n}_over_workers=1": round(best.get(f"{name}/workers={n}", 0) / one, 2)}),
                  flush=True)


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the runs (each figure on its own)."""
    from statistics import median

    out: dict[str, Any] = {k: v for k, v in rows[0].items() if isinstance(v, str)}
    out["runs"] = len(rows)
    for k, v in rows[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = round(median(r[k] for r in rows), 2)
        elif isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values()):
            out[k] = {kk: round(median(r[k][kk] for r in rows), 2) for kk in v}
    out["median_of_runs"] = True
    return out


def http_step(rate: float, seconds: float, workers: int, name: str, max_batch: int, trace: bool,
              warmup_s: float) -> dict[str, Any]:
    url = fresh_schema_url()
    trace_dir = tempfile.mkdtemp(prefix="live-bench-trace-") if trace else None
    server = Server(url, free_port(), workers, max_batch, trace_dir)
    timings: list[tuple[int, float, float, float]] | None = [] if trace else None
    try:
        server.wait_ready()
        if warmup_s > 0:  # a live server is warm: code paths, key cache, prepared statements
            warm_rate = min(rate, 250.0)
            asyncio.run(open_loop(server.base, server.key, feed(int(warm_rate * warmup_s), "warm"), warm_rate))
        lines = feed(int(rate * seconds), f"r{int(rate)}")
        cpu_before, client_before = server.cpu_s(), time.process_time()
        row = asyncio.run(open_loop(server.base, server.key, lines, rate, timings))
        cpu_after, client_cpu_s = server.cpu_s(), time.process_time() - client_before
        row.update(server.batches())
        # CPU time per command (robust on a shared machine, unlike the latencies)
        row["cpu_us_per_command"] = {**{k: round(1e6 * (cpu_after[k] - cpu_before[k]) / len(lines))
                                        for k in cpu_after},
                                     "client": round(1e6 * client_cpu_s / len(lines))}
    finally:
        server.stop()
        drop_schema(url)
    row = {"mode": name, "workers": workers, **row, "load_avg_1m": round(os.getloadavg()[0], 2)}
    if trace_dir is not None and timings is not None:
        from ops.bench.live_trace import breakdown

        parsed = [json.loads(line) for line in lines]
        row["trace"] = breakdown(timings, [d["command_id"] for d in parsed], [d["table_id"] for d in parsed],
                                 trace_dir)
        shutil.rmtree(trace_dir, ignore_errors=True)
    return row


def jetstream(commands: int) -> None:
    from ops.jetstream.intake import publish

    for consumers in (1, 2):
        url = fresh_schema_url()
        stream, prefix = f"BENCH_{uuid.uuid4().hex[:8]}", f"bench{uuid.uuid4().hex[:8]}"
        lines = feed(commands, f"js{consumers}")
        try:
            asyncio.run(publish(lines, stream=stream, prefix=prefix))
            from ledger.store import open_app

            open_app(url).close()  # tables made before the consumers start together
            started = time.perf_counter()
            procs = [subprocess.Popen([sys.executable, "-m", "ops.cli", "consume", "--db", url, "--stream", stream,
                                       "--subject-prefix", prefix, "--partitions", str(consumers), "--partition",
                                       str(i), "--idle-exit", "--batch", "500"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                     for i in range(consumers)]
            for p in procs:
                p.communicate(timeout=600)
            elapsed = time.perf_counter() - started
            print(json.dumps({"jetstream_consumers": consumers, "commands": len(lines),
                              "commands_per_s": round(len(lines) / elapsed),
                              "note": "includes process start and the idle check at the end"}), flush=True)
        finally:
            asyncio.run(_delete_stream(stream))
            drop_schema(url)


async def _delete_stream(stream: str) -> None:
    import nats

    nc = await nats.connect("nats://127.0.0.1:4222")
    try:
        await nc.jetstream().delete_stream(stream)
    finally:
        await nc.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rates", default="250,500,1000,2000,3000,4000", help="offered commands/s, comma-separated")
    p.add_argument("--seconds", type=float, default=4.0, help="load per step")
    p.add_argument("--workers", default="1", help="ledger serve --workers; several (1,2) are interleaved and compared")
    p.add_argument("--warmup-s", type=float, default=1.0,
                   help="unmeasured load (other tables, at most 250/s) before each step; 0: none")
    p.add_argument("--repeats", type=int, default=1,
                   help="runs of each step (interleaved); > 1 also prints each step's medians, which decide")
    p.add_argument("--skip-http", action="store_true")
    p.add_argument("--modes", default="group,single",
                   help="group (group commit), single (one command per transaction), bare (a bare ASGI app on the "
                        "same uvicorn: the floor of a request, run in turn with the others); default group,single")
    p.add_argument("--trace", action="store_true",
                   help="per-request server timestamps and GC passes: print where each step's latency goes")
    p.add_argument("--jetstream-commands", type=int, default=10_000, help="0 skips the JetStream part")
    p.add_argument("--json", action="store_true",
                   help="only the HTTP steps' rows as one JSON object, keyed MODE_RATE (for ops.bench.compare: "
                        "--figure group_1000.p99_ms, group_1000.server_cpu_us_per_command); no JetStream part")
    args = p.parse_args()
    report: dict[str, Any] | None = {} if args.json else None
    if not args.skip_http:
        http_steps([float(r) for r in args.rates.split(",")], args.seconds, [int(n) for n in args.workers.split(",")], args.trace,
                   tuple(MODES[m] for m in args.modes.split(",")), args.warmup_s,
                   args.repeats, report)
    if report is not None:
        print(json.dumps(report), flush=True)
        return 0
    if args.jetstream_commands:
        jetstream(args.jetstream_commands)
    return 0


if __name__ == "__main__":
    sys.exit(main())

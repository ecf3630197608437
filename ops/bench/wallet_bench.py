"""Wallet delivery (docs/wallet.md), each part a process of its own: the wallet (a minimal
stdlib server answering in `--wallet-ms`: signature checked, idempotent by transaction id), the
feed's ingest, and the deliverer (`ledger wallet deliver`, as operators run it).

1. Rate: one deliverer against the wallet, beside a bare HTTP client posting the same signed
   requests to a fresh wallet of the same kind with the same concurrency (the physical limit),
   interleaved, medians of `--runs` (`--runs 0`: skipped).
2. Lag: a feed stored at `--bets-per-s` settled bets a second for `--seconds` by its own process
   (a batch every 50 ms, as many bets as are due), while `ledger wallet deliver` runs; each
   payout's lag = its call answered - its event stored. Printed: the rate the ingest reached,
   and the payouts' lag p50 / p99.

    python -m ops.bench.wallet_bench                                  # temp SQLite files
    python -m ops.bench.wallet_bench --runs 0 --bets-per-s 1000 --seconds 10 --json
    python -m ops.bench.wallet_bench --db postgresql://postgres@127.0.0.1:5432/postgres --runs 3
    python -m ops.bench.wallet_bench --batch-max 50 --runs 3 --bets-per-s 1000   # batched calls

With `--batch-max N` (N > 1) the deliverer posts batches (docs/wallet.md, "Batches") and the
bare client posts the same transactions in batches of the same sizes the deliverer made, signed
alike: the rate compares transactions a second. The wallet answers a batch in `--wallet-ms`
(one round trip), applying its items in order.

Goals (issue 31): the deliverer >= 50% of the bare client's rate; lag p99 <= 1 s at 1,000
settled bets/s. The machine's load average is printed with the figures: on a loaded machine
neither the ingest nor the wallet reaches the asked rate, and the lag says so.
"""
from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from domain.errors import require
from domain.operators import DEFAULT_OPERATOR_ID
from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.bench.fault_trials import admin, schema_url
from ops.bench.wallet_trials import forks, ledger_process
from ops.sim.simulator import simulate
from ops.wallet.client import batch_body, sign
from ops.wallet.config import BATCH_MAX_LIMIT, OperatorWallet
from ops.wallet.deliverer import Deliverer
from projections.sql import Db
from projections.wallet_outbox import Outbox

SECRET = b"bench-secret"
SECRET_ENV = "LEDGER_WALLET_SECRET_BENCH"
RATE_GOAL, LAG_P99_GOAL_S = 0.5, 1.0
TICK_S = 0.05  # the paced ingest stores a batch this often
CATCH_UP_MAX_S = 300.0  # after the feed: delivery done within this, else the lag is of what was done


def wallet_server(answer_ms: float) -> ThreadingHTTPServer:
    seen: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def applied(tx: str) -> dict[str, Any]:
        with lock:
            return seen.setdefault(tx, {"status": "ok", "transaction_id": tx})

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body go out as two writes: with Nagle's algorithm on, the body
        # waits for the client's delayed ACK of the headers (40 ms on Linux), not `answer_ms`.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            good = hmac.compare_digest(self.headers.get("X-Ledger-Signature") or "",
                                       "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest())
            body = json.loads(raw)
            time.sleep(answer_ms / 1000)
            if self.path.endswith("/batch"):
                answer: Any = {"results": [{"http_status": 200, **applied(i["transaction_id"])}
                                           for i in body["transactions"]]}
            else:
                answer = applied(body["transaction_id"])
            data = json.dumps(answer).encode()
            self.send_response(200 if good else 401)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = _Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    return server


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # its listen backlog (5 by default: 16 clients connecting at once were reset)


def _serve_wallet(answer_ms: float, port_to: Any) -> None:
    server = wallet_server(answer_ms)
    port_to.send(server.server_address[1])
    server.serve_forever()


@contextmanager
def wallet_process(answer_ms: float) -> Iterator[int]:
    """A wallet in a process of its own; yields its port."""
    ctx = forks()
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_serve_wallet, args=(answer_ms, theirs), daemon=True)
    proc.start()
    try:
        if not ours.poll(60):
            raise RuntimeError("the wallet process did not start")
        yield int(ours.recv())
    finally:
        proc.kill()
        proc.join(10)


def wallet_for(port: int, concurrency: int, batch_max: int = 1) -> OperatorWallet:
    return OperatorWallet(DEFAULT_OPERATOR_ID, SECRET_ENV, f"http://127.0.0.1:{port}/wallet",
                          concurrency=concurrency, batch_max=batch_max, timeout_s=10.0, secret=SECRET)


def filled_store(url: str, tables: int, rounds: int, seed: int) -> str:
    app = open_app(url)
    try:
        app.ingest(simulate(tables, rounds, seed, 0), batch_size=2000)
    finally:
        app.close()
    return url


def deliverer_rate(url: str, wallet: OperatorWallet) -> tuple[int, float, list[tuple[str, str, str]], list[int]]:
    """Transactions sent by one deliverer delivering the whole store, in how long; the requests
    it made; the sizes of its batches (empty: not batched)."""
    deliverer = Deliverer(url, {DEFAULT_OPERATOR_ID: wallet})
    started = time.perf_counter()
    try:
        result = deliverer.run(until_idle=True)
    finally:
        deliverer.close()
    elapsed = time.perf_counter() - started
    db = Db.for_store(EventLog.open(url).backend)
    try:
        requests = [(kind, tx, body) for kind, tx, body in db.query("SELECT kind, tx_id, body FROM wallet_tx "
                                                                    "WHERE status <> 'notice_off' ORDER BY seq")]
    finally:
        db.close()
    sizes = [size for size, n in sorted(result.batch_sizes.items()) for _ in range(n)]
    return result.transactions, elapsed, requests, sizes


def bare_rate(wallet: OperatorWallet, requests: list[tuple[str, str, str]], sizes: list[int] | None = None
              ) -> tuple[int, float]:
    """The same signed requests by a bare client: `concurrency` threads, a kept-alive
    connection each, no store (`sizes`: batched, in batches of these sizes, as the deliverer's).
    Returns the transactions posted, and in how long."""
    local = threading.local()
    host, port = "127.0.0.1", int(wallet.url.split(":")[2].split("/")[0])

    def post(request: tuple[str, str]) -> None:
        kind, body = request
        data = body.encode()
        headers = {"Content-Type": "application/json", "X-Ledger-Signature": sign(data, wallet.secret)}
        for _attempt in range(5):  # a reset connection is posted again, as the deliverer would
            conn = getattr(local, "conn", None) or http.client.HTTPConnection(host, port, timeout=10)
            local.conn = conn
            try:
                conn.request("POST", f"/wallet/{kind}", data, headers)
                conn.getresponse().read()
                return
            except (OSError, http.client.HTTPException):
                conn.close()
                local.conn = None
        raise RuntimeError("the bare client's wallet did not answer 5 times in a row")

    calls = [(kind, body) for kind, _tx, body in requests]
    if sizes:
        calls, at = [], 0
        for size in sizes:
            calls.append(("batch", batch_body(requests[at:at + size])))
            at += size
        require(at == len(requests), f"the batches hold {at} transactions, not {len(requests)}")
    started = time.perf_counter()
    with ThreadPoolExecutor(wallet.concurrency) as pool:
        list(pool.map(post, calls))
    return len(requests), time.perf_counter() - started


def _paced_ingest(url: str, lines: list[bytes], bets_per_s: int, seconds: float, report: Any) -> None:
    """Stores `lines` as fast as `bets_per_s` bets a second allow, a batch every TICK_S, for
    `seconds`; reports (bets stored, seconds taken)."""
    due_at, bets = [], 0  # due_at[i]: the second line i is due (when its bet's turn comes)
    for line in lines:
        bets += b'"place_bet"' in line
        due_at.append(bets / bets_per_s)
    app = open_app(url)
    try:
        report.send("ready")
        started, sent = time.perf_counter(), 0
        while sent < len(lines) and time.perf_counter() - started < seconds:
            now = time.perf_counter() - started
            upto = sent
            while upto < len(lines) and due_at[upto] <= now:
                upto += 1
            if upto > sent:
                app.ingest(lines[sent:upto], batch_size=upto - sent)
                sent = upto
            time.sleep(max(0.0, TICK_S - (time.perf_counter() - started - now)))
        elapsed = time.perf_counter() - started
    finally:
        app.close()
    report.send((sum(1 for line in lines[:sent] if b'"place_bet"' in line), elapsed))


def lag_run(url: str, folder: Path, port: int, concurrency: int, bets_per_s: int, seconds: float,
            seed: int, batch_max: int = 1) -> dict[str, Any]:
    """The feed stored at `bets_per_s` by its own process while `ledger wallet deliver` runs in
    another; then each payout's lag."""
    tables = max(10, bets_per_s // 50)
    lines = list(simulate(tables, max(20, int(bets_per_s * seconds * 1.5) // (tables * 4) + 1), seed, 0))
    open_app(url).close()  # the tables made before the two processes meet
    config = folder / "wallet.toml"
    config.write_text(f'[operators.{DEFAULT_OPERATOR_ID}]\nurl = "http://127.0.0.1:{port}/wallet"\n'
                      f'secret_env = "{SECRET_ENV}"\nconcurrency = {concurrency}\ntimeout_s = 10.0\n'
                      f"batch_max = {batch_max}\n")
    deliverer = ledger_process(["wallet", "deliver", "--db", url, "--config", str(config)],
                               {SECRET_ENV: SECRET.decode()}, folder / "deliverer.err")
    _deliverer_ready(url, deliverer, time.monotonic() + 120)
    ctx = forks()
    ours, theirs = ctx.Pipe()
    ingest = ctx.Process(target=_paced_ingest, args=(url, lines, bets_per_s, seconds, theirs), daemon=True)
    ingest.start()
    try:
        if not ours.poll(120) or ours.recv() != "ready":
            raise RuntimeError("the ingest process did not start")
        if not ours.poll(seconds + CATCH_UP_MAX_S):
            raise RuntimeError("the ingest process did not end")
        stored_bets, elapsed = ours.recv()
        caught_up = _caught_up(url, time.monotonic() + CATCH_UP_MAX_S)
    finally:
        deliverer.terminate()
        deliverer.join(60)
        ingest.join(10)
    return {"bets_per_s_asked": bets_per_s, "settled_bets_per_s": round(stored_bets / elapsed),
            "caught_up": caught_up, **_lags(url)}


def _deliverer_ready(url: str, proc: Any, deadline: float) -> None:
    """Until the deliverer process has opened the store and made its tables (a store's tables
    are the only sign of it here): the feed's first payouts do not wait for its start."""
    db = Db.for_store(EventLog.open(url).backend)
    try:
        while True:
            try:
                if db.query("SELECT 1 FROM wallet_tracking"):
                    return
            except Exception:  # not made yet (autocommit: nothing to roll back)
                pass
            if not proc.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the deliverer did not start")
            time.sleep(0.05)
    finally:
        db.close()


def _caught_up(url: str, deadline: float) -> bool:
    """Until every stored event is derived and every transaction has its answer."""
    log = EventLog.open(url)
    outbox = Outbox(Db.for_store(log.backend))
    try:
        while outbox.open_txs(1) or outbox.position() < log.head():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True
    finally:
        outbox.db.close()
        log.close()


def _lags(url: str) -> dict[str, Any]:
    log = EventLog.open(url)
    try:
        stored = {r.position: r.timestamp.timestamp() * 1000 for r in log.records()}
        db = Db.for_store(log.backend)
        try:
            rows = db.query("SELECT body, done_ms FROM wallet_tx WHERE kind='credit' AND status='delivered'")
        finally:
            db.close()
    finally:
        log.close()
    lags = sorted((done - stored[json.loads(body)["event_position"]]) / 1000 for body, done in rows)
    return {"payouts": len(lags), "lag_p50_s": round(lags[len(lags) // 2], 3) if lags else None,
            "lag_p99_s": round(lags[int(len(lags) * 0.99)], 3) if lags else None}


@contextmanager
def stores(db: str | None, folder: Path) -> Iterator[Any]:
    """`fresh(name)`: an empty store's URL (a SQLite file in `folder`, or a PostgreSQL schema of
    `db`, every one dropped at the end)."""
    schemas: list[str] = []

    def fresh(name: str) -> str:
        if db is None:
            return f"sqlite:///{folder / (name + '.db')}"
        schemas.append(f"wallet_bench_{uuid.uuid4().hex[:10]}")
        with admin(db) as conn:
            conn.execute(f'CREATE SCHEMA "{schemas[-1]}"')
        return schema_url(db, schemas[-1])

    try:
        yield fresh
    finally:
        if schemas:
            with admin(db or "") as conn:
                for schema in schemas:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def rates(fresh: Any, args: argparse.Namespace, port: int) -> dict[str, Any]:
    ratios, ours, bare, per_call = [], [], [], []
    wallet = wallet_for(port, args.concurrency, args.batch_max)
    for run in range(args.runs):
        url = filled_store(fresh(f"rate-{run}"), args.tables, args.rounds, args.seed + run)
        sent, elapsed, requests, sizes = deliverer_rate(url, wallet)
        with wallet_process(args.wallet_ms) as bare_port:
            n, bare_s = bare_rate(wallet_for(bare_port, args.concurrency), requests, sizes)
        ours.append(sent / elapsed)
        per_call.append(sent / max(1, len(sizes)) if sizes else 1.0)
        bare.append(n / bare_s)
        ratios.append(ours[-1] / bare[-1])
    if not ratios:
        return {}
    return {"runs": args.runs, "deliverer_tx_per_s": round(statistics.median(ours)),
            "bare_tx_per_s": round(statistics.median(bare)), "ratio_median": round(statistics.median(ratios), 3),
            "ratio_goal": RATE_GOAL, "tx_per_call_median": round(statistics.median(per_call), 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ops.bench.wallet_bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", default=None, help="a PostgreSQL server (a schema per store, dropped after); "
                                             "default: SQLite files in a temporary folder")
    p.add_argument("--tables", type=int, default=6, help="the rate runs' day")
    p.add_argument("--rounds", type=int, default=40, help="the rate runs' day")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runs", type=int, default=3, help="rate runs (0: the lag only)")
    p.add_argument("--wallet-ms", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--batch-max", type=int, default=1, help="> 1: batched calls of up to this many transactions")
    p.add_argument("--bets-per-s", type=int, default=1000)
    p.add_argument("--seconds", "--lag-seconds", type=float, default=10.0, help="how long the feed is stored")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.runs < 0 or args.bets_per_s < 1 or args.seconds <= 0 or not 1 <= args.concurrency <= 64 \
            or not 1 <= args.batch_max <= BATCH_MAX_LIMIT:
        print(f"wallet_bench: --runs >= 0, --bets-per-s >= 1, --seconds > 0, --concurrency 1..64, "
              f"--batch-max 1..{BATCH_MAX_LIMIT}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="wallet-bench-") as tmp, stores(args.db, Path(tmp)) as fresh, \
            wallet_process(args.wallet_ms) as port:
        out: dict[str, Any] = {"store": "postgresql" if args.db else "sqlite", "wallet_ms": args.wallet_ms,
                               "concurrency": args.concurrency, "batch_max": args.batch_max,
                               **rates(fresh, args, port)}
        out |= lag_run(fresh("lag"), Path(tmp), port, args.concurrency, args.bets_per_s, args.seconds, args.seed,
                       args.batch_max)
    out |= {"lag_p99_goal_s": LAG_P99_GOAL_S, "cpus": os.cpu_count(),
            "load_average_before": [round(x, 1) for x in load_before],
            "load_average_after": [round(x, 1) for x in os.getloadavg()]}
    print(json.dumps(out, indent=2) if args.json else human(out))
    return 0


def human(out: dict[str, Any]) -> str:
    lines = []
    if "ratio_median" in out:
        lines.append(f"rate: deliverer {out['deliverer_tx_per_s']} transactions/s, bare client {out['bare_tx_per_s']} "
                     f"transactions/s: ratio {out['ratio_median']} (goal >= {RATE_GOAL}; median of {out['runs']}; "
                     f"{out['tx_per_call_median']} transactions per call)")
    lines.append(f"lag: {out['settled_bets_per_s']} settled bets/s reached of {out['bets_per_s_asked']} asked; "
                 f"{out['payouts']} payouts, lag p50 {out['lag_p50_s']} s, p99 {out['lag_p99_s']} s "
                 f"(goal <= {LAG_P99_GOAL_S} s){'' if out['caught_up'] else '; delivery had NOT caught up'}")
    lines.append(f"{out['store']}, wallet answering in {out['wallet_ms']} ms, concurrency {out['concurrency']}, "
                 f"batch_max {out['batch_max']}; "
                 f"{out['cpus']} cpus, load average {out['load_average_before']} before, "
                 f"{out['load_average_after']} after")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

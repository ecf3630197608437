"""Wallet delivery (docs/wallet.md): one deliverer process against a wallet answering in
5 ms, beside a bare HTTP client posting the same signed requests to the same wallet with the
same concurrency (the physical limit), interleaved, medians of `--runs`; and the delivery lag
(an event stored to its wallet call answered) while a feed is stored at a paced rate of
settled bets.

    python -m ops.bench.wallet_bench                          # temp SQLite files
    python -m ops.bench.wallet_bench --db-dir /tmp/x --runs 5 --bets-per-s 1000

Goals (issue 31): the deliverer >= 50% of the bare client's rate; lag p99 <= 1 s at 1,000
settled bets/s. The wallet here is a minimal stdlib server (signature checked, idempotent by
transaction id, `--wallet-ms` per answer) in this process; the deliverer runs in this process
too, its calls on its own threads.
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
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from domain.operators import DEFAULT_OPERATOR_ID
from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.sim.simulator import simulate
from ops.wallet.client import sign
from ops.wallet.config import OperatorWallet
from ops.wallet.deliverer import Deliverer
from projections.sql import Db

SECRET = b"bench-secret"
RATE_GOAL, LAG_P99_GOAL_S = 0.5, 1.0


def wallet_server(answer_ms: float) -> ThreadingHTTPServer:
    seen: dict[str, bytes] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            good = hmac.compare_digest(self.headers.get("X-Ledger-Signature") or "",
                                       "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest())
            tx = json.loads(raw)["transaction_id"]
            time.sleep(answer_ms / 1000)
            with lock:
                data = seen.setdefault(tx, json.dumps({"status": "ok", "transaction_id": tx}).encode())
            self.send_response(200 if good else 401)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def wallet_for(server: ThreadingHTTPServer, concurrency: int) -> OperatorWallet:
    return OperatorWallet(DEFAULT_OPERATOR_ID, "-", f"http://127.0.0.1:{server.server_address[1]}/wallet",
                          concurrency=concurrency, timeout_s=10.0, secret=SECRET)


def filled_store(path: Path, tables: int, rounds: int, seed: int) -> str:
    url = f"sqlite:///{path}"
    app = open_app(url)
    try:
        app.ingest(simulate(tables, rounds, seed, 0), batch_size=2000)
    finally:
        app.close()
    return url


def deliverer_rate(url: str, wallet: OperatorWallet) -> tuple[int, float, list[tuple[str, str, str]]]:
    """Calls per second of one deliverer delivering the whole store; the requests it made."""
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
    return result.calls, elapsed, requests


def bare_rate(wallet: OperatorWallet, requests: list[tuple[str, str, str]]) -> tuple[int, float]:
    """The same signed requests by a bare client: `concurrency` threads, a kept-alive
    connection each, no store."""
    local = threading.local()
    host, port = "127.0.0.1", int(wallet.url.split(":")[2].split("/")[0])

    def post(request: tuple[str, str, str]) -> None:
        kind, _tx, body = request
        conn = getattr(local, "conn", None) or http.client.HTTPConnection(host, port, timeout=10)
        local.conn = conn
        data = body.encode()
        conn.request("POST", f"/wallet/{kind}", data, {"Content-Type": "application/json",
                                                       "X-Ledger-Signature": sign(data, wallet.secret)})
        conn.getresponse().read()

    started = time.perf_counter()
    with ThreadPoolExecutor(wallet.concurrency) as pool:
        list(pool.map(post, requests))
    return len(requests), time.perf_counter() - started


def lag_run(path: Path, wallet: OperatorWallet, bets_per_s: int, seconds: float, seed: int) -> dict[str, float]:
    """A feed stored at `bets_per_s` settled bets a second while the deliverer runs; each
    payout's lag = its call answered - its event stored (the event's own timestamp)."""
    lines = list(simulate(10, 400, seed, 0))
    bets = sum(1 for line in lines if b'"place_bet"' in line)
    per_line_s = seconds / max(1, int(len(lines) * min(1.0, bets_per_s * seconds / bets)))
    url = f"sqlite:///{path}"
    app = open_app(url)
    stop = threading.Event()
    deliverer = Deliverer(url, {DEFAULT_OPERATOR_ID: wallet})
    runner = threading.Thread(target=deliverer.run, kwargs={"stop": stop}, daemon=True)
    runner.start()
    started, sent = time.perf_counter(), 0
    try:
        chunk = max(1, int(0.05 / per_line_s))  # a batch every 50 ms
        while sent < len(lines) and time.perf_counter() - started < seconds:
            app.ingest(lines[sent:sent + chunk], batch_size=chunk)
            sent += chunk
            time.sleep(max(0.0, started + sent * per_line_s - time.perf_counter()))
        stored_bets = sum(1 for line in lines[:sent] if b'"place_bet"' in line)
        rate = stored_bets / (time.perf_counter() - started)
        deadline = time.monotonic() + 120
        while deliverer.outbox.open_txs(1) or deliverer.outbox.position() < EventLog(app).head():
            assert time.monotonic() < deadline, "delivery did not catch up"
            time.sleep(0.1)
    finally:
        stop.set()
        runner.join(30)
        deliverer.close()
    stored = {r.position: r.timestamp.timestamp() * 1000 for r in EventLog(app).records()}
    app.close()
    db = Db.for_store(EventLog.open(url).backend)
    try:
        rows = db.query("SELECT body, done_ms FROM wallet_tx WHERE kind='credit' AND status='delivered'")
    finally:
        db.close()
    lags = sorted((done - stored[json.loads(body)["event_position"]]) / 1000 for body, done in rows)
    return {"settled_bets_per_s": round(rate), "payouts": len(lags),
            "lag_p50_s": round(lags[len(lags) // 2], 3) if lags else 0.0,
            "lag_p99_s": round(lags[int(len(lags) * 0.99)], 3) if lags else 0.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db-dir", default=None, help="folder for the temporary stores (default: a temp dir)")
    p.add_argument("--tables", type=int, default=6)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--wallet-ms", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--bets-per-s", type=int, default=1000)
    p.add_argument("--lag-seconds", type=float, default=10.0)
    args = p.parse_args(argv)
    folder = Path(args.db_dir or tempfile.mkdtemp(prefix="wallet-bench-"))
    server = wallet_server(args.wallet_ms)
    wallet = wallet_for(server, args.concurrency)
    ratios, ours, bare = [], [], []
    for run in range(args.runs):
        url = filled_store(folder / f"rate-{run}.db", args.tables, args.rounds, args.seed + run)
        calls, elapsed, requests = deliverer_rate(url, wallet)
        n, bare_s = bare_rate(wallet_for(wallet_server(args.wallet_ms), args.concurrency), requests)
        ours.append(calls / elapsed)
        bare.append(n / bare_s)
        ratios.append(ours[-1] / bare[-1])
    lag = lag_run(folder / "lag.db", wallet, args.bets_per_s, args.lag_seconds, args.seed)
    out = {"wallet_ms": args.wallet_ms, "concurrency": args.concurrency, "runs": args.runs,
           "deliverer_calls_per_s": round(statistics.median(ours)), "bare_calls_per_s": round(statistics.median(bare)),
           "ratio_median": round(statistics.median(ratios), 3), "ratio_goal": RATE_GOAL, **lag,
           "lag_p99_goal_s": LAG_P99_GOAL_S, "cpus": os.cpu_count()}
    print(json.dumps(out, indent=2))
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

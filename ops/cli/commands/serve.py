"""`ledger serve`: the live HTTP service (FastAPI on uvicorn)."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from ops.cli.errors import CliError, ErrorCode
from ops.cli.options import (
    add_command,
    add_create_argument,
    check_address_free,
    existing_store,
    int_range,
    number_range,
)
from ops.service.startup import STARTUP_FAILED_ENV

EPILOG = """\
Routes, roles and examples: README "Live service"; OpenAPI at /openapi.json, docs at /docs and
/redoc (served locally). Every request needs an API key (ledger keys add) except /healthz,
/readyz, /metrics and the documentation. Errors are RFC 9457 problems with a stable code.

  ledger serve --db postgresql://postgres@127.0.0.1:5432/postgres --workers 2
  curl -s localhost:8080/readyz

It prints its URL, store and console link on standard error at start, and a line at
stop. A SQLite store must exist already (`ledger keys add`, `ingest` or `demo` make
one): a mistyped path is store_missing, exit 2; --create makes a new, empty store.

Commands posted while a batch commits are committed together in the next one
(at most --max-batch commands; --max-wait-ms > 0 also waits that long to gather
more); each answer comes after its commit. With --workers N, a table is written by one process at a time
(per-table locks in a private directory). SIGTERM: stop taking requests, finish
and commit what was taken, then exit.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "serve", "run the live HTTP API (commands, reads, health, metrics)", run, epilog=EPILOG)
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    add_create_argument(p)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int_range(1, 65535), default=8080)
    p.add_argument("--workers", type=int_range(1, 64), default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--max-wait-ms", type=float, default=None, metavar="MS",
                   help="extra wait after the first waiting command, to gather larger batches (default 0: none)")
    p.add_argument("--max-batch", type=int, default=None, metavar="N",
                   help="commands per transaction at most (default 500)")
    p.add_argument("--switch-interval-ms", type=number_range(0.05, 100), default=None, metavar="MS",
                   help="longest hold of the GIL by the request loop while the writer waits for it (default 1)")
    p.add_argument("--store-timeout-s", type=float, default=None, metavar="S",
                   help="longest wait of a request for the store before it is answered 503 store_unavailable "
                        "with Retry-After (default 5)")
    p.add_argument("--max-body-bytes", type=int, default=None, metavar="N",
                   help="largest POST /v1/commands body; larger: 413 body_too_large (default 16 MiB)")
    p.add_argument("--max-header-bytes", type=int, default=None, metavar="N",
                   help="request line and headers together at most; more: 431 (default 32 KiB)")
    p.add_argument("--max-headers", type=int, default=None, metavar="N",
                   help="headers per request at most; more: 431 (default 100)")
    p.add_argument("--header-timeout-s", type=float, default=None, metavar="S",
                   help="a request's headers must arrive within this, else 408 (default 10)")
    p.add_argument("--body-timeout-s", type=float, default=None, metavar="S",
                   help="a request's body must arrive within this after its headers, else 408 (default 30)")
    p.add_argument("--log-level", default="info")
    p.add_argument("--wallet-config", metavar="FILE", default=os.environ.get("LEDGER_WALLET_CONFIG") or None,
                   help="also deliver payouts to the operators' wallets (docs/wallet.md): `ledger wallet deliver` "
                   "runs beside the service, one process, stopped with it (default: LEDGER_WALLET_CONFIG)")


def run(args: argparse.Namespace) -> int:
    check_address_free(args.host, args.port)  # uvicorn would log [Errno 98] and exit 1 or 3
    env = os.environ
    env["LEDGER_DB"] = existing_store(args.db, args.create)
    env["LEDGER_LOG_LEVEL"] = args.log_level
    if args.max_wait_ms is not None:
        env["LEDGER_SERVE_MAX_WAIT_MS"] = str(args.max_wait_ms)
    if args.max_batch is not None:
        env["LEDGER_SERVE_MAX_BATCH"] = str(args.max_batch)
    if args.switch_interval_ms is not None:
        env["LEDGER_SERVE_SWITCH_INTERVAL_MS"] = str(args.switch_interval_ms)
    for name, value, low, high in (("store-timeout-s", args.store_timeout_s, 0.1, 600),
                                   ("max-body-bytes", args.max_body_bytes, 1024, 1 << 31),
                                   ("max-header-bytes", args.max_header_bytes, 1024, 1 << 24),
                                   ("max-headers", args.max_headers, 8, 10_000),
                                   ("header-timeout-s", args.header_timeout_s, 0.1, 3600),
                                   ("body-timeout-s", args.body_timeout_s, 0.1, 3600)):
        if value is None:
            continue
        if not low <= value <= high:
            raise CliError(ErrorCode.USAGE, f"--{name} must be {low}..{high}, got {value}")
        env["LEDGER_SERVE_" + name.upper().replace("-", "_")] = str(value)
    # libpq's own connect timeout (it has none by default: a store that drops packets held a
    # connect for minutes); the pool's connections and the key reads use it. The operator's wins.
    env.setdefault("PGCONNECT_TIMEOUT", "2")
    private = tempfile.mkdtemp(prefix="ledger-serve-")
    # Before prometheus-client is first imported (it picks its value store then), in every worker.
    env["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(private, "metrics")
    os.makedirs(env["PROMETHEUS_MULTIPROC_DIR"])
    env[STARTUP_FAILED_ENV] = os.path.join(private, "startup-failed")  # a worker that could not start says why
    if args.workers > 1:
        env["LEDGER_SERVE_LOCK_DIR"] = os.path.join(private, "locks")
    import uvicorn

    from ledger.keys import key_store
    from ledger.store import open_app, safe_url
    from ops.service.http import GuardedHttpToolsProtocol

    app = open_app(env["LEDGER_DB"])  # tables made once, before the workers start together
    try:
        key_store(app)
    finally:
        app.close()

    base = _base_url(args.host, args.port)
    print(f"ledger serve: {base} on store {safe_url(env['LEDGER_DB'])} ({_workers(args.workers)}); "
          f"console {base}/ui/, API docs {base}/docs; stop with Ctrl-C or SIGTERM", file=sys.stderr, flush=True)
    deliverer = _start_deliverer(env["LEDGER_DB"], args.wallet_config)
    stop_by_sigterm = signal.signal(signal.SIGTERM, _stopped)
    failed: str | None = None
    try:
        uvicorn.run("ops.service.app:app_from_env", factory=True, host=args.host, port=args.port,
                    workers=args.workers, log_level="warning", access_log=False, timeout_graceful_shutdown=30,
                    http=GuardedHttpToolsProtocol)  # header limits and read timeouts (ops/service/http.py)
    except _Stopped:
        pass
    except SystemExit as exc:  # uvicorn's own exit (one worker whose startup failed: 3); why is read below
        if exc.code not in (0, None):
            failed = f"the service stopped (exit {exc.code})"
    finally:
        signal.signal(signal.SIGTERM, stop_by_sigterm)
        _stop_deliverer(deliverer)
        failed = _startup_failure(env[STARTUP_FAILED_ENV]) or failed
        shutil.rmtree(private, ignore_errors=True)
    if failed is not None:
        # A worker started (or restarted by uvicorn after a crash) while the store was out of reach:
        # uvicorn stops the whole service then; a supervisor must see a failure, not a clean stop.
        raise CliError(ErrorCode.STORE_UNREACHABLE, f"a worker could not start, so the service stopped: {failed}")
    print(f"ledger serve: stopped ({base})", file=sys.stderr, flush=True)
    return 0


def _startup_failure(path: str) -> str | None:
    """Why a worker could not start (the first line it wrote), or None."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip() or "see the log above"
    except OSError:
        return None


def _start_deliverer(url: str, config: str | None) -> subprocess.Popen[bytes] | None:
    """The wallet deliverer beside the service (its own process: its HTTP calls and the
    service's requests never wait on each other's GIL); the configuration checked first."""
    if not config:
        return None
    from ops.wallet.config import ConfigError, load

    try:
        load(config)
    except ConfigError as exc:
        raise CliError(ErrorCode.INPUT_INVALID, str(exc)) from None
    return subprocess.Popen([sys.executable, "-m", "ops.cli", "wallet", "deliver", "--db", url, "--config", config])


def _stop_deliverer(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None:
        return
    proc.terminate()  # it stops after its current turn: every answer it had is recorded
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()  # what it had not recorded is sent again with the same ids
        proc.wait()


class _Stopped(Exception):
    """SIGTERM, after uvicorn's graceful stop: one worker's uvicorn raises the signal again
    when it is done (the default action would end the process, 143, before the stop line)."""


def _stopped(_signum: int, _frame: object) -> None:
    raise _Stopped


def _base_url(host: str, port: int) -> str:
    """The URL a browser on this machine opens (an IPv6 address in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _workers(n: int) -> str:
    return "1 worker" if n == 1 else f"{n} workers"

"""Wallet delivery killed -9 at random moments (issue 31, "How to know it is done"), many
trials, as an operator would run them; each trial printed, then a summary. Not timed: each
trial must end, and end right. The suite runs two per store (tests/e2e/wallet/test_kill.py).

    python -m ops.bench.wallet_trials --store sqlite --trials 20
    python -m ops.bench.wallet_trials --store postgres --trials 20
    python -m ops.bench.wallet_trials --store postgres --db postgresql://postgres@127.0.0.1:5432/postgres --json
    python -m ops.bench.wallet_trials --store sqlite --trials 5 --seed 100 --nats-url nats://127.0.0.1:4222
    python -m ops.bench.wallet_trials --store sqlite --trials 5 --batch-max 8     # OP1's calls batched

Each trial: a simulated day (2 tables of 5 rounds, voids, reversals and resettlements among
them) dealt to two operators: OP1 called over HTTP (the fake wallet, ops/bench/fake_wallet.py,
every misbehaviour at once, rarely each), OP2 consuming over JetStream (a stream of the trial's
own on the nats-server, made by the deliverer). Half the day stored; the deliverer, a process
of its own, killed -9 after a random number of calls (HTTP requests and JetStream publishes
counted together) and a random pause; the rest of the day stored while it is down; killed
again the same way; then run to the end (`run(until_idle=True)`, the code of `ledger wallet
deliver --until-idle`). With `--batch-max N` (N > 1) OP1 is called with batches of up to N
transactions (docs/wallet.md, "Batches"), the fake wallet misbehaving on each batch request as
on a single one. A trial passes when:

- OP1's wallet, and OP2's consumer (the stream's messages applied in order), each hold that
  operator's players' ledger balances to the cent, nothing applied twice, nothing applied
  after its rollback, every round completed or cancelled there, and `ledger wallet
  reconcile`'s report on its statement is empty (ops/bench/wallet_check.py);
- the stream holds each transaction id once (a resend after a kill is dropped by its
  `Nats-Msg-Id`), each message signed and named by its transaction id, and every resend
  came within the stream's duplicate window (the longest gap is printed beside the window).

SQLite: a file per trial in a temporary folder; PostgreSQL (`--db`, the server; default
LEDGER_TEST_PG_URL or postgresql://postgres@127.0.0.1:5432/postgres): a schema per trial,
dropped after it. Exit 0: every trial passed; 1: a trial failed (its findings printed);
2: could not run (the store or the nats-server unreachable, bad arguments).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ledger.store import open_app
from ops.bench.fake_wallet import Chaos, FakeWallet
from ops.bench.fault_trials import admin, schema_url
from ops.bench.wallet_check import problems
from ops.bench.wallet_js import PublishWatch, consumed, delete_stream, stream_messages
from ops.jetstream.intake import NATS_URL_DEFAULT
from ops.sim.simulator import Studio
from ops.wallet.config import BATCH_MAX_LIMIT, load
from ops.wallet.deliverer import Deliverer

PG_URL_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"
HTTP_OP, JS_OP = "OP1", "OP2"  # the simulator's operators: OP1 is called, OP2 consumes
SECRETS = {op: f"trial-secret-{op}-not-for-production" for op in (HTTP_OP, JS_OP)}
SECRET_ENV = {op: f"LEDGER_WALLET_SECRET_TRIAL_{op}" for op in (HTTP_OP, JS_OP)}
TABLES, ROUNDS, FAULTS_PER_MILLE = 2, 5, 300
# Every misbehaviour at once, rarely each: a kill lands among them.
MIXED = {"drop": 0.04, "timeout": 0.02, "late": 0.02, "lost": 0.03, "5xx": 0.04, "5xx_after": 0.03,
         "duplicate": 0.04}
HTTP_TIMEOUT_S, CHAOS_DELAY_S = 0.2, 0.3  # a late or timed-out answer comes after the deliverer gave up
CALLS_MAX = 120  # a kill comes after 1..CALLS_MAX calls
QUIET_S = 0.4  # no call for this long: it has called all it had to, and is killed idle
START_MAX_S = 60.0  # its first call within this (a loaded machine starts slowly)
RUN_MAX_S = 120.0  # the last run, to the end, within this: else the trial fails


class TrialError(Exception):
    """A trial could not be carried out as planned (the deliverer died on its own)."""


@dataclass
class Trial:
    seed: int
    kills_after_calls: list[int]
    http_requests: int
    http_batched_transactions: int  # the items of OP1's batch requests (0: not batched)
    js_published: int  # publishes on OP2's subjects, resends included
    js_messages: int  # what the stream holds
    js_resends_dropped: int
    resend_gap_max_s: float  # the longest a resend came after its id's first publish
    duplicate_window_s: float
    seconds: float
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class Calls:
    """The deliverer's calls as its wallets see them (HTTP requests and JetStream publishes)."""

    def __init__(self) -> None:
        self.n = 0
        self._changed = threading.Condition()

    def add(self) -> None:
        with self._changed:
            self.n += 1
            self._changed.notify_all()

    def wait(self, before: int, target: int, deadline: float, alive: Callable[[], bool]) -> None:
        """Until `target` calls, or none for QUIET_S once one came after `before`, or the
        deadline, or the caller dead."""
        with self._changed:
            while self.n < target and alive():
                seen, left = self.n, deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(min(left, QUIET_S))
                if self.n == seen and seen > before:
                    return


def _deliver(url: str, config: str, env: dict[str, str]) -> None:
    Deliverer(url, load(config, env)).run()


def forks() -> Any:
    """Processes forked from a server that imported the deliverer and the CLI once, before any
    thread ran (a fresh interpreter's imports take seconds on a busy machine)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ops.cli", "ops.wallet.deliverer", "ops.bench.fake_wallet", "ops.bench.wallet_check"])
    return ctx


def ledger_process(args: list[str], env: dict[str, str] | None = None, stderr: Path | None = None) -> Any:
    """`ledger ARGS` as a process of its own (forked, see `forks`), started; `env` added to its
    environment, its stderr into the file `stderr`. Its exit status is the command's."""
    proc = forks().Process(target=_ledger, args=(args, env or {}, str(stderr) if stderr else None), daemon=True)
    proc.start()
    return proc


def _ledger(args: list[str], env: dict[str, str], stderr: str | None) -> None:
    from ops.cli import main as cli

    os.environ.update(env)
    if stderr:
        os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 2)
    sys.exit(cli(args))


def killed_at_random(url: str, config: Path, calls: Calls, rng: random.Random) -> int:
    """A deliverer process killed -9 after a random number of calls, then a random pause.
    Returns the calls it made."""
    before = calls.n
    proc = forks().Process(target=_deliver, args=(url, str(config), secrets_env()), daemon=True)
    proc.start()
    target = before + rng.randint(1, CALLS_MAX)
    calls.wait(before, before + 1, time.monotonic() + START_MAX_S, proc.is_alive)
    calls.wait(before, target, time.monotonic() + START_MAX_S, proc.is_alive)
    time.sleep(rng.uniform(0, 0.05))  # the kill lands between calls too
    if not proc.is_alive():
        raise TrialError(f"the deliverer ended on its own (exit {proc.exitcode}) before its kill")
    os.kill(proc.pid or 0, signal.SIGKILL)
    proc.join(10)
    if proc.exitcode != -signal.SIGKILL:
        raise TrialError(f"the deliverer was not killed (exit {proc.exitcode})")
    return calls.n - before


def secrets_env() -> dict[str, str]:
    return {SECRET_ENV[op]: SECRETS[op] for op in SECRETS}


def write_config(folder: Path, wallet_url: str, nats_url: str, stream: str, subject: str, batch_max: int = 1) -> Path:
    """OP1 over HTTP with short timeouts and backoffs (the trial's wallet answers at once or
    misbehaves on purpose), batched when `batch_max` > 1; OP2 over JetStream."""
    path = folder / "wallet.toml"
    path.write_text(f'[operators.{HTTP_OP}]\nurl = "{wallet_url}"\nsecret_env = "{SECRET_ENV[HTTP_OP]}"\n'
                    f"batch_max = {batch_max}\nconcurrency = 4\ntimeout_s = {HTTP_TIMEOUT_S}\nbackoff_s = 0.02\nbackoff_max_s = 0.2\n\n"
                    f'[operators.{JS_OP}]\ntransport = "jetstream"\nnats_url = "{nats_url}"\nstream = "{stream}"\n'
                    f'subject = "{subject}"\nsecret_env = "{SECRET_ENV[JS_OP]}"\nconcurrency = 4\ntimeout_s = 2.0\n'
                    "backoff_s = 0.02\nbackoff_max_s = 0.2\n")
    return path


def ingest(url: str, lines: list[bytes]) -> None:
    app = open_app(url)
    try:
        app.ingest(lines, batch_size=200)
    finally:
        app.close()


def trial(url: str, folder: Path, seed: int, nats_url: str = NATS_URL_DEFAULT, batch_max: int = 1) -> Trial:
    """One trial on the empty store at `url` (module docstring); `folder` for its files; OP1's
    calls batched when `batch_max` > 1."""
    rng, started = random.Random(seed), time.monotonic()
    lines = list(Studio(TABLES, ROUNDS, seed, FAULTS_PER_MILLE, operators=2).lines())
    ingest(url, lines[:len(lines) // 2])
    token = uuid.uuid4().hex[:12]
    stream, subject = f"WALLET_TRIAL_{token}", f"ledger.wallettrial.{token}"
    calls = Calls()
    try:
        with ExitStack() as stack:
            wallet = stack.enter_context(FakeWallet(SECRETS[HTTP_OP], chaos=Chaos(MIXED, CHAOS_DELAY_S, seed),
                                                    latency_s=0.002, operator_id=HTTP_OP, on_request=calls.add))
            watch = stack.enter_context(PublishWatch(nats_url, subject, calls.add))
            config = write_config(folder, wallet.url, nats_url, stream, subject, batch_max)
            kills = [killed_at_random(url, config, calls, rng)]
            ingest(url, lines[len(lines) // 2:])
            kills.append(killed_at_random(url, config, calls, rng))
            found = [] if run_to_the_end(url, config) else [f"the last run did not end within {RUN_MAX_S:.0f} s"]
        found += [f"{HTTP_OP}: {p}" for p in problems(url, wallet.state, operator=HTTP_OP)]
        found += [f"the deliverer made no call before kill {n}" for n, k in enumerate(kills, 1) if k == 0]
        if batch_max > 1 and not any(len(batch) > 1 for batch in wallet.batches):
            found.append(f"{HTTP_OP}: batch_max {batch_max}, but no call carried more than one transaction")
        js = _stream_findings(url, nats_url, stream, subject, watch)
    finally:
        try:
            asyncio.run(delete_stream(nats_url, stream))
        except Exception:  # never made (the trial failed before any publish): nothing to delete
            pass
    messages, window, js_found = js
    return Trial(seed, kills, wallet.state.requests, sum(map(len, wallet.batches)), watch.published, messages, watch.published - messages,
                 round(watch.resend_gap_max_s(), 3), window, round(time.monotonic() - started, 1), found + js_found)


def run_to_the_end(url: str, config: Path) -> bool:
    """`ledger wallet deliver --until-idle` in this process; False: stopped at RUN_MAX_S."""
    stop = threading.Event()
    timer = threading.Timer(RUN_MAX_S, stop.set)
    timer.start()
    deliverer = Deliverer(url, load(str(config), secrets_env()))
    try:
        deliverer.run(until_idle=True, stop=stop)
    finally:
        timer.cancel()
        deliverer.close()
    return not stop.is_set()


def _stream_findings(url: str, nats_url: str, stream: str, subject: str,
                     watch: PublishWatch) -> tuple[int, float, list[str]]:
    """How many messages the stream holds, its duplicate window, and every way it is wrong."""
    msgs, window = asyncio.run(stream_messages(nats_url, stream))
    state, found = consumed(msgs, subject, SECRETS[JS_OP].encode())
    found += [f"{JS_OP}: {p}" for p in problems(url, state, operator=JS_OP)]
    held = Counter(m.headers.get("Nats-Msg-Id") for m in msgs)
    found += [f"{JS_OP}: the stream holds {msg_id} {n} times" for msg_id, n in held.items() if n > 1]
    if watch.resend_gap_max_s() >= window:
        found.append(f"{JS_OP}: a resend came {watch.resend_gap_max_s():.1f} s after its first publish, "
                     f"past the stream's duplicate window of {window:.0f} s")
    if not msgs:
        found.append(f"{JS_OP}: nothing published")
    return len(msgs), window, found


@contextmanager
def store(kind: str, pg_url: str, folder: Path) -> Iterator[str]:
    """An empty store for one trial: a SQLite file, or a PostgreSQL schema dropped after."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'ledger.db'}"
        return
    schema = f"wallet_trial_{uuid.uuid4().hex[:12]}"
    with admin(pg_url) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            yield schema_url(pg_url, schema)
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def reachable(kind: str, pg_url: str, nats_url: str) -> str | None:
    """Why the trials cannot run (None: they can)."""
    if kind == "postgres":
        try:
            admin(pg_url).close()
        except Exception as exc:
            return f"PostgreSQL at {pg_url} is unreachable: {type(exc).__name__}"
    try:
        with PublishWatch(nats_url, "ledger.wallettrial.ping"):
            pass
    except Exception as exc:
        return f"the nats-server at {nats_url} is unreachable: {type(exc).__name__}"
    return None


def run_trials(kind: str, trials: int, first_seed: int, pg_url: str, nats_url: str, out: Any,
               batch_max: int = 1) -> list[Trial]:
    done = []
    for seed in range(first_seed, first_seed + trials):
        folder = Path(tempfile.mkdtemp(prefix="wallet-trial-"))
        try:
            with store(kind, pg_url, folder) as url:
                result = trial(url, folder, seed, nats_url, batch_max)
        except TrialError as exc:
            result = Trial(seed, [], 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, [str(exc)])
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        done.append(result)
        if out is not None:
            print(describe(result), file=out, flush=True)
    return done


def describe(t: Trial) -> str:
    head = (f"trial seed {t.seed}: {'ok' if t.ok else 'FAILED'}, killed after {' and '.join(map(str, t.kills_after_calls))}"
            f" calls; {t.http_requests} HTTP requests{_batched(t)}, {t.js_published} publishes ({t.js_resends_dropped} resends "
            f"dropped by the stream, the longest {t.resend_gap_max_s:.2f} s after the first of a "
            f"{t.duplicate_window_s:.0f} s window); {t.seconds:.1f} s")
    return head + "".join(f"\n  {p}" for p in t.problems[:20])


def _batched(t: Trial) -> str:
    return f" ({t.http_batched_transactions} transactions in batches)" if t.http_batched_transactions else ""


def summary(kind: str, done: list[Trial], seconds: float, batch_max: int = 1) -> dict[str, Any]:
    return {"store": kind, "batch_max": batch_max, "trials": len(done), "passed": sum(t.ok for t in done),
            "failed": [t.seed for t in done if not t.ok], "seconds": round(seconds, 1),
            "kills": sum(len(t.kills_after_calls) for t in done),
            "js_resends_dropped": sum(t.js_resends_dropped for t in done),
            "resend_gap_max_s": max((t.resend_gap_max_s for t in done), default=0.0),
            "duplicate_window_s": min((t.duplicate_window_s for t in done if t.duplicate_window_s), default=0.0),
            "load_average": [round(x, 1) for x in os.getloadavg()], "results": [asdict(t) for t in done]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ops.bench.wallet_trials", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--db", default=os.environ.get("LEDGER_TEST_PG_URL", PG_URL_DEFAULT),
                   help="the PostgreSQL server (--store postgres): a schema per trial, dropped after")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="the first trial's seed (trial i: seed + i)")
    p.add_argument("--nats-url", default=NATS_URL_DEFAULT)
    p.add_argument("--batch-max", type=int, default=1, help="OP1's batch_max (> 1: its calls batched)")
    p.add_argument("--json", action="store_true", help="one JSON object at the end instead of lines")
    args = p.parse_args(argv)
    if not 1 <= args.trials <= 1000 or not 1 <= args.batch_max <= BATCH_MAX_LIMIT:
        print(f"wallet_trials: --trials must be 1..1000, --batch-max 1..{BATCH_MAX_LIMIT}", file=sys.stderr)
        return 2
    why = reachable(args.store, args.db, args.nats_url)
    if why:
        print(f"wallet_trials: {why}", file=sys.stderr)
        return 2
    started = time.monotonic()
    done = run_trials(args.store, args.trials, args.seed, args.db, args.nats_url, None if args.json else sys.stdout,
                      args.batch_max)
    report = summary(args.store, done, time.monotonic() - started, args.batch_max)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        batched = f" (OP1 batched, batch_max {args.batch_max})" if args.batch_max > 1 else ""
        print(f"{report['passed']}/{report['trials']} trials passed on {args.store}{batched} in {report['seconds']} s; "
              f"{report['js_resends_dropped']} JetStream resends dropped by their id, the longest "
              f"{report['resend_gap_max_s']} s after the first (window {report['duplicate_window_s']:.0f} s); "
              f"load average {report['load_average']}")
    return 0 if report["passed"] == report["trials"] else 1


if __name__ == "__main__":
    sys.exit(main())

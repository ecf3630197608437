"""Fault trials of issue 33, as an operator would run them, with real processes; each trial
printed, and a summary. Not timed: each must end, and end right.

    python -m ops.bench.fault_trials projectors --runs 20                 # SQLite
    python -m ops.bench.fault_trials projectors --runs 20 --db postgresql://postgres@127.0.0.1:5432/postgres
    python -m ops.bench.fault_trials ingest-kill --trials 20 --db postgresql://postgres@127.0.0.1:5432/postgres

`projectors`: a store of simulated tables, every round with a fault (many settlement
reversals); each run empties the views, then starts two `ledger project` processes at once.
Passes when both exit 0 and the views equal a rebuild.

`ingest-kill`: each trial starts `ledger ingest --workers 2` into a fresh schema and, at a
random moment after its first events committed, terminates all its PostgreSQL backends (pg_terminate_backend; its
connections carry the schema as application_name). Passes when the run ends within
`--bound-s` with exit 0 (the pool reconnected) or 2 (one line), and a second ingest of the
same feed then leaves the store equal to one clean ingest (events of every aggregate and
the command index).

`project-kill`: the same under `ledger project` from empty views (terminated 0-1 s after
its first page); a second `ledger project` must then leave the views equal to a rebuild.
`leases`: three `ledger consume --lease` hosts, each in a network namespace of its own
(ops/bench/netns.py), a feed of --tables tables published over --publish-s seconds, and in
each trial one fault halfway through: `kill` (SIGKILL a host), `cut` (its link down for twice
the lease, then up), `freeze` (SIGSTOP for twice the lease, then SIGCONT), `add` (a fourth
host joins), `remove` (SIGTERM a host). Printed: how long the victim's slots went unheld
(server clock: the fault to the successor's lease), or for `add` until the four hosts hold
their shares; the batches the store refused a host that had lost its lease; and whether the
store equals a clean `ledger ingest` of the feed. A trial passes when the store is equal,
every takeover is within the stated bound (4/3 of the lease + 1 s) and every host exits 0
(the killed one -9). Root only (namespaces).

    python -m ops.bench.fault_trials leases --trials 10 --tables 200

Exit status 1 when any run or trial failed.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.eventlog import EventLog
from ledger.records import fields_of
from ledger.store import open_app
from ops.sim.simulator import simulate
from projections.runner import Projector
from projections.sql import dump

ROOT = Path(__file__).resolve().parents[2]
BOUND_S_DEFAULT = 60.0


def ledger(*args: str, app_name: str = "") -> subprocess.Popen[bytes]:
    """`ledger ARGS` as a process of its own (stderr kept for its last line)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)} | ({"PGAPPNAME": app_name} if app_name else {})
    return subprocess.Popen([sys.executable, "-m", "ops.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def last_line(proc: subprocess.Popen[bytes]) -> str:
    lines = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


def views(projector: Projector) -> dict[str, list[tuple[Any, ...]]]:
    return {t.name: dump(projector.db, t) for v in projector.views for t in v.tables}


def store_facts(url: str) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Every aggregate's events without server times, and the command index: what a store
    that took a feed holds, whatever the workers' interleaving."""
    app = open_app(url)
    try:
        facts: dict[str, list[Any]] = {}
        ids: list[str] = []
        for record in EventLog(app).records():
            facts.setdefault(record.originator_id, []).append(
                (type(record).__name__, record.originator_version, fields_of(record)))
            if record.command_id:
                ids.append(record.command_id)
        commands = {k: tuple(v) for k, v in app.ledger_recorder().select_commands(sorted(set(ids))).items()}
        return facts, commands
    finally:
        app.close()


# ------------------------------------------------------------------ projectors
def projector_runs(url: str, runs: int, page_size: int = 100, out: Any = sys.stdout) -> int:
    """`runs` races of two `ledger project` processes on the store at `url` (filled first when
    empty); the number that failed."""
    app = open_app(url)
    if EventLog(app).head() == 0:
        app.ingest(simulate(4, 30, 5, fault_rate=1000))
    reference = Projector(EventLog(app), page_size=page_size)
    reference.catch_up()
    expected = views(reference)
    failed = 0
    try:
        for run in range(runs):
            reference.rebuild()
            procs = [ledger("project", "--db", url, "--page-size", str(page_size), "--quiet") for _ in range(2)]
            codes = [p.wait(timeout=BOUND_S_DEFAULT) for p in procs]
            lines = [last_line(p) for p in procs]
            same = views(reference) == expected
            ok = codes == [0, 0] and same
            failed += not ok
            print(f"run {run}: exits {codes}, views {'equal' if same else 'DIFFER from'} a rebuild"
                  + ("" if ok else f"; {[line for line in lines if line]}"), file=out, flush=True)
    finally:
        reference.close()
        app.close()
    return failed


# ------------------------------------------------------------------ ingest-kill
@dataclass
class Trial:
    kill_at_s: float  # after the first events
    killed: int  # backends terminated
    exit: int | None  # None: still running at the bound (killed then)
    seconds: float
    line: str  # its last line on stderr
    equal: bool  # after a re-ingest, the store equals a clean one

    @property
    def ok(self) -> bool:
        return self.exit in (0, 2) and self.equal


def schema_url(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def admin(base: str) -> Any:
    import psycopg

    return psycopg.connect(base.split("?")[0], autocommit=True, connect_timeout=5)


def ingest_trial(base: str, feed: str, clean: tuple[Any, Any], kill_at_s: float, bound_s: float) -> Trial:
    """One run of `ledger ingest --workers 2` whose backends are terminated `kill_at_s` in."""
    schema = f"fault_{uuid.uuid4().hex[:12]}"
    url = schema_url(base, schema)
    with admin(base) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            started = time.monotonic()
            proc = ledger("ingest", feed, "--db", url, "--workers", "2", "--batch-size", "500", "--quiet",
                          "--allow-refusals", app_name=schema)
            _wait_for(conn, f'SELECT EXISTS (SELECT 1 FROM "{schema}".ledger_events)', proc, started + bound_s)
            time.sleep(kill_at_s)
            killed = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                  "WHERE application_name = %s", (schema,)).fetchone()[0]
            code = _wait_or_kill(proc, started + bound_s)
            seconds = time.monotonic() - started
            line = last_line(proc)
            ingest_here(url, feed, workers=2)  # the operator's second run (here: no process to start)
            equal = store_facts(url) == clean
            return Trial(kill_at_s, killed, code, seconds, line, equal)
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def ingest_here(url: str, feed: str, workers: int) -> None:
    """`ledger ingest FEED --workers N` in this process."""
    app = open_app(url)
    try:
        with open(feed, "rb") as lines:
            app.ingest([line.rstrip(b"\n") for line in lines if line.strip()], workers=workers)
    finally:
        app.close()


def _wait_for(conn: Any, query: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Until `query` answers true: the run has committed its first work (start-up takes seconds
    on a loaded machine); a table not made yet answers false."""
    import psycopg

    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if conn.execute(query).fetchone()[0]:
                return
        except psycopg.errors.UndefinedTable:
            pass
        time.sleep(0.02)


def clean_facts(base: str, feed: str) -> tuple[Any, Any]:
    return clean_ingest(base, feed)[0]


def clean_ingest(base: str, feed: str) -> tuple[tuple[Any, Any], int]:
    """What one clean `ledger ingest` of `feed` leaves: the store's facts, and how many command
    ids its index holds (refused ones included: a store that took the whole feed holds as many)."""
    schema = f"fault_clean_{uuid.uuid4().hex[:12]}"
    with admin(base) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            ingest_here(schema_url(base, schema), feed, workers=1)
            total = int(conn.execute(f'SELECT count(*) FROM "{schema}".ledger_commands').fetchone()[0])
            return store_facts(schema_url(base, schema)), total
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def write_feed(path: str, tables: int, rounds: int) -> str:
    with open(path, "wb") as f:
        f.writelines(simulate(tables, rounds, 9, fault_rate=50))
    return path


def ingest_trials(base: str, trials: int, bound_s: float, kill_window_s: tuple[float, float], tables: int,
                  rounds: int, out: Any = sys.stdout, seed: int | None = None) -> list[Trial]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        feed = write_feed(os.path.join(tmp, "feed.jsonl"), tables, rounds)
        clean = clean_facts(base, feed)
        done = []
        for i in range(trials):
            trial = ingest_trial(base, feed, clean, rng.uniform(*kill_window_s), bound_s)
            done.append(trial)
            print(f"trial {i}: backends terminated {trial.kill_at_s:.2f} s after the first events ({trial.killed}); exit {trial.exit} "
                  f"after {trial.seconds:.1f} s; re-ingest {'equal to' if trial.equal else 'DIFFERS from'} a clean "
                  f"one{'; ' + trial.line if trial.line else ''}", file=out, flush=True)
        return done


def project_trials(base: str, trials: int, bound_s: float, kill_window_s: tuple[float, float],
                   out: Any = sys.stdout, seed: int | None = None) -> list[Trial]:
    """`ledger project` (from empty views) whose backends are terminated at a random moment after
    its first page; then a second run, and the views must equal a rebuild."""
    rng = random.Random(seed)
    schema = f"fault_{uuid.uuid4().hex[:12]}"
    url = schema_url(base, schema)
    done: list[Trial] = []
    with admin(base) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        app = open_app(url)
        try:
            app.ingest(simulate(6, 40, 7, fault_rate=200))
            reference = Projector(EventLog(app))
            reference.catch_up()
            expected = views(reference)
            for i in range(trials):
                reference.rebuild()
                kill_at_s = rng.uniform(*kill_window_s)
                started = time.monotonic()
                proc = ledger("project", "--db", url, "--page-size", "200", "--quiet", app_name=schema)
                _wait_for(conn, f'SELECT min(position) > 0 FROM "{schema}".proj_tracking', proc, started + bound_s)
                time.sleep(kill_at_s)
                killed = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                      "WHERE application_name = %s", (schema,)).fetchone()[0]
                code = _wait_or_kill(proc, started + bound_s)
                seconds, line = time.monotonic() - started, last_line(proc)
                again = ledger("project", "--db", url, "--quiet")
                equal = again.wait(timeout=600) == 0 and views(reference) == expected
                done.append(Trial(kill_at_s, killed, code, seconds, line, equal))
                print(f"trial {i}: backends terminated {kill_at_s:.2f} s after the first page ({killed}); exit {code} "
                      f"after {seconds:.1f} s; views after a second run {'equal' if equal else 'DIFFER from'} a rebuild"
                      f"{'; ' + line if line else ''}", file=out, flush=True)
            reference.close()
        finally:
            app.close()
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return done


def _wait_or_kill(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    """The exit status; None when it was still running at `deadline` (then killed)."""
    try:
        return proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.fault_trials", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="trial", required=True)
    p = sub.add_parser("projectors", help="two `ledger project` at once, RUNS times")
    p.add_argument("--db", metavar="URL", help="store (default: a temporary SQLite file); its views are rebuilt")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--page-size", type=int, default=100)
    k = sub.add_parser("ingest-kill", help="PostgreSQL backends terminated under `ledger ingest --workers 2`")
    k.add_argument("--db", metavar="URL", default="postgresql://postgres@127.0.0.1:5432/postgres",
                   help="a PostgreSQL database (a schema per trial, dropped after it)")
    k.add_argument("--trials", type=int, default=20)
    k.add_argument("--bound-s", type=float, default=BOUND_S_DEFAULT, help="a run must end within this")
    k.add_argument("--tables", type=int, default=20)
    k.add_argument("--rounds", type=int, default=60)
    k.add_argument("--kill-from-s", type=float, default=0.0, help="after the first events committed")
    k.add_argument("--kill-to-s", type=float, default=3.0)
    k.add_argument("--seed", type=int)
    j = sub.add_parser("project-kill", help="PostgreSQL backends terminated under `ledger project`")
    j.add_argument("--db", metavar="URL", default="postgresql://postgres@127.0.0.1:5432/postgres")
    j.add_argument("--trials", type=int, default=20)
    j.add_argument("--bound-s", type=float, default=BOUND_S_DEFAULT)
    j.add_argument("--seed", type=int)
    q = sub.add_parser("leases", help="`ledger consume --lease` hosts in network namespaces: kill, cut, freeze, add, remove")
    q.add_argument("--db", metavar="URL", default="postgresql://postgres@127.0.0.1:5432/postgres",
                   help="a PostgreSQL database (a schema per trial, dropped after it)")
    q.add_argument("--nats", metavar="URL", default="nats://127.0.0.1:4222", help="a stream per trial, deleted after it")
    q.add_argument("--kinds", default=",".join(LEASE_KINDS), help="comma-separated, of " + ", ".join(LEASE_KINDS))
    q.add_argument("--trials", type=int, default=10, help="of each kind")
    q.add_argument("--tables", type=int, default=200)
    q.add_argument("--rounds", type=int, default=3)
    q.add_argument("--lease-ms", type=int, default=LEASE_MS_DEFAULT)
    q.add_argument("--publish-s", type=float, default=10.0, help="the feed arrives over this long")
    args = parser.parse_args(argv)
    if args.trial == "leases":
        kinds = [k for k in args.kinds.split(",") if k]
        if not set(kinds) <= set(LEASE_KINDS):
            parser.error(f"--kinds: of {', '.join(LEASE_KINDS)}")
        with tempfile.TemporaryDirectory() as work:
            feed = write_feed(os.path.join(work, "feed.jsonl"), args.tables, args.rounds)
            with open(feed, "rb") as f:
                lines = [line.rstrip(b"\n") for line in f if line.strip()]
            setup = LeaseSetup(args.db, args.nats, lines, *clean_ingest(args.db, feed), lease_ms=args.lease_ms,
                               publish_s=args.publish_s)
        print(f"feed: {args.tables} tables, {len(lines)} lines; 3 hosts; lease {args.lease_ms} ms, stated bound "
              f"{lease_bound_s(args.lease_ms):.2f} s", flush=True)
        done = lease_trials(setup, kinds, args.trials)
        lease_summary(done)
        return 0 if all(t.ok for t in done) else 1
    if args.trial == "project-kill":
        trials = project_trials(args.db, args.trials, args.bound_s, (0.0, 1.0), seed=args.seed)
        print(f"{sum(t.ok for t in trials)} of {len(trials)} trials passed; exits "
              f"{sorted({t.exit for t in trials}, key=str)}; longest {max(t.seconds for t in trials):.1f} s")
        return 0 if all(t.ok for t in trials) else 1
    if args.trial == "projectors":
        tmp = None if args.db else tempfile.mkdtemp()
        try:
            url = args.db or f"sqlite:///{tmp}/ledger.db"
            failed = projector_runs(url, args.runs, args.page_size)
        finally:
            if tmp:
                shutil.rmtree(tmp)
        print(f"{args.runs - failed} of {args.runs} runs passed")
        return 1 if failed else 0
    trials = ingest_trials(args.db, args.trials, args.bound_s, (args.kill_from_s, args.kill_to_s), args.tables,
                           args.rounds, seed=args.seed)
    longest = max((t.seconds for t in trials), default=0.0)
    print(f"{sum(t.ok for t in trials)} of {len(trials)} trials passed; exits "
          f"{sorted({t.exit for t in trials}, key=str)}; longest run {longest:.1f} s (bound {args.bound_s:g} s)")
    return 0 if all(t.ok for t in trials) else 1



# ------------------------------------------------------------------ lease trials (hosts in namespaces)
LEASE_KINDS = ("kill", "cut", "freeze", "add", "remove")
LEASE_MS_DEFAULT = 3000


@dataclass
class LeaseTrial:
    kind: str
    takeover_s: float  # kill/cut/freeze/remove: the longest a victim's slot went unheld; add: until balanced
    bound_s: float
    equal: bool  # the store equals a clean `ledger ingest` of the feed
    exits: list[int | None]  # the hosts', in order (the killed one's is -9)
    stats: list[dict[str, Any]]  # each host's closing line: taken, handed, lost, refused, batches, commands
    note: str = ""

    @property
    def refused(self) -> int:
        return sum(int(s.get("refused", 0)) for s in self.stats)

    @property
    def ok(self) -> bool:
        expected = [-signal.SIGKILL if i == 0 and self.kind == "kill" else 0 for i in range(len(self.exits))]
        return self.equal and self.takeover_s <= self.bound_s and self.exits == expected and not self.note


@dataclass
class LeaseSetup:
    """What every lease trial shares: the store's server, NATS, the feed and its clean ingest."""
    base: str  # PostgreSQL URL as the root namespace reaches it
    nats_url: str
    feed: list[bytes]
    clean: tuple[Any, Any]
    commands: int  # command ids in the clean store's index: the trial's store holds the feed when it has as many
    lease_ms: int = LEASE_MS_DEFAULT
    batch: int = 200
    hosts: int = 3
    publish_s: float = 6.0  # the feed arrives over this long
    drain_s: float = 120.0  # after the feed is in: time for the store to hold all of it


def lease_bound_s(lease_ms: int) -> float:
    """The stated takeover bound (docs/scaling.md): 4/3 of the lease, plus 1 s for binding the
    slot's durable and a batch on a loaded machine."""
    return 4 * lease_ms / 3000 + 1.0


def lab_ports(base: str, nats_url: str) -> dict[int, tuple[str, int]]:
    from urllib.parse import urlparse

    pg, nt = urlparse(base), urlparse(nats_url)
    return {pg.port or 5432: (pg.hostname or "127.0.0.1", pg.port or 5432),
            nt.port or 4222: (nt.hostname or "127.0.0.1", nt.port or 4222)}


def via(url: str, address: str) -> str:
    """`url` with its host replaced by the lab's bridge address (the forwarder there relays it)."""
    from urllib.parse import urlparse, urlunparse

    p = urlparse(url)
    netloc = (f"{p.username}@" if p.username else "") + f"{address}:{p.port}"
    return urlunparse(p._replace(netloc=netloc))


def lease_rows(conn: Any, schema: str) -> list[tuple[str, str, int, Any, bool]]:
    return list(conn.execute(f'SELECT name, holder, token, acquired_at, expires_at > now() FROM "{schema}".ledger_leases'
                             ).fetchall())


def slot_holders(conn: Any, schema: str) -> dict[str, list[tuple[str, int, Any]]]:
    """Live slot leases per holder: (name, token, acquired_at)."""
    out: dict[str, list[tuple[str, int, Any]]] = {}
    for name, holder, token, at, live in lease_rows(conn, schema):
        if live and name.startswith("slot-"):
            out.setdefault(holder, []).append((name, token, at))
    return out


def balanced(conn: Any, schema: str, hosts: Sequence[str]) -> bool:
    from ops.jetstream.leased import targets

    held = slot_holders(conn, schema)
    want = targets(hosts)
    return sum(map(len, held.values())) == 64 and all(len(held.get(h, [])) == n for h, n in want.items())


def wait_until(check: Any, timeout_s: float, step_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step_s)
    return bool(check())


class LeaseRun:
    """One trial's hosts, store schema, stream; the feed published over time in a thread."""

    def __init__(self, setup: LeaseSetup, lab: Any, conn: Any, tmp: str) -> None:
        self.setup, self.lab, self.conn, self.tmp = setup, lab, conn, tmp
        tag = uuid.uuid4().hex[:10]
        self.schema, self.stream, self.prefix = f"lease_{tag}", f"LT_{tag}", f"lt{tag}"
        self.url = schema_url(setup.base, self.schema)
        self.hosts: list[tuple[Any, subprocess.Popen[bytes], str]] = []  # (lab host, process, id)
        self.half = threading.Event()
        self.terminated: set[str] = set()  # hosts sent SIGTERM by the fault

    def start_host(self) -> None:
        host = self.lab.add_host()
        host_id = f"h{len(self.hosts)}"
        s = self.setup
        log = open(os.path.join(self.tmp, f"{self.schema}-{host_id}.log"), "wb")  # the host keeps it open
        proc = host.spawn([sys.executable, "-m", "ops.cli", "consume", "--lease", "--db",
                           via(self.url, self.lab.address), "--nats", via(s.nats_url, self.lab.address),
                           "--stream", self.stream, "--subject-prefix", self.prefix, "--lease-ms", str(s.lease_ms),
                           "--host-id", host_id, "--batch", str(s.batch)], stdout=subprocess.PIPE, stderr=log)
        log.close()
        self.hosts.append((host, proc, host_id))

    def publish_over_time(self) -> threading.Thread:
        import asyncio

        from ops.jetstream.intake import publish

        chunks = 20
        lines = self.setup.feed
        size = -(-len(lines) // chunks)

        def run() -> None:
            for i in range(chunks):
                asyncio.run(publish(lines[i * size:(i + 1) * size], self.setup.nats_url, self.stream, self.prefix))
                if i == chunks // 2:
                    self.half.set()
                time.sleep(self.setup.publish_s / chunks)
            self.half.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def commands_in(self) -> int:
        return int(self.conn.execute(f'SELECT count(*) FROM "{self.schema}".ledger_commands').fetchone()[0])

    def stop_all(self) -> tuple[list[int | None], list[dict[str, Any]]]:
        import json

        for host, proc, host_id in self.hosts:
            if proc.poll() is None and host_id not in self.terminated:  # a removed host is exiting already
                host.mend()
                os.kill(proc.pid, signal.SIGCONT)
                os.kill(proc.pid, signal.SIGTERM)
        exits: list[int | None] = []
        stats: list[dict[str, Any]] = []
        for _, proc, _ in self.hosts:
            try:
                out, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
                exits.append(None)
                stats.append({})
                continue
            exits.append(proc.returncode)
            last = out.decode(errors="replace").strip().splitlines()
            stats.append(json.loads(last[-1]) if last and last[-1].startswith("{") else {})
        return exits, stats

    def close(self) -> None:
        import asyncio

        import nats

        async def drop() -> None:
            nc = await nats.connect(self.setup.nats_url)
            try:
                await nc.jetstream().delete_stream(self.stream)
            except Exception:  # never made (the trial failed before publishing)
                pass
            await nc.close()

        for host, _, _ in self.hosts:
            host.remove()
        self.lab.hosts.clear()
        asyncio.run(drop())
        self.conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


def differences(got: tuple[Any, Any], want: tuple[Any, Any]) -> str:
    """What differs between two stores' facts, in a line."""
    events = [k for k in set(got[0]) | set(want[0]) if got[0].get(k) != want[0].get(k)]
    commands = [k for k in set(got[1]) | set(want[1]) if got[1].get(k) != want[1].get(k)]
    shorter = sum(1 for k in events if len(got[0].get(k, [])) < len(want[0].get(k, [])))
    return (f"{len(events)} aggregates' events differ ({shorter} of them shorter than a clean ingest's); "
            f"{len(commands)} commands differ, e.g. {[(k, got[1].get(k), want[1].get(k)) for k in commands[:2]]}")


def server_now(conn: Any) -> Any:
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]


def takeover(run: LeaseRun, victim: str, at: Any, timeout_s: float) -> float:
    """Seconds from `at` (the server's clock) until every slot `victim` held is live in another
    host's hands (the slots' acquired_at); the timeout when they are not by then."""
    before = {name for name, _, _ in slot_holders(run.conn, run.schema).get(victim, [])}

    def taken() -> bool:
        held = slot_holders(run.conn, run.schema)
        mine = {n for h, rows in held.items() if h != victim for n, _, _ in rows}
        return before <= mine

    if not wait_until(taken, timeout_s):
        return timeout_s
    held = slot_holders(run.conn, run.schema)
    times = [(acquired - at).total_seconds() for h, rows in held.items() if h != victim
             for name, _, acquired in rows if name in before]
    return max(times, default=0.0)


def lease_trial(kind: str, setup: LeaseSetup, lab: Any, tmp: str) -> LeaseTrial:
    """One trial of `kind` with `setup.hosts` hosts (see the module doc)."""
    bound = lease_bound_s(setup.lease_ms)
    with admin(setup.base) as conn:
        run = LeaseRun(setup, lab, conn, tmp)
        conn.execute(f'CREATE SCHEMA "{run.schema}"')
        open_app(run.url).close()  # the ledger's tables (the leases' too), made once before the hosts start
        try:
            for _ in range(setup.hosts):
                run.start_host()
            names = [h for _, _, h in run.hosts]
            note = "" if wait_until(lambda: balanced(conn, run.schema, names), 60) else "never balanced at start"
            publisher = run.publish_over_time()
            run.half.wait(timeout=60)
            seconds = fault(kind, run, bound)
            publisher.join(timeout=120)
            expected = setup.commands
            if not wait_until(lambda: run.commands_in() >= expected, setup.drain_s, 0.2):
                note = note or f"the store holds {run.commands_in()} of {expected} commands after {setup.drain_s:g} s"
            exits, stats = run.stop_all()
            facts = store_facts(run.url)
            equal = facts == setup.clean
            note = note or ("" if equal else differences(facts, setup.clean))
            return LeaseTrial(kind, seconds, bound if kind != "add" else float("inf"), equal, exits, stats, note)
        finally:
            run.close()


def fault(kind: str, run: LeaseRun, bound: float) -> float:
    """Apply the fault to the first host (or add one); the takeover (or rebalancing) time."""
    host, proc, victim = run.hosts[0]
    lease_s = run.setup.lease_ms / 1000
    at = server_now(run.conn)
    started = time.monotonic()
    if kind == "add":
        run.start_host()
        names = [h for _, _, h in run.hosts]
        wait_until(lambda: balanced(run.conn, run.schema, names), 120)
        return time.monotonic() - started
    if kind == "kill":
        os.kill(proc.pid, signal.SIGKILL)
    elif kind == "remove":
        run.terminated.add(victim)
        os.kill(proc.pid, signal.SIGTERM)
    elif kind == "cut":
        host.cut()
    elif kind == "freeze":
        os.kill(proc.pid, signal.SIGSTOP)
    seconds = takeover(run, victim, at, bound + 10)
    if kind in ("cut", "freeze"):
        time.sleep(max(0.0, 2 * lease_s - (time.monotonic() - started)))  # longer than the lease, then back
        host.mend() if kind == "cut" else os.kill(proc.pid, signal.SIGCONT)
        time.sleep(lease_s)  # back: a lease time for it to find out what it lost (then the feed drains)
    return seconds


def lease_trials(setup: LeaseSetup, kinds: Sequence[str], trials: int, out: Any = sys.stdout) -> list[LeaseTrial]:
    from ops.bench.netns import Lab

    done: list[LeaseTrial] = []
    with tempfile.TemporaryDirectory() as tmp, Lab(lab_ports(setup.base, setup.nats_url)) as lab:
        for kind in kinds:
            for i in range(trials):
                t = lease_trial(kind, setup, lab, tmp)
                done.append(t)
                print(f"{kind} {i}: {'balanced after' if kind == 'add' else 'slots taken over in'} {t.takeover_s:.2f} s"
                      f"{'' if kind == 'add' else f' (bound {t.bound_s:.2f} s)'}; store "
                      f"{'equal to' if t.equal else 'DIFFERS from'} a clean ingest; exits {t.exits}; refused "
                      f"batches {t.refused}; slots lost {[s.get('lost') for s in t.stats]}, handed "
                      f"{[s.get('handed') for s in t.stats]}{'; ' + t.note if t.note else ''}", file=out, flush=True)
    return done


def lease_summary(done: Sequence[LeaseTrial], out: Any = sys.stdout) -> None:
    for kind in LEASE_KINDS:
        ts = [t for t in done if t.kind == kind]
        if ts:
            times = sorted(t.takeover_s for t in ts)
            print(f"{kind}: {sum(t.ok for t in ts)} of {len(ts)} passed; {'balanced' if kind == 'add' else 'takeover'} "
                  f"median {times[len(times) // 2]:.2f} s, longest {times[-1]:.2f} s", file=out)


if __name__ == "__main__":
    sys.exit(main())

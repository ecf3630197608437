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
Exit status 1 when any run or trial failed.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
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
    schema = f"fault_clean_{uuid.uuid4().hex[:12]}"
    with admin(base) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        try:
            ingest_here(schema_url(base, schema), feed, workers=1)
            return store_facts(schema_url(base, schema))
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
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())

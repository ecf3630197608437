"""`ledger demo`: simulate a studio, ingest it into a fresh store, print the back-office view."""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING

from ops.cli.errors import CliError, ErrorCode
from ops.cli.options import add_command, int_range
from ops.sim.simulator import ROUNDS_MAX, TABLES_MAX, Studio

if TYPE_CHECKING:
    from ledger.batching import Result
    from ops.demo.report import DemoData, Section

DEFAULT_DEMO_DB = "sqlite:///./casino-ledger-demo.db"
DEFAULT_TABLES = 10
DEFAULT_ROUNDS = 100
DEFAULT_SEED = 2026
DEFAULT_FAULT_RATE = 40  # per mille of rounds
INGEST_REPORT_EVERY = 2_000  # commands between progress lines
INGEST_BATCH_SIZE = 500

EPILOG = f"""\
What it does: simulates a studio (every rule set: live blackjack, spielbank,
casino-tour, baccarat, Teen Patti 20-20) with players following basic
strategy, bet behind, side bets, insurance, splits and doubles, and faults
({DEFAULT_FAULT_RATE} per mille of rounds by default: timeouts, disconnects,
host interruptions, dealer errors, duplicates, early voids, bad commands,
reversals); ingests the feed through the ledger into a FRESH store; prints
rounds by game and outcome, voids by cause with refunds, money staked / paid /
held, refusals by code, and the money invariants. Exit status 1 if an
invariant fails.

The default store is {DEFAULT_DEMO_DB} and is deleted first.
A --db store that already holds events (or a file that is not a ledger) is
refused: a demo never mixes with or destroys real data. --force deletes such a
SQLite file first; a PostgreSQL store is never emptied, point the demo at an
empty schema: postgresql://postgres@127.0.0.1:5432/postgres?schema=demo.

Examples:
  ledger demo
  ledger demo --tables 5 --rounds 20 --seed 7
  ledger demo --db sqlite:///./demo2.db --fault-rate 100
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "demo", "simulate a studio, ingest it into a fresh store, print the back-office summary",
                    run_demo, epilog=EPILOG,
                    description="Simulate a studio of every rule set, ingest its feed, and print what a back office "
                    "sees.")
    p.add_argument("--db", metavar="URL", help=f"store URL (default {DEFAULT_DEMO_DB}, deleted first)")
    p.add_argument("--tables", type=int_range(1, TABLES_MAX), default=DEFAULT_TABLES, metavar="N",
                   help=f"tables, dealt over the rule sets (default {DEFAULT_TABLES})")
    p.add_argument("--rounds", type=int_range(1, ROUNDS_MAX), default=DEFAULT_ROUNDS, metavar="M",
                   help=f"rounds per table (default {DEFAULT_ROUNDS})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="S", help=f"random seed (default {DEFAULT_SEED})")
    p.add_argument("--fault-rate", type=int_range(0, 1000), default=DEFAULT_FAULT_RATE, metavar="PER_MILLE",
                   help=f"rounds with an injected fault, per mille (default {DEFAULT_FAULT_RATE})")
    p.add_argument("--audit-dir", default="casino-ledger-demo-audit", metavar="DIR",
                   help="where the audit export goes (default ./casino-ledger-demo-audit, replaced)")
    p.add_argument("--quiet", action="store_true", help="no progress on standard error")
    p.add_argument("--force", action="store_true", help="delete a --db SQLite file that holds events first")


def _fresh_store(db_url: str, force: bool) -> None:
    """Start the demo on an empty store: the default file is the demo's own and is
    deleted; any other store that holds something is refused unless --force (SQLite)."""
    from ledger.store import StoreUnavailable, holds_events

    sqlite = db_url.startswith("sqlite:///")
    path = db_url[len("sqlite:///"):] if sqlite else ""
    try:
        used = holds_events(db_url)
    except StoreUnavailable as exc:
        if not (sqlite and exc.code == ErrorCode.STORE_UNREACHABLE and os.path.isfile(path)):
            raise
        used = True  # a file that is not a ledger: somebody's data all the same
    if used and db_url != DEFAULT_DEMO_DB and not (force and sqlite):
        hint = "--force deletes it first" if sqlite else "use an empty schema (?schema=demo)"
        raise CliError(ErrorCode.STORE_NOT_EMPTY, f"{db_url} already holds data; the demo needs an empty store "
                       f"({hint})")
    if sqlite and not os.path.isdir(os.path.dirname(os.path.abspath(path))):  # open_app would say so, too late
        raise StoreUnavailable(ErrorCode.STORE_UNREACHABLE, f"{db_url}: the folder of {path} does not exist")
    for suffix in ("", "-wal", "-shm", "-journal") if sqlite else ():
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def _progress(quiet: bool, text: str) -> None:
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def closing_sections(data: DemoData, args: argparse.Namespace) -> list[Section]:
    """Projections, audit export + verify, replay of every round (see ops/demo/audit.py)."""
    from ops.demo.audit import audit_section, projections_section, replay_section

    _progress(getattr(args, "quiet", False), "projecting views, exporting and verifying the audit trail, replaying")
    return [projections_section(data), audit_section(data, args.audit_dir), replay_section(data)]


def run_demo(args: argparse.Namespace) -> int:
    from ledger.partitions import default_workers
    from ledger.store import open_app
    from ops.demo.report import DemoData, build_report, render

    quiet = getattr(args, "quiet", False)
    db_url = args.db or DEFAULT_DEMO_DB
    _fresh_store(db_url, getattr(args, "force", False))  # before minutes of simulation are spent
    seconds: dict[str, float] = {}
    t0 = time.monotonic()
    studio = Studio(args.tables, args.rounds, args.seed, args.fault_rate)
    feed = list(studio.lines())
    seconds["simulate"] = time.monotonic() - t0
    _progress(quiet, f"simulated {studio.stats.rounds_total} rounds on {len(studio.stats.tables)} tables: "
                     f"{len(feed)} commands")
    app = open_app(db_url)
    t1 = time.monotonic()
    done = 0

    def progress(batch: list[Result]) -> None:
        nonlocal done
        before, done = done, done + len(batch)
        if done // INGEST_REPORT_EVERY > before // INGEST_REPORT_EVERY or done == len(feed):
            _progress(quiet, f"  ingested {done}/{len(feed)} commands ({time.monotonic() - t1:.1f}s)")

    results = app.ingest(feed, batch_size=INGEST_BATCH_SIZE, on_batch=progress, workers=default_workers())
    seconds["ingest"] = time.monotonic() - t1
    data = DemoData(app=app, db_url=db_url, feed=studio.stats, results=results, seconds=seconds)
    t2 = time.monotonic()
    _ = data.facts  # read every event once
    seconds["read back"] = time.monotonic() - t2
    sections = build_report(data)
    sections += closing_sections(data, args)
    print(f"casino-ledger demo: seed {args.seed}, {args.tables} tables x {args.rounds} rounds, "
          f"fault rate {args.fault_rate}/1000\n")
    print(render(sections))
    app.close()
    return 0 if all(s.ok for s in sections) else 1

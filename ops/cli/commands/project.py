"""`ledger project`: bring every view (rounds, balances, recall, refunds, ggr)
up to date with the events, exactly once; `--rebuild` empties them and
replays from position 0. The query commands (balances, refunds, recall, ggr)
catch up quietly before they answer."""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict

from ledger.eventlog import PAGE_SIZE_MAX
from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_quiet_argument,
    catch_up_with_progress,
    int_range,
)
from projections.read_service import ReadService
from projections.runner import PAGE_SIZE_DEFAULT, stops_line

EPILOG = """\
Views are plain tables in the ledger's own database (proj_rounds, proj_balances,
proj_recall, proj_recall_rounds, proj_refunds, proj_ggr, ...; see docs/projections.md).
Each page of events is written with the views' positions (proj_tracking) in one
transaction, so a crash or a second runner never counts an event twice.
A view whose fold or write fails on an event stops there (so do the views that
read it; proj_stops): the others catch up, and the exit status is 1.

Examples:
  ledger project                      # catch up (progress bar on stderr)
  ledger project --rebuild            # empty the views and replay everything
  ledger project --db postgresql://postgres@127.0.0.1:5432/ledger --json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "project", "bring the query views up to date (exactly once); --rebuild from scratch", run,
                    description=__doc__, epilog=EPILOG)
    add_db_argument(p)
    p.add_argument("--rebuild", action="store_true", help="empty every view and replay from position 0")
    p.add_argument("--page-size", type=int_range(1, PAGE_SIZE_MAX), default=PAGE_SIZE_DEFAULT, metavar="N",
                   help=f"events per transaction (default {PAGE_SIZE_DEFAULT})")
    add_json_argument(p, "print the result as JSON on stdout")
    add_quiet_argument(p)


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    # A projector may start beside the first ingest: the store must exist, its ledger may come.
    with ReadService.open(args.db, ledger_required=False, page_size=args.page_size) as service, \
            service.projector() as projector:
        if args.rebuild:
            projector.rebuild()
        result = catch_up_with_progress(projector, args.quiet)
        positions = dict(projector.positions)
    elapsed_s = time.monotonic() - started
    summary = {"rebuilt": args.rebuild, "events": result.events, "pages": result.pages,
               "rows_written": result.rows_written, "conflicts": result.conflicts, "positions": positions,
               "elapsed_s": round(elapsed_s, 3), "finding": result.finding,
               "stopped": [asdict(stop) for stop in result.stopped]}
    if args.json:
        print(json.dumps(summary, indent=2))
    elif not args.quiet:
        rate = f", {result.events / elapsed_s:,.0f} events/s" if result.events and elapsed_s > 0 else ""
        print(f"{'rebuilt' if args.rebuild else 'caught up'}: {result.events} events in {result.pages} pages "
              f"({result.rows_written} rows written{rate}); views at position {max(positions.values(), default=0)}",
              file=sys.stderr)
    if result.finding:  # a store altered behind the ledger's back: the views stop short of it
        print(f"ledger project: stopped: {result.finding}", file=sys.stderr)
        return 1
    if result.stopped:  # the command ran, the other views are caught up; the answer is "not all of them"
        print(f"ledger project: stopped: {stops_line(result.stopped)}", file=sys.stderr)
        return 1
    return 0

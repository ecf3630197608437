"""`ledger ingest FEED.jsonl`: apply a studio feed to the store, in batches."""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator

from ledger import logging as ledger_logging
from ledger.app import BATCH_SIZE_DEFAULT, BATCH_SIZE_MAX, Result
from ledger.shards import WORKERS_MAX
from ledger.store import db_url_from, open_app

EPILOG = """\
One JSON command per line (docs/feed.md). Commands are checked one by one and
saved in batches (one transaction per batch). Examples:

  ledger ingest feed.jsonl
  ledger simulate --tables 5 --rounds 20 | ledger ingest - --db sqlite:///demo.db
  ledger ingest feed.jsonl --db postgresql://postgres@127.0.0.1:5432/postgres --json
  ledger ingest big-day.jsonl --workers 2     # tables split over 2 processes (reads the file first)

--workers N (default 1) checks the feed's tables in N processes at once: each
table goes whole to one process, in feed order. The file is read in full first,
so keep 1 for a live stream on standard input.

Exit status: 0 everything accepted (or duplicate); 1 something was refused or
conflicted (use --allow-refusals when refusals are expected, e.g. fault feeds).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="apply a JSONL feed of commands to the store", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("feed", metavar="FEED.jsonl", help="feed file ('-' for standard input)")
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE_DEFAULT,
                   help=f"commands per transaction, 1..{BATCH_SIZE_MAX} (default {BATCH_SIZE_DEFAULT})")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help=f"processes, each checking a share of the tables, 1..{WORKERS_MAX} (default 1)")
    p.add_argument("--allow-refusals", action="store_true", help="exit 0 even when commands were refused")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--log-level", default="info", help="debug logs one line per command")
    p.set_defaults(func=run)


def _lines(path: str) -> Iterator[bytes]:
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    with stream:
        for line in stream:
            if line.strip():
                yield line


def summarize(results: list[Result]) -> dict:
    by_status = Counter(r.status for r in results)
    refused = Counter(r.code for r in results if r.status in ("refused", "conflict"))
    return {
        "commands": len(results),
        "accepted": by_status["accepted"],
        "duplicate": by_status["duplicate"],
        "refused": by_status["refused"],
        "conflict": by_status["conflict"],
        "events": sum(len(r.events) for r in results),
        "refused_by_code": dict(sorted(refused.items())),
    }


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.batch_size <= BATCH_SIZE_MAX:
        print(f"--batch-size must be 1..{BATCH_SIZE_MAX}", file=sys.stderr)
        return 2
    if not 1 <= args.workers <= WORKERS_MAX:
        print(f"--workers must be 1..{WORKERS_MAX}", file=sys.stderr)
        return 2
    ledger_logging.configure(args.log_level)
    log = ledger_logging.get_logger()
    app = open_app(args.db)
    results: list[Result] = []
    try:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} commands"),
                      TimeElapsedColumn(), console=console, transient=not console.is_terminal) as progress:
            task = progress.add_task("ingesting", total=None)
            results = app.ingest(_lines(args.feed), batch_size=args.batch_size, workers=args.workers,
                                 on_batch=lambda batch: progress.advance(task, len(batch)))
    finally:
        app.close()
    summary = summarize(results)
    log.info("ingest finished", db=db_url_from(args.db).split("@")[-1], **{k: v for k, v in summary.items()})
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['commands']} commands: {summary['accepted']} accepted, {summary['duplicate']} duplicate, "
              f"{summary['refused']} refused, {summary['conflict']} conflict; {summary['events']} events recorded")
        for code, n in summary["refused_by_code"].items():
            print(f"  {code}: {n}")
    failed = summary["refused"] + summary["conflict"]
    return 1 if failed and not args.allow_refusals else 0

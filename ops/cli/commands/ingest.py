"""`ledger ingest FEED.jsonl`: apply a studio feed to the store, in batches."""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ledger import logging as ledger_logging
from ledger.app import BATCH_SIZE_DEFAULT, BATCH_SIZE_MAX, LedgerApp, Result
from ledger.partitions import WORKERS_MAX
from ledger.store import db_url_from, open_app
from ops.cli.errors import CliError, ErrorCode, check_input_file
from ops.cli.options import Progress, add_command, add_json_argument, add_quiet_argument, int_range
from ops.service.stream import STREAM_MAX_WAIT_MS_DEFAULT, results_writer, stream_batches

LOG_LEVELS = ("debug", "info", "warning", "error")
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C

EPILOG = """\
One JSON command per line (docs/feed.md). Commands are checked one by one and
saved in batches (one transaction per batch). Examples:

  ledger ingest feed.jsonl
  ledger simulate --tables 5 --rounds 20 | ledger ingest - --db sqlite:///demo.db
  ledger ingest feed.jsonl --db postgresql://postgres@127.0.0.1:5432/postgres --json
  ledger ingest big-day.jsonl --workers 2     # tables split over 2 processes

--workers N (default 1) checks the feed's tables in N processes at once: each
table goes whole to one process, in feed order. A process's batch is written when
it is full, so keep 1 for a slow live stream on standard input. A UTF-8 byte-order
mark at the start is accepted; blank lines are skipped and counted.

Exit status: 0 everything accepted (or duplicate); 1 something was refused or
conflicted (use --allow-refusals when refusals are expected, e.g. fault feeds);
2 the feed or the store could not be used (one line on standard error).
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "ingest", "apply a JSONL feed of commands to the store", run, epilog=EPILOG)
    p.add_argument("feed", metavar="FEED.jsonl", help="feed file ('-' for standard input)")
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    p.add_argument("--batch-size", type=int_range(1, BATCH_SIZE_MAX), default=BATCH_SIZE_DEFAULT,
                   help=f"commands per transaction, 1..{BATCH_SIZE_MAX} (default {BATCH_SIZE_DEFAULT})")
    p.add_argument("--workers", type=int_range(1, WORKERS_MAX), default=1, metavar="N",
                   help=f"processes, each checking a share of the tables, 1..{WORKERS_MAX} (default 1)")
    p.add_argument("--max-wait-ms", type=float, default=None, metavar="MS",
                   help="with FEED '-': commit what has arrived after MS milliseconds (default 50)")
    p.add_argument("--results", metavar="FILE", help="one JSON result per command, in feed order ('-': stdout)")
    p.add_argument("--allow-refusals", action="store_true", help="exit 0 even when commands were refused")
    add_json_argument(p, "print the summary as JSON")
    p.add_argument("--log-level", choices=LOG_LEVELS,
                   help="debug logs one line per command (default info: the summary line; warning with --quiet)")
    add_quiet_argument(p, "and no log line below warning (the 'ingest finished' line)")


BOM = b"\xef\xbb\xbf"


def _lines(path: str, blank: Counter[str]) -> Iterator[bytes]:
    """The feed's lines as they are read; a UTF-8 byte-order mark before the first is
    dropped, blank lines are counted in `blank["lines"]` and skipped. The first line
    that is not blank must be a JSON object (`check_feed_line`)."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    first = True
    with stream:
        for n, line in enumerate(stream):
            if n == 0 and line.startswith(BOM):
                line = line[len(BOM):]
            if not line.strip():
                blank["lines"] += 1
                continue
            if first:
                check_feed_line(path, line)
                first = False
            yield line


def check_feed_line(path: str, line: bytes) -> None:
    """A file whose first command is not a JSON object is not a feed (a wallet CSV, a JSON
    array, a log): stop before anything is stored, rather than refuse each of its lines."""
    try:
        # not strict: a control character inside a string is still a feed's line (refused as text_invalid)
        command = json.loads(line, strict=False)
    except ValueError:  # UnicodeDecodeError is one: the first line is not text
        command = None
    if not isinstance(command, dict):
        name = "standard input" if path == "-" else path
        raise CliError(ErrorCode.INPUT_INVALID, f"{name} is not a feed of JSON lines: its first line is not a "
                       f"JSON object ({_shown(line)}); nothing was stored")


def _shown(line: bytes, width: int = 40) -> str:
    text = line.strip().decode("utf-8", "replace")
    return repr(text if len(text) <= width else text[:width] + "...")


def _first_line(path: str) -> bytes | None:
    """The first line that is not blank (a byte-order mark dropped), or None."""
    with open(path, "rb") as f:
        for n, line in enumerate(f):
            if n == 0 and line.startswith(BOM):
                line = line[len(BOM):]
            if line.strip():
                return line
    return None


class Tally:
    """The summary, kept up to date batch by batch (no result is kept: memory stays flat)."""

    def __init__(self) -> None:
        self.by_status: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.events = 0
        self.duplicate_of_refused = 0  # re-sent lines that were refused the first time

    def add(self, results: list[Result]) -> None:
        for r in results:
            self.by_status[r.status] += 1
            self.events += len(r.events)
            if r.status in ("refused", "conflict"):
                self.refused[str(r.code)] += 1
            elif r.status == "duplicate" and r.original_status == "refused":
                self.duplicate_of_refused += 1


def _summary(tally: Tally, blank_lines: int = 0) -> dict[str, Any]:
    by_status = tally.by_status
    return {
        "commands": sum(by_status.values()),
        "accepted": by_status["accepted"],
        "duplicate": by_status["duplicate"],
        "duplicate_of_refused": tally.duplicate_of_refused,
        "refused": by_status["refused"],
        "conflict": by_status["conflict"],
        "events": tally.events,
        "refused_by_code": dict(sorted(tally.refused.items())),
        "blank_lines": blank_lines,
    }


def _lines_in(feed: str) -> int | None:
    """The progress total: the feed's lines (blank ones too, so approximately its
    commands); unknown for standard input. One fast pass over the file's bytes."""
    if feed == "-":
        return None
    with open(feed, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _open_output(path: str) -> TextIO:
    try:
        return open(path, "w")
    except OSError as exc:  # an output: not the input_unreadable an OSError means elsewhere
        raise CliError(ErrorCode.OUTPUT_UNWRITABLE, f"--results {path}: {exc.strerror or exc}") from None


def _apply(args: argparse.Namespace, app: LedgerApp, results_out: TextIO | None, tally: Tally,
           blank: Counter[str]) -> None:
    """The feed into the store, batch by batch; `tally` counts what each commit recorded."""
    with Progress("ingest", _lines_in(args.feed), quiet=args.quiet) as progress:
        write = results_writer(results_out) if results_out else None
        if args.feed == "-" and args.workers == 1:  # a live stream: commit on time too
            wait = STREAM_MAX_WAIT_MS_DEFAULT if args.max_wait_ms is None else args.max_wait_ms
            batches = stream_batches(app, _lines("-", blank), args.batch_size, wait)
        else:
            batches = app.ingest_batches(_lines(args.feed, blank), args.batch_size, args.workers)
        for batch in batches:
            with _ctrl_c_deferred():  # a committed batch is counted and written whole, or neither
                tally.add(batch)
                progress.advance(len(batch))
                if write:
                    write(batch)


@contextmanager
def _ctrl_c_deferred() -> Iterator[None]:
    """Ctrl-C (SIGINT) during the block is raised as it ends: what the interruption message
    counts and what the results file holds are the same batches. The main thread only (where
    Python runs signal handlers); elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt


def _interrupted(tally: Tally) -> str:
    """What Ctrl-C left committed (the batch in hand was rolled back; one whose commit ended in
    the very instant of the Ctrl-C is in the store but neither counted nor written), and how to
    go on: the same command again answers what was committed `duplicate` and applies the rest."""
    done = _summary(tally)
    return (f"ledger ingest: interrupted: {done['commands']} commands committed ({done['accepted']} accepted, "
            f"{done['duplicate']} duplicate, {done['refused']} refused, {done['conflict']} conflict; "
            f"{done['events']} events recorded); run the same command again to resume "
            "(what was committed answers duplicate)")


def run(args: argparse.Namespace) -> int:
    check_input_file(args.feed)  # before the store is opened (and perhaps created)
    if args.feed != "-" and (first := _first_line(args.feed)) is not None:
        check_feed_line(args.feed, first)  # standard input: as it is read (_lines), before its first batch
    ledger_logging.configure(args.log_level or ("warning" if args.quiet else "info"))
    log = ledger_logging.get_logger()
    # the results file before the store: a store is not created for a run that cannot write
    results_out = sys.stdout if args.results == "-" else _open_output(args.results) if args.results else None
    try:
        app = open_app(args.db)
    except BaseException:
        if results_out not in (None, sys.stdout):
            results_out.close()
        raise
    tally, blank = Tally(), Counter[str]()
    try:
        _apply(args, app, results_out, tally, blank)
    except KeyboardInterrupt:
        print(_interrupted(tally), file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        app.close()
        if results_out not in (None, sys.stdout):
            results_out.close()
    summary = _summary(tally, blank["lines"])
    log.info("ingest finished", db=db_url_from(args.db).split("@")[-1], **{k: v for k, v in summary.items()})
    out = sys.stderr if args.results == "-" else sys.stdout  # stdout carries the results then
    if args.json:
        print(json.dumps(summary, indent=2), file=out)
    else:
        again = summary["duplicate_of_refused"]
        print(f"{summary['commands']} commands: {summary['accepted']} accepted, {summary['duplicate']} duplicate"
              + (f" ({again} of them refused the first time)" if again else "") + ", "
              f"{summary['refused']} refused, {summary['conflict']} conflict; {summary['events']} events recorded"
              + (f"; {summary['blank_lines']} blank lines skipped" if summary["blank_lines"] else ""), file=out)
        for code, n in summary["refused_by_code"].items():
            print(f"  {code}: {n}", file=out)
    failed = summary["refused"] + summary["conflict"]
    return 1 if failed and not args.allow_refusals else 0

"""`ledger audit export|verify|replay`: hash-chained exports for regulators, their
verifier, and the bulk replay of every round (docs/audit.md)."""
from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ops.cli.errors import CliError, ErrorCode, usage
from ops.cli.options import (
    Progress,
    add_command,
    add_json_argument,
    add_operator_argument,
    add_period_arguments,
    add_quiet_argument,
    add_timezone_argument,
    check_period,
    day,
    gaming_day_zones,
    int_range,
    operator_scope,
)

if TYPE_CHECKING:  # imported lazily at run time: keeps --help fast
    from collections.abc import Callable

    from ledger.eventlog import EventLog
    from projections.audit import Link
    from projections.audit_export import Window

FINDINGS_SHOWN = 50
WORKERS_MAX = 32  # projections.replay_range.WORKERS_MAX (not imported here: keeps --help fast)

EPILOG = """\
Examples:
  ledger audit export exports/2024-05-01 --to 120000
  ledger audit export exports/2024-05-02 --from 120001      # links to the earlier export's manifest
  ledger audit export exports/play-2026-11-21 --played-since 2026-11-21 --played-until 2026-11-22
                                    # the play of a gaming day, whenever it was recorded
  ledger audit verify exports/2024-05-01                     # from the files alone
  ledger audit verify exports/2024-05-01 --db sqlite:///casino-ledger.db   # and against the live store
  ledger audit replay --db sqlite:///casino-ledger.db        # recompute every round, compare payouts
  ledger audit replay --from 120001 --workers 1              # rounds touching positions >= 120001, one process

Exit status: 0 clean; 1 findings (each printed with its position); 2 the command
could not run: bad arguments, an export folder that is not empty (export) or not an
export (verify: no manifest, no events), a store that does not exist.
The canonical form, chain, manifest and finding kinds: docs/audit.md.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "audit", "export the hash-chained audit trail, verify an export, replay every round",
                    description="Audit trail: export (events.jsonl, events.csv, manifest.json), verify, replay.",
                    epilog=EPILOG)
    actions = p.add_subparsers(dest="audit_action", metavar="ACTION")

    e = add_command(actions, "export", "write events.jsonl, events.csv and manifest.json to DIR", run_export)
    e.add_argument("directory", metavar="DIR", help="a new or empty folder (an export is never overwritten)")
    _range_args(e)
    add_period_arguments(e, "events the ledger recorded (server time, not the time of play: see --played-since)")
    e.add_argument("--played-since", type=day, metavar="DAY",
                   help="the events played on or after the gaming day DAY (YYYY-MM-DD; by studio time, in the "
                   "zone of the round's table configuration, else --timezone, as `ledger ggr`): from the first "
                   "event played on those days to the last, with whatever the chain holds between them")
    e.add_argument("--played-until", type=day, metavar="DAY",
                   help="... played before the gaming day DAY (exclusive: --played-since 2026-11-21 "
                   "--played-until 2026-11-22 is one day)")
    add_timezone_argument(e)
    e.add_argument("--previous", metavar="MANIFEST",
                   help="the earlier export's manifest.json to link to (default: the sibling export in DIR's "
                   "parent that ends latest before this one starts)")
    add_operator_argument(e, "bets: the other operators' events' fields redacted, every line's hash kept (the "
                             "export verifies; docs/operators.md)")
    _common(e)

    v = add_command(actions, "verify", "recompute an export's chain from its files (and, with --db, the store)",
                    run_verify)
    v.add_argument("directory", metavar="DIR")
    v.add_argument("--db", metavar="URL", help="also compare with the live store at URL")
    add_operator_argument(v, "export (made with `audit export --operator`): with --db, the store's events redacted "
                             "alike before they are compared")
    add_json_argument(v, "print machine-readable JSON")
    v.add_argument("--findings", type=int_range(0), default=FINDINGS_SHOWN, metavar="N",
                   help=f"print at most N findings, then a count by kind (default {FINDINGS_SHOWN}; --json lists all)")

    r = add_command(actions, "replay", "replay every round with an event in a position range", run_replay)
    _range_args(r)
    _common(r)
    r.add_argument("--workers", type=_workers, metavar="N",
                   help=f"processes replaying rounds in parallel, 1..{WORKERS_MAX} (default: one per core, "
                   "fewer for a small range); the output is the same for any N")
    add_json_argument(r, "print machine-readable JSON")


def _workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= WORKERS_MAX:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number 1..{WORKERS_MAX}")
    return int(text)


def _range_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="from_position", type=int_range(1), metavar="POS", help="first position (inclusive)")
    p.add_argument("--to", dest="to_position", type=int_range(1), metavar="POS", help="last position (inclusive)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", help="store URL (default: LEDGER_DB or sqlite:///./casino-ledger.db)")
    add_quiet_argument(p)


def _check_range(args: argparse.Namespace) -> None:
    lo, hi = args.from_position, args.to_position
    if lo is not None and hi is not None and hi < lo:
        raise usage(f"--to {hi} is before --from {lo}")
    check_period(args)
    since, until = getattr(args, "since", None), getattr(args, "until", None)
    played = args.played_since or args.played_until if hasattr(args, "played_since") else None
    if sum(map(bool, ((since or until), (lo or hi), played))) > 1:
        raise usage("give one of a position range (--from/--to), a recorded period (--since/--until) or "
                    "gaming days of play (--played-since/--played-until)")
    if played and args.played_since and args.played_until and args.played_since >= args.played_until:
        raise usage(f"--played-since {args.played_since} is not before --played-until {args.played_until}")


def _check_new_folder(directory: str) -> None:
    """An export is evidence: never write over another one (or anything else)."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise CliError(ErrorCode.OUTPUT_NOT_EMPTY, f"{directory} is a file, not a folder")
    if path.is_dir() and any(path.iterdir()):
        raise CliError(ErrorCode.OUTPUT_NOT_EMPTY, f"{directory} is not empty; export into a new folder")


def _window(args: argparse.Namespace) -> Window:
    from projections.audit_export import Window

    until = args.played_until and (date.fromisoformat(args.played_until) - timedelta(days=1)).isoformat()
    return Window(args.from_position, args.to_position, args.since, args.until, args.played_since, until,
                  gaming_day_zones(args.timezone).fallback)


def run_export(args: argparse.Namespace) -> int:
    from ledger.eventlog import EventLog
    from ops import version
    from projections.audit_export import export

    _check_range(args)
    _check_new_folder(args.directory)
    log = EventLog.open(args.db)
    head = log.head()
    stop = min(head, args.to_position) if args.to_position else head
    exported_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with Progress("audit export", stop, quiet=args.quiet) as progress:
        result = export(args.directory, log.stored(1, stop, page_size=5000),
                        from_position=args.from_position, to_position=args.to_position,
                        previous_manifest=args.previous, exported_at=exported_at, progress=progress.advance,
                        window=_window(args), software_version=version(), shown=_shown(args))
    m = result.manifest
    if not m["count"]:  # an empty export would only fail verify later: leave the folder as it was
        for name in ("events.jsonl", "events.csv", "manifest.json"):
            (result.directory / name).unlink(missing_ok=True)
        raise CliError(ErrorCode.INPUT_EMPTY, f"no events in the range asked for; nothing exported{_why(args, log)}")
    print(f"exported {m['count']} events (positions {m['first_position']}..{m['last_position']}, "
          f"seq {m['first_seq']}..{m['last_seq']}) to {result.directory}")
    print(f"head hash {m['head_hash']}")
    if m["previous_manifest"]:
        print(f"links to previous manifest {m['previous_manifest']} ({m['previous_manifest_hash']})")
    return 0


def _shown(args: argparse.Namespace) -> Callable[[Link], Link] | None:
    """With --operator, each line as that operator may see it."""
    from projections.redaction import LinkRedactor

    scope = operator_scope(args)
    return None if scope.everyone else LinkRedactor(scope)


def _why(args: argparse.Namespace, log: EventLog) -> str:
    """Why gaming days of play hold nothing (no play on them, or nothing recorded yet)."""
    from projections import queries

    window = _window(args)
    if not window.by_play:
        return ""
    note = queries.empty_period(log, window.played_from, window.played_to, gaming_day_zones(args.timezone))
    return f": {note.message}"


def run_verify(args: argparse.Namespace) -> int:
    from ledger.eventlog import EventLog
    from projections import queries

    _check_export_folder(args.directory)
    log = EventLog.open(args.db) if args.db else None
    try:
        check = queries.verify_export(args.directory, log, operator_scope(args))
    finally:
        if log is not None:
            log.close()
    findings = check.findings
    if args.json:
        print(json.dumps({"directory": args.directory, "count": check.count, "head_hash": check.head_hash,
                          "checked_store": check.checked_store, "findings": [asdict(f) for f in findings]}, indent=2))
    else:
        scope = "files and the live store" if args.db else "files alone"
        print(f"verified {check.events_read} events of {args.directory} ({scope}); "
              f"positions {check.first_position}..{check.last_position}, head {check.head_hash}")
        for f in findings[:args.findings]:
            print(f"  {f}")
        if len(findings) > args.findings:
            kinds = Counter(f.kind for f in findings)
            print(f"  ... {len(findings) - args.findings} more (--findings N or --json); by kind: "
                  + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        print(f"{len(findings)} finding(s)" if findings else "intact: no findings")
    return 1 if findings else 0


def _check_export_folder(directory: str) -> None:
    """What verify reads must be an export: a folder with a manifest and events in it."""
    from projections.audit_export import EVENTS_JSONL, MANIFEST

    path = Path(directory)
    if not path.exists():
        raise CliError(ErrorCode.INPUT_MISSING, f"{directory} does not exist")
    if not path.is_dir():
        raise CliError(ErrorCode.INPUT_INVALID, f"{directory} is a file; give the export's folder")
    if not any(path.iterdir()):
        raise CliError(ErrorCode.INPUT_EMPTY, f"{directory} is empty: not an export")
    if not (path / MANIFEST).is_file():
        raise CliError(ErrorCode.INPUT_INVALID, f"{directory} has no {MANIFEST}: not an export, nothing to verify "
                       "against")
    events = path / EVENTS_JSONL
    if not events.is_file() or events.stat().st_size == 0:
        raise CliError(ErrorCode.INPUT_EMPTY, f"{directory}/{EVENTS_JSONL} is missing or empty: no events to verify")


def run_replay(args: argparse.Namespace) -> int:
    from ledger.eventlog import EventLog

    _check_range(args)
    log = EventLog.open(args.db)
    started = time.perf_counter()
    head = log.head()  # the high-water mark: what a writer appends from now on is not read
    with Progress("audit replay", head, quiet=args.quiet) as progress:
        summary = replay_all(log, args.from_position or 1, args.to_position, progress.advance, workers=args.workers,
                             through=head)
    elapsed = time.perf_counter() - started
    if args.json:
        print(json.dumps({**summary, "findings": [f.as_dict() for f in summary["findings"]],
                          "seconds": round(elapsed, 3)}, indent=2))
    else:
        for f in summary["findings"]:
            print(f"  {summary['labels'].get(f.position, '')} {f}")
        print(f"checked {summary['rounds']} rounds ({summary['events']} round events, "
              f"{summary['bets_checked']} settlement lines) in {elapsed:.2f}s with {summary['workers']} "
              f"worker(s), the store as of position {summary['through']}: "
              f"{len(summary['findings'])} finding(s)")
    return 1 if summary["findings"] else 0


def replay_all(log: EventLog, start: int = 1, stop: int | None = None, progress: Any = None,
               workers: int | None = None, through: int | None = None) -> dict[str, Any]:
    """Recompute every round with an event in [start, stop]; counts and findings
    (projections/replay_range.py). `workers` None: one process per core, fewer for small ranges.
    `through`: the high-water mark, the last position read (None: the head now)."""
    from projections.replay_range import replay_range

    r = replay_range(log, start, stop, progress, workers, through)
    return {"rounds": r.rounds, "events": r.events, "bets_checked": r.bets_checked, "findings": r.findings,
            "labels": r.labels, "workers": r.workers, "through": r.through}

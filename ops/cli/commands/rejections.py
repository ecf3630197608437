"""`ledger rejections`: the append-only log of refused commands."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from domain.refusals import RefusalCode
from ledger.eventlog import EventLog
from ops.cli.options import add_command, add_json_argument, add_operator_argument, int_range, operator_scope, say_cut
from projections import queries


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "rejections", "list refused commands (code, reason, payload)", run, wrap=True,
                    description="Every refused command is kept: command id, round, code, message, raw payload, "
                    "and when the ledger received it (`received_at`, UTC, server time). Rejections are listed by "
                    "the time they were received, never by gaming day: a refused line may name no table (or not "
                    "be JSON at all), so it has no gaming day.")
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    p.add_argument("--code", type=refusal_code, help="only this refusal code (docs/refusals.md)")
    p.add_argument("--limit", type=int_range(1), default=1000, help="at most this many rows (default 1000)")
    p.add_argument("--after", type=int_range(0), default=0, metavar="ID",
                   help="only rejections after this id (the first column): the next page of a cut list")
    add_operator_argument(p, "refused commands (a bet, a player's decision or pause, or this operator's "
                             "configuration; a refusal naming no operator's player is the studio's, docs/operators.md)")
    add_json_argument(p, "one JSON object per line")


def refusal_code(text: str) -> str:
    """An argparse type: a code of the refusal catalogue (a typo would list nothing, silently)."""
    if text not in {c.value for c in RefusalCode}:
        raise argparse.ArgumentTypeError(f"{text!r} is not a refusal code (see docs/refusals.md)")
    return text


def run(args: argparse.Namespace) -> int:
    log = EventLog.open(args.db)
    try:  # one more than asked: whether the list is cut
        rows = [asdict(r) for r in queries.rejections(log, args.code, after=args.after, limit=args.limit + 1,
                                                      scope=operator_scope(args))]
    finally:
        log.close()
    cut = len(rows) > args.limit
    rows = rows[:args.limit]
    for r in rows:
        if args.json:
            print(json.dumps(r))
        else:
            where = f"{r['table_id']}#{r['round_no']}" if r["table_id"] else "-"
            print(f"{r['id']:>6} {r['received_at'][:19]} {where:<20} {r['command_id'] or '-':<28} "
                  f"{r['code']}: {r['message']}")
    if not rows and not args.json:
        print("no rejections")
    if cut:
        say_cut("rejections", len(rows), f"--after {rows[-1]['id']} lists the next ones (or a larger --limit)",
                args.json, after=rows[-1]["id"])
    return 0

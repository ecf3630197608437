"""`ledger round show ID`: one round's events, cards, bets and settlement."""
from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from domain.money import format_minor
from ledger.round import round_id_for
from ledger.store import open_app

REF_RE = re.compile(r"^(?P<table>.+)#(?P<no>\d{1,12})$")
COMMON = {"originator_id", "originator_version", "timestamp", "command_id", "studio_time"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("round", help="look at one round")
    rsub = p.add_subparsers(dest="round_command", metavar="ACTION")
    show = rsub.add_parser("show", help="events, cards, bets and settlement of one round",
                           description="ID is the round UUID or TABLE#ROUND_NO, e.g. bacc-1#12.")
    show.add_argument("id", metavar="ID")
    show.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    show.add_argument("--json", action="store_true", help="machine-readable JSON")
    show.set_defaults(func=run_show)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def parse_ref(ref: str) -> UUID:
    m = REF_RE.match(ref)
    if m:
        return round_id_for(m.group("table"), int(m.group("no")))
    return UUID(ref)


def describe(app: Any, round_uuid: UUID) -> dict[str, Any]:
    rnd = app.get_round(round_uuid)
    events = []
    for e in app.repository.event_store.get(round_uuid):
        fields = {k: v for k, v in vars(e).items() if k not in COMMON}
        events.append({"version": e.originator_version, "event": type(e).__name__, "command_id": e.command_id,
                       "studio_time": e.studio_time, "recorded_at": e.timestamp.isoformat(), **fields})
    return {
        "round_id": str(rnd.id), "table_id": rnd.table_id, "round_no": rnd.round_no, "game": rnd.game,
        "ruleset": f"{rnd.rules.id} v{rnd.rules.version}" if rnd.rules else None, "currency": rnd.currency,
        "shoe_id": rnd.shoe_id, "round_in_shoe": rnd.round_in_shoe, "phase": rnd.phase, "paused": rnd.paused,
        "voided": rnd.voided, "balance_minor": rnd.balance_minor,
        "bets": [{"bet_id": b.bet_id, "player_id": b.player_id, "spot": b.spot, "bet_type": b.bet_type,
                  "stake_minor": b.stake_minor, "mode": b.mode} for b in rnd.bets.values()],
        "cards": [{"seq_no": s, "card": c, "target": t} for s, c, t in rnd.cards],
        "settlements": rnd.settlements, "view": rnd.model.view() if rnd.model else None, "events": events,
    }


def run_show(args: argparse.Namespace) -> int:
    try:
        round_uuid = parse_ref(args.id)
    except ValueError:
        print(f"{args.id!r} is neither a round UUID nor TABLE#ROUND_NO", file=sys.stderr)
        return 2
    app = open_app(args.db)
    try:
        info = describe(app, round_uuid)
    except AggregateNotFoundError:
        print(f"no round {args.id} in the store", file=sys.stderr)
        return 1
    finally:
        app.close()
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"round {info['table_id']}#{info['round_no']}  {info['round_id']}")
    print(f"  {info['ruleset']}  {info['currency']}  shoe {info['shoe_id']} (round {info['round_in_shoe']})  "
          f"phase {info['phase']}")
    for b in info["bets"]:
        print(f"  bet {b['bet_id']:<16} {b['player_id']:<12} {b['spot']:<10} {b['bet_type']:<14} "
              f"{format_minor(b['stake_minor'])}")
    print("  cards: " + " ".join(f"{c['card']}>{c['target']}" for c in info["cards"]))
    for e in info["events"]:
        extra = {k: v for k, v in e.items() if k not in ("version", "event", "command_id", "studio_time",
                                                           "recorded_at", "postings", "results")}
        print(f"  {e['version']:>3} {e['event']:<19} {e['command_id']:<28} {json.dumps(extra, default=str)[:120]}")
    for s in info["settlements"]:
        print(f"  settlement {s['settlement_no']}:")
        for r in s["results"]:
            print(f"    {r['bet_id']:<16} {r['outcome']:<9} staked {format_minor(r['staked_minor'])} "
                  f"returned {format_minor(r['returned_minor'])}  {r['explanation']}")
    return 0

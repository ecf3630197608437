"""`ledger recall PLAYER`: the player's last N rounds (N >= 10): bets by type,
cards, decisions, outcome, payouts, refunds, balance before and after, each
round's timeline in its original order; from the `recall` view."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from domain.money import format_minor
from ops.cli.options import add_db_argument, add_timezone_argument, gaming_day_zones, int_range, open_views
from projections import queries
from projections.recall import RECALL_LAST_DEFAULT, RECALL_LAST_MAX, RECALL_LAST_MIN

EPILOG = """\
Examples:
  ledger recall p0007
  ledger recall p0007 --last 25 --json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("recall", help="a player's last N rounds (game recall)",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("player", metavar="PLAYER", help="player id as in the feed")
    add_db_argument(p)
    p.add_argument("--last", type=int_range(RECALL_LAST_MIN, RECALL_LAST_MAX), default=RECALL_LAST_DEFAULT, metavar="N",
                   help=f"how many rounds ({RECALL_LAST_MIN}..{RECALL_LAST_MAX}, default {RECALL_LAST_DEFAULT})")
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    add_timezone_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with open_views(args.db) as views:
        found = asdict(queries.recall(views.db, args.player, args.last, gaming_day_zones(args.timezone)))
    rounds = found["rounds"]
    if args.json:
        print(json.dumps(found, indent=2))
        return 0 if rounds else 1
    if not rounds:
        print(f"no rounds for player {args.player}")
        return 1
    for r in rounds:
        print_round(r)
    return 0


def print_round(r: dict[str, Any]) -> None:
    cur = r["currency"]
    after = "open" if r["balance_after_minor"] is None else format_minor(r["balance_after_minor"], cur)
    print(f"== {r['table_id']}#{r['round_no']} {r['game']} {r['day']} {r['studio_at'][11:19]}Z  {r['status']}  "
          f"balance {format_minor(r['balance_before_minor'], cur)} -> {after}")
    for b in r["bets"]:
        print(f"   bet {b['bet_id']} {b['bet_type']} on {b['spot']}: {format_minor(b['stake_minor'], cur)}")
    for m in r["stake_moves"]:
        print(f"   {m['reason']} on {m['bet_id']}: {format_minor(m['amount_minor'], cur)}")
    cards = [f"{e['card']}>{e['target']}" for e in r["timeline"] if e["event"] == "CardDealt"]
    if cards:
        print("   cards: " + " ".join(cards))
    for e in r["timeline"]:
        if e["event"] == "DecisionTaken":
            print(f"   decision {e['action']} on {e['hand']} ({e['source']})")
        elif e["event"] == "Interrupted":
            print(f"   interrupted: {e['cause']} of {e['player_id']} by {e['by']} ({e['action']})")
        elif e["event"] in ("Paused", "Resumed", "Voided", "SettlementReversed"):
            why = e.get("cause") or e.get("reason") or e.get("note") or ""
            print(f"   {e['event'].lower()} by {e.get('by')} {why}".rstrip())
    for x in r["results"]:
        print(f"   {x['bet_id']} {x['bet_type']}: {x['outcome']}, paid {format_minor(x['returned_minor'], cur)}"
              f" ({x['explanation']})")
    for x in r["refunds"]:
        print(f"   refund {x['bet_id']}: {format_minor(x['amount_minor'], cur)}")

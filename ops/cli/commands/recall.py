"""`ledger recall PLAYER`: the player's last N rounds (N >= 10) in ledger order: bets by
type, cards, decisions, outcome, payouts, refunds, what a correction changed, each round's
timeline in its original order; and each round's own net (returned + refunded - staked, by
the result in force) with a running balance that adds up row by row (balance after =
balance before + net; the next round starts from it), and the totals of the player's
history (its closing balance is the account's). From the `recall` view."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from domain.money import format_minor
from domain.operators import player_key
from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_operator_argument,
    add_timezone_argument,
    gaming_day_zones,
    int_range,
    open_views,
    operator_scope,
)
from projections import queries
from projections.recall import RECALL_LAST_DEFAULT, RECALL_LAST_MAX, RECALL_LAST_MIN

EPILOG = """\
Examples:
  ledger recall p0007
  ledger recall p0007 --last 25 --json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "recall", "a player's last N rounds (game recall)", run, description=__doc__, epilog=EPILOG)
    p.add_argument("player", metavar="PLAYER", help="player id as in the feed")
    add_db_argument(p)
    p.add_argument("--last", type=int_range(RECALL_LAST_MIN, RECALL_LAST_MAX), default=RECALL_LAST_DEFAULT, metavar="N",
                   help=f"how many rounds ({RECALL_LAST_MIN}..{RECALL_LAST_MAX}, default {RECALL_LAST_DEFAULT})")
    add_json_argument(p)
    add_timezone_argument(p)
    add_operator_argument(p, "rounds: PLAYER as that operator names it")


def run(args: argparse.Namespace) -> int:
    with open_views(args.db) as views:
        found = asdict(queries.recall(views.db, player_key(args.operator, args.player), args.last,
                                      gaming_day_zones(args.timezone), operator_scope(args)))
    rounds = found["rounds"]
    if args.json:
        print(json.dumps(found, indent=2))
        return 0 if rounds else 1
    if not rounds:
        print(f"no rounds for player {args.player}")
        return 1
    for r in rounds:
        print_round(r)
    print_totals(found)
    return 0


def print_round(r: dict[str, Any]) -> None:
    cur = r["currency"]

    def money(minor: int) -> str:
        return format_minor(minor, cur)

    print(f"== {r['table_id']}#{r['round_no']} {r['game']} {r['day']} {r['studio_at'][11:19]}Z  {r['status']}  "
          f"staked {money(r['staked_minor'])}, returned {money(r['returned_minor'])}, refunded "
          f"{money(r['refunded_minor'])}, net {money(r['net_minor'])}; "
          f"balance {money(r['balance_before_minor'])} -> {money(r['balance_after_minor'])}")
    if r["correction"]:
        print(f"   {r['correction']}")
    for b in r["bets"]:
        print(f"   bet {b['bet_id']} {b['bet_type']} on {b['spot']}: {money(b['stake_minor'])}")
    for m in r["stake_moves"]:
        print(f"   {m['reason']} on {m['bet_id']}: {money(m['amount_minor'])}")
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
        print(f"   {x['bet_id']} {x['bet_type']}: {x['outcome']}, paid {money(x['returned_minor'])}"
              f" ({x['explanation']})")
    for x in r["refunds"]:
        print(f"   refund {x['bet_id']}: {money(x['amount_minor'])}")


def print_totals(found: dict[str, Any]) -> None:
    """The player's whole history per currency: the rounds above are its last ones."""
    for cur, t in found["totals"].items():
        print(f"totals ({cur}): {t['rounds']} rounds ({len(found['rounds'])} shown above), staked "
              f"{format_minor(t['staked_minor'], cur)}, returned {format_minor(t['returned_minor'], cur)}, refunded "
              f"{format_minor(t['refunded_minor'], cur)}, net {format_minor(t['net_minor'], cur)}; balance "
              f"{format_minor(t['opening_minor'], cur)} -> {format_minor(t['closing_minor'], cur)}")

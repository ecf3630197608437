"""`ledger balances`: every account's balance and the players' funds on game,
from the `balances` view (caught up first). All accounts of a currency sum to zero."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from domain.money import format_minor
from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_operator_argument,
    open_views,
    operator_scope,
)
from projections import queries

EPILOG = """\
Accounts: player:<id>, round:<round id> (stakes held while a round runs), house:<table>.
funds on game = what a player has in rounds not closed yet.

Examples:
  ledger balances
  ledger balances --kind house
  ledger balances --account player:p0007 --account house:bj-live-1 --json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "balances", "account balances and funds on game (players, rounds, house)", run,
                    description=__doc__, epilog=EPILOG)
    add_db_argument(p)
    p.add_argument("--account", action="append", default=[], metavar="ACCOUNT", help="only this account (repeatable)")
    p.add_argument("--kind", choices=("player", "round", "house"), help="only accounts of this kind")
    p.add_argument("--nonzero", action="store_true", help="hide accounts at zero with nothing on game")
    add_json_argument(p)
    add_operator_argument(p, "accounts (rounds and the house are the studio's: not shown with it)")


def run(args: argparse.Namespace) -> int:
    with open_views(args.db) as views:
        found = queries.balances(views.db, args.account, args.kind, args.nonzero, scope=operator_scope(args))
    if args.json:
        print(json.dumps(asdict(found), indent=2))
        return 0
    rows, sums = found.accounts, found.sum_by_currency
    if not rows:
        print("no accounts match" if (args.account or args.kind) else "no postings yet", file=sys.stderr)
    width = max([len(r.account) for r in rows] + [7])
    print(f"{'account':<{width}}  cur  {'balance':>16}  {'funds on game':>16}")
    for r in rows:
        print(f"{r.account:<{width}}  {r.currency}  {format_minor(r.balance_minor):>16}  "
              f"{format_minor(r.funds_on_game_minor):>16}")
    for currency, t in sorted(found.shown_totals.items()):
        print(f"{'total shown':<{width}}  {currency}  {format_minor(t.balance_minor):>16}  "
              f"{format_minor(t.funds_on_game_minor):>16}")
    print("sum of all accounts: " + (", ".join(f"{format_minor(v)} {c}" for c, v in sorted(sums.items())) or "0")
          + ("" if not (args.account or args.kind) else " (every account, not only those shown)"))
    return 0

"""`ledger refunds`: one line per refunded bet (round, table, game, cause, who
voided, when, player, amount, the void's note) and totals by day and cause, from the `refunds` view."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from domain.money import format_minor
from domain.text import escaped
from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_operator_argument,
    add_period_arguments,
    add_timezone_argument,
    gaming_day_zones,
    open_views,
    operator_scope,
    period_days,
)
from projections import queries

EPILOG = """\
Days are gaming days: the day of the void's studio time in the studio's zone
(--timezone, UTC by default).

Examples:
  ledger refunds
  ledger refunds --since 2024-03-01 --until 2024-04-01 --json
  ledger refunds --totals
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "refunds", "refunded bets with cause, who and when; totals by cause and day", run,
                    description=__doc__, epilog=EPILOG)
    add_db_argument(p)
    add_period_arguments(p, "refunds", days="gaming days", old_day_options=True)
    p.add_argument("--totals", action="store_true", help="only the totals")
    add_timezone_argument(p)
    add_json_argument(p)
    add_operator_argument(p, "refunds (in its gaming days when it is configured)")


def run(args: argparse.Namespace) -> int:
    day_from, day_to = period_days(args)
    with open_views(args.db) as views:
        found = queries.refunds(views.db, day_from, day_to, gaming_day_zones(args.timezone), totals_only=args.totals,
                                log=views.log, scope=operator_scope(args))
    if args.json:
        print(json.dumps(asdict(found), indent=2))
        return 0
    lines, totals = asdict(found)["refunds"], asdict(found)["totals"]
    for r in lines:
        print(f"{r['day']} {r['studio_at'][11:19]}Z  {r['table_id']}#{r['round_no']} {r['game']}  {r['cause']:<22} "
              f"by {r['voided_by']:<10} {r['player_id']:<10} bet {r['bet_id']:<24} "
              f"{format_minor(r['amount_minor'], r['currency']):>14}" + (f"  note: {escaped(r['note'])}" if r["note"] else ""))
    if lines:
        print()
    print("day         cause                   refunds          amount")
    for t in totals:
        print(f"{t['day']}  {t['cause']:<22}  {t['refunds']:>7}  {format_minor(t['amount_minor'], t['currency']):>18}")
    if found.empty:
        print(f"(no refunds: {found.empty.message})")
    return 0

"""`ledger ggr`: gross gaming revenue per table, game and day (staked, paid,
refunded, rounding kept as an exact fraction, GGR), from the `ggr` view."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from fractions import Fraction

from domain.money import format_minor
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
GGR = staked - paid - refunded, booked on the gaming day of the settlement, void
or reversal: the day of its studio time in the studio's zone (--timezone, UTC by
default). Rounding kept = the exact sum of the fractions of a minor unit cut
by rounding payouts down, in the currency with the decimals it needs (19/20 of
a cent is 0.0095 EUR); --json keeps it exact as minor units {"numerator": n, "denominator": d}.

Examples:
  ledger ggr
  ledger ggr --json
  ledger ggr --timezone Europe/Malta
  ledger ggr --since 2026-11-01 --until 2026-12-01     # November

A period without rounds says why: no play on those gaming days, or nothing recorded
yet (the store's last event was recorded before the period began); --json: "empty".
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "ggr", "gross gaming revenue per table, game and day", run, description=__doc__, epilog=EPILOG)
    add_db_argument(p)
    add_json_argument(p)
    add_timezone_argument(p)
    add_period_arguments(p, "gaming days", days="gaming days")
    add_operator_argument(p, "share of the GGR (in its gaming days when it is configured)")


def run(args: argparse.Namespace) -> int:
    first, last = period_days(args)
    with open_views(args.db) as views:
        found = asdict(queries.ggr(views.db, gaming_day_zones(args.timezone), first, last, log=views.log,
                                      scope=operator_scope(args)))
    rows, totals = found["rows"], found["totals"]
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    print(f"{'day':<10}  {'table':<16} {'game':<10} cur  {'rounds':>6} {'staked':>14} {'paid':>14} "
          f"{'refunded':>12} {'GGR':>14} {'rounding kept':>14}")
    for r in rows:
        print(f"{r['day']:<10}  {r['table_id']:<16} {r['game']:<10} {r['currency']}  {r['rounds_closed']:>6} "
              f"{format_minor(r['staked_minor']):>14} {format_minor(r['paid_minor']):>14} "
              f"{format_minor(r['refunded_minor']):>12} {format_minor(r['ggr_minor']):>14} {_kept(r['rounding_kept']):>14}")
    for currency, t in sorted(totals.items()):
        print(f"{'total':<10}  {'':<16} {'':<10} {currency}  {'':>6} {format_minor(t['staked_minor']):>14} "
              f"{format_minor(t['paid_minor']):>14} {format_minor(t['refunded_minor']):>12} "
              f"{format_minor(t['ggr_minor']):>14} {_kept(t['rounding_kept']):>14}")
    if found["empty"]:
        print(f"(no settled or voided rounds: {found['empty']['message']})")
    return 0


def _kept(kept: dict[str, int]) -> str:
    """Exact minor units (queries.ExactMinor) as money (13/2 -> `0.065`): text shows amounts
    in the currency's decimal form, JSON keeps the exact numerator and denominator."""
    return format_minor(Fraction(kept["numerator"], kept["denominator"]))

"""`ledger monitor`: the RTP and integrity monitor. Tests every table, dealer and
bet type against the exact game math, and every dealer's void and human-error
rates against the studio; lists what is flagged, with p-values corrected for
the number of tests (Holm). Exit 1 when anything is flagged, 0 when nothing
is, 2 when it could not run."""
from __future__ import annotations

import argparse
import json

from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_period_arguments,
    add_timezone_argument,
    gaming_day_zones,
    number_range,
    open_views,
    period_days,
)
from ops.gamemath.monitor_stats import ALPHA_DEFAULT, Finding, detail_text, evaluate, untested_tables
from projections import queries
from projections.monitor import deal_rows, in_days, monitor_rows, ops_rows

EPILOG = """\
RTP tests: per table, per dealer, per bet type (studio-wide) and per bet type at
each table, over every gaming day in the view (or --since/--until: gaming days,
--until excluded). A day is the day the round was played (its studio time) in the
zone of the table's configuration, else --timezone, as `ledger ggr` counts it; never
the day the ledger recorded it (a day ingested later is checked as the day it was
played). A period with no play says why: no play on those days, or nothing recorded
yet (the store's last event is older than the period). Return = paid + rounding remainders (what the paytable pays exactly)
against the exact mean and variance of each bet type (docs/monitor.md); house side:
normal approximation, player side: Bennett's bound (exact). Blackjack main and
insurance bets are shown in the view but not tested (they depend on the
players' decisions); every blackjack table is tested on its deals instead:
up cards (ace or ten-value) against the shoe and dealer busts against the
exact odds by up card. Tables with no test are named, with the reason
(`untested` lines, always shown). Operational tests: each dealer's void and human-error
rates against the rest of the studio (exact binomial tail). Holm's correction
per family at --alpha. See docs/monitor.md.

Examples:
  ledger simulate --tables 5 --rounds 300 --biased-table bacc-1 --out feed.jsonl
  ledger ingest feed.jsonl && ledger monitor          # bacc-1 is flagged, exit 1
  ledger monitor --json --all                         # every test, one JSON object per line
  ledger monitor --since 2026-11-21 --until 2026-11-22  # the tables as played on 21 November
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "monitor", "RTP and integrity monitor: flag tables, dealers and bet types (exit 1)", run,
                    description=__doc__, epilog=EPILOG)
    add_db_argument(p)
    add_json_argument(p, "one JSON object per test line on stdout")
    p.add_argument("--alpha", type=number_range(0, 1, low_open=True, high_open=True), default=ALPHA_DEFAULT,
                   help=f"family-wise false-alarm rate per family of tests (default {ALPHA_DEFAULT})")
    p.add_argument("--all", action="store_true", help="list every test, not only the flagged ones")
    add_timezone_argument(p)
    add_period_arguments(p, "tests over the play of gaming days", days="gaming days, as `ledger ggr`")


def run(args: argparse.Namespace) -> int:
    days = period_days(args)
    zones = gaming_day_zones(args.timezone)
    with open_views(args.db) as views:  # a store that cannot be read: the one-line error (ops/cli/__init__.py)
        rtp_rows, ops, deals = monitor_rows(views.db, zones), ops_rows(views.db, zones), deal_rows(views.db, zones)
        rtp_rows, ops, deals = in_days(rtp_rows, *days), in_days(ops, *days), in_days(deals, *days)
        empty = None if rtp_rows or ops or deals else queries.empty_period(views.log, *days, zones)
    findings = evaluate(rtp_rows, ops, args.alpha, deals=deals)
    untested = untested_tables(rtp_rows, deals, ops, findings)
    shown = [f for f in findings if args.all or f.flagged]
    if args.json:
        for f in shown:
            print(json.dumps(f.as_dict()))
        for u in untested:
            print(json.dumps(u.as_dict()))
        if empty is not None:
            print(json.dumps({"level": "empty_period", "first_day": days[0], "last_day": days[1], "reason": empty.reason,
                              "message": empty.message, "last_recorded": empty.last_recorded, "flagged": False}))
    else:
        _print(findings, shown, args.alpha)
        for u in untested:
            print(f"  untested: {u.table_id}: {u.reason}")
        if empty is not None:
            print(f"  nothing tested: {empty.message}")
    return 1 if any(f.flagged for f in findings) else 0


def _print(findings: list[Finding], shown: list[Finding], alpha: float) -> None:
    flagged = sum(f.flagged for f in findings)
    print(f"{len(findings)} tests (Holm-corrected per family at alpha {alpha}): {flagged} flagged")
    if shown:
        print(f"  {'test':<16} {'table':<16} {'dealer':<12} {'bet type':<38} {'p-value':>10} {'adjusted':>10}  "
              "detail")
    for f in shown:
        detail = detail_text(f.detail)
        print(f"  {f.level:<16} {f.table_id or '-':<16} {f.dealer_id or '-':<12} {f.bet_type or '-':<38} "
              f"{f.p_value:>10.3g} {f.p_adjusted:>10.3g}  {'FLAGGED ' if f.flagged else ''}{detail}")






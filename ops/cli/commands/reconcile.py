"""`ledger reconcile WALLET.csv`: match the operator's wallet transactions
with the money movements the ledger expects (debit per stake and stake move,
credit per payout, cancel per refund or settlement reversal), per
gaming day and table: matched, missing in the wallet, missing in the ledger,
duplicated, amount / player / currency differs, invalid wallet rows, repeated
transaction ids. Exit status 1 when anything does not match, 2 when the wallet
file or the store cannot be used."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from ledger.eventlog import EventLog
from ops.cli.errors import CliError, ErrorCode, check_input_file
from ops.cli.options import (
    add_command,
    add_db_argument,
    add_json_argument,
    add_operator_argument,
    add_timezone_argument,
    gaming_day_zones,
    int_range,
    operator_scope,
)
from projections import queries
from projections.reconcile import CATEGORIES, WalletEmpty, WalletFormatError, finding_text, read_wallet

EPILOG = """\
Wallet CSV columns: transaction_id,type,reference,player,amount_minor,currency,time
(type debit|credit|cancel; references in docs/projections.md).

Examples:
  ledger simulate --tables 5 --rounds 20 --out feed.jsonl --wallet-out wallet.csv --wallet-discrepancies 4
  ledger ingest feed.jsonl && ledger reconcile wallet.csv
  ledger reconcile wallet.csv --json | jq .counts
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "reconcile", "reconcile an operator wallet file with the ledger (exit 1 on discrepancies)",
                    run, description=__doc__, epilog=EPILOG)
    p.add_argument("wallet", metavar="WALLET.csv", help="the operator's wallet transactions")
    add_db_argument(p)
    add_json_argument(p)
    p.add_argument("--findings", type=int_range(0), default=50, metavar="N", help="list at most N findings (default 50)")
    add_timezone_argument(p)
    add_operator_argument(p, "movements: WALLET.csv is that operator's wallet, naming players by its own ids")


def run(args: argparse.Namespace) -> int:
    check_input_file(args.wallet)
    try:
        wallet = read_wallet(args.wallet)
    except WalletEmpty as exc:
        raise CliError(ErrorCode.INPUT_EMPTY, str(exc)) from None
    except WalletFormatError as exc:
        raise CliError(ErrorCode.INPUT_INVALID, str(exc)) from None
    if not wallet:  # a clerk who reconciles nothing has the wrong file
        raise CliError(ErrorCode.INPUT_EMPTY, f"{args.wallet} has a header but no transactions")
    log = EventLog.open(args.db)
    try:
        report = queries.reconcile_rows(log, wallet, gaming_day_zones(args.timezone), operator_scope(args))
    finally:
        log.close()
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print_report(report, args.findings)
    return 1 if report.discrepancies else 0


# Column headers in words, on two lines (a category's name is too wide for one column).
HEADERS = {"matched": ("matched", ""), "missing_in_wallet": ("missing", "in wallet"),
           "missing_in_ledger": ("missing", "in ledger"), "duplicated": ("duplicated", ""),
           "amount_differs": ("amount", "differs"), "player_differs": ("player", "differs"),
           "currency_differs": ("currency", "differs"), "invalid_row": ("invalid", "row"),
           "repeated_transaction_id": ("repeated", "transaction id")}


def print_report(report: queries.Reconciliation, findings_max: int) -> None:
    widths = {c: max(8, *map(len, HEADERS[c])) + 2 for c in CATEGORIES}
    for line in (0, 1):
        print(f"{'day' if line else '':<10}  {'table' if line else '':<18}"
              + "".join(f"{HEADERS[c][line]:>{widths[c]}}" for c in CATEGORIES))
    for row in report.by_day_and_table:
        print(f"{row['day']:<10}  {row['table_id']:<18}" + "".join(f"{row[c]:>{widths[c]}}" for c in CATEGORIES))
    print(f"{'total':<10}  {'':<18}" + "".join(f"{report.counts[c]:>{widths[c]}}" for c in CATEGORIES))
    for f in report.findings[:findings_max]:
        extra = finding_text(f)
        print(f"  {f['category'].replace('_', ' '):<23} {f.get('round', '-'):<16} {f['type']:<6} {f['reference']:<32} {extra}")
    if len(report.findings) > findings_max:
        print(f"  ... {len(report.findings) - findings_max} more (--findings N or --json)")
    print("reconciled: no discrepancies" if not report.discrepancies else f"{report.discrepancies} discrepancies",
          file=sys.stderr)

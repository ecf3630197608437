"""`ledger reconcile WALLET.csv`: match the operator's wallet transactions
with the money movements the ledger expects (debit per stake and stake move,
credit per payout, cancel per refund or settlement reversal), per day and
table: matched, missing in the wallet, missing in the ledger, duplicated,
amount differs. Exit status 1 when anything does not match."""
from __future__ import annotations

import argparse
import json
import sys

from ledger.eventlog import EventLog
from ops.commands.project import add_db_argument
from projections.reconcile import CATEGORIES, WalletFormatError, expected_movements, read_wallet, reconcile

EPILOG = """\
Wallet CSV columns: transaction_id,type,reference,player,amount_minor,currency,time
(type debit|credit|cancel; references in docs/projections.md).

Examples:
  ledger simulate --tables 5 --rounds 20 --out feed.jsonl --wallet-out wallet.csv --wallet-discrepancies 4
  ledger ingest feed.jsonl && ledger reconcile wallet.csv
  ledger reconcile wallet.csv --json | jq .counts
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reconcile", help="reconcile an operator wallet file with the ledger (exit 1 on discrepancies)",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wallet", metavar="WALLET.csv", help="the operator's wallet transactions")
    add_db_argument(p)
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.add_argument("--findings", type=int, default=50, metavar="N", help="list at most N findings (default 50)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        wallet = read_wallet(args.wallet)
    except (OSError, WalletFormatError) as exc:
        print(f"ledger reconcile: {exc}", file=sys.stderr)
        return 2
    log = EventLog.open(args.db)
    try:
        movements = expected_movements(log.records())
    finally:
        log.close()
    report = reconcile(wallet, movements)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print_report(report, args.findings)
    return 1 if report.discrepancies else 0


def print_report(report, findings_max: int) -> None:
    short = {"matched": "matched", "missing_in_wallet": "miss.wallet", "missing_in_ledger": "miss.ledger",
             "duplicated": "duplicated", "amount_differs": "differs"}
    print(f"{'day':<10}  {'table':<18}" + "".join(f"{short[c]:>12}" for c in CATEGORIES))
    for (day, table), counts in sorted(report.by_day_table.items()):
        print(f"{day:<10}  {table:<18}" + "".join(f"{counts[c]:>12}" for c in CATEGORIES))
    print(f"{'total':<10}  {'':<18}" + "".join(f"{report.counts[c]:>12}" for c in CATEGORIES))
    for f in report.findings[:findings_max]:
        extra = {k: v for k, v in f.items() if k not in ("category", "day", "table_id", "type", "reference")}
        print(f"  {f['category']:<18} {f['type']:<6} {f['reference']:<32} {extra}")
    if len(report.findings) > findings_max:
        print(f"  ... {len(report.findings) - findings_max} more (--findings N or --json)")
    print("reconciled: no discrepancies" if not report.discrepancies else f"{report.discrepancies} discrepancies",
          file=sys.stderr)

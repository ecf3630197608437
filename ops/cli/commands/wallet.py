"""`ledger wallet deliver|status|retry|resolve`: payouts delivered to each operator's wallet,
exactly once in effect (docs/wallet.md)."""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from dataclasses import asdict
from typing import Any

from ops.cli.errors import CliError, ErrorCode, check_input_file, usage
from ops.cli.options import add_command, add_json_argument, text_length

EPILOG = """\
The event log is the outbox: `deliver` follows the stored events in order, keeps the wallet
transactions they cause (and every call's outcome) in the store, and calls each operator's
wallet (signed JSON over HTTP(S)) until each has a final answer. Killed at any moment, it
resends on restart what had no final answer, with the same transaction ids.

  ledger wallet deliver --db sqlite:///day.db --config wallet.toml            # runs until stopped
  ledger wallet deliver --db sqlite:///day.db --config wallet.toml --until-idle --json
  ledger wallet status --db sqlite:///day.db                                  # pending, retrying, dead, lag
  ledger wallet reconcile --db sqlite:///day.db --config wallet.toml --statement wallet-statement.csv
  ledger wallet retry 6f1c... --by alice --why "player unblocked" --db sqlite:///day.db
  ledger wallet resolve 6f1c... --by alice --why "paid by hand, ticket 42" --db sqlite:///day.db
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "wallet", "deliver payouts to the operators' wallets; status; dead letters", epilog=EPILOG)
    actions = p.add_subparsers(dest="wallet_action", metavar="ACTION")
    deliver = add_command(actions, "deliver", "follow the events and call the wallets (until stopped)", run_deliver,
                          description=__doc__, epilog=EPILOG)
    _db(deliver)
    deliver.add_argument("--config", required=True, metavar="FILE",
                         help="the operators' wallets (TOML: docs/wallet.md); secrets from the environment")
    deliver.add_argument("--until-idle", action="store_true",
                         help="stop once every event is derived and every transaction has a final answer")
    add_json_argument(deliver, "print what the run did as JSON on stdout")
    status = add_command(actions, "status", "transactions per operator and status, lag, failures, dead letters",
                         run_status)
    _db(status)
    add_json_argument(status)
    rec = add_command(actions, "reconcile", "compare what was delivered with a wallet's statement (exit 1: findings)",
                      run_reconcile)
    _db(rec)
    rec.add_argument("--config", required=True, metavar="FILE", help="the operators' wallets (TOML: docs/wallet.md)")
    rec.add_argument("--statement", required=True, metavar="FILE",
                     help="the wallet's applied transactions (CSV or JSON: docs/wallet.md, \"Reconciling\")")
    rec.add_argument("--operator", metavar="ID", help="whose wallet (default: the configuration's only operator)")
    add_json_argument(rec)
    for name, what in (("retry", "send a dead letter again, with its id (a recorded decision)"),
                       ("resolve", "mark a dead letter settled outside the deliverer (a recorded decision)")):
        d = add_command(actions, name, what, run_decide)
        d.add_argument("tx_id", metavar="TX_ID")
        d.add_argument("--by", required=True, type=text_length(1, 200), help="who decides")
        d.add_argument("--why", required=True, type=text_length(1, 2000), help="why")
        _db(d)
        add_json_argument(d)


def _db(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", "--store", dest="db", metavar="URL",
                   help="store URL (default: LEDGER_DB or sqlite:///./casino-ledger.db)")


def _outbox(db: str | None) -> Any:
    from ledger.backend import Backend
    from ledger.store import db_url_from, require_ledger
    from projections.sql import Db
    from projections.wallet_outbox import Outbox

    require_ledger(db)
    return Outbox(Db.for_store(Backend.of_url(db_url_from(db))))


def run_deliver(args: argparse.Namespace) -> int:
    from ledger.store import db_url_from, require_ledger
    from ops.wallet.config import ConfigError, load
    from ops.wallet.deliverer import Deliverer

    check_input_file(args.config)  # missing, a folder, unreadable: its own code
    try:
        wallets = load(args.config)
    except ConfigError as exc:
        raise CliError(ErrorCode.INPUT_INVALID, str(exc)) from None
    require_ledger(args.db)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, _interrupt)  # waiting for another deliverer's lock: stop waiting
    try:
        deliverer = Deliverer(db_url_from(args.db), wallets)
    except KeyboardInterrupt:
        print("ledger wallet deliver: stopped while another deliverer ran on this store; nothing done",
              file=sys.stderr)
        return 0
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # running: stop after this turn
    started = time.monotonic()
    try:
        result = deliverer.run(until_idle=args.until_idle, stop=stop)
    except KeyboardInterrupt:
        result = deliverer.result
    finally:
        deliverer.close()
    summary = {**asdict(result), "elapsed_s": round(time.monotonic() - started, 3)}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"delivered: {result.events} events read, {result.derived} transactions derived, {result.calls} calls "
              f"({', '.join(f'{k} {v}' for k, v in sorted(result.outcomes.items())) or 'none'}); "
              f"position {result.position}", file=sys.stderr)
    return 0


def _interrupt(*_: Any) -> None:
    raise KeyboardInterrupt


def run_reconcile(args: argparse.Namespace) -> int:
    from ops.wallet.config import ConfigError, load
    from ops.wallet.reconcile import StatementError, read_statement, reconcile

    check_input_file(args.config)
    check_input_file(args.statement)
    try:
        operators = load(args.config, secrets=False)
        with open(args.statement, "rb") as f:
            statement = read_statement(f.read(), args.statement)
    except (ConfigError, StatementError) as exc:
        raise CliError(ErrorCode.INPUT_INVALID, str(exc)) from None
    operator = args.operator or (next(iter(operators)) if len(operators) == 1 else None)
    if operator not in operators:
        raise usage(f"--operator: one of {', '.join(sorted(operators))}" if args.operator is None
                    else f"--operator {args.operator}: not in {args.config}")
    outbox = _outbox(args.db)
    try:
        report = reconcile(outbox, operator, statement)
    finally:
        outbox.db.close()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_reconcile(report)
    return 1 if report["findings"] else 0


def _print_reconcile(report: dict[str, Any]) -> None:
    for key, what in (("missing_at_wallet", "delivered, not in the statement"),
                      ("not_applied_by_ledger", "in the statement, not applied by the ledger"),
                      ("duplicated", "more than once in the statement"), ("differs", "differs")):
        for item in report[key]:
            print(f"{what}: {json.dumps(item)}")
    print(f"operator {report['operator']}: {report['statement_transactions']} statement transactions; "
          f"{report['findings']} findings; {report['open']} transactions still open in the store", file=sys.stderr)


def run_status(args: argparse.Namespace) -> int:
    from ledger.eventlog import EventLog
    from projections.wallet_outbox import delivery_status

    outbox = _outbox(args.db)
    log = EventLog.open(args.db)
    try:
        status = delivery_status(outbox, log.head())
    finally:
        log.close()
        outbox.db.close()
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    print(f"events: deliverer at position {status['position']} of {status['head']} "
          f"({status['events_behind']} behind)")
    for op, s in status["operators"].items():
        counts = ", ".join(f"{k} {v}" for k, v in sorted(s["statuses"].items()))
        print(f"operator {op}: {counts}; failed calls {s['failures']}; oldest open {s['oldest_open_age_s']} s")
    for d in status["dead"]:
        print(f"dead {d['tx_id']} {d['kind']} {d['reason']} player {d['player_id']} {d['amount_minor']} "
              f"{d['currency']} after {d['attempts']} calls: {d['answer']}")
    return 0


def run_decide(args: argparse.Namespace) -> int:
    outbox = _outbox(args.db)
    try:
        tx = outbox.decide(args.tx_id, args.wallet_action, args.by, args.why)
    except (LookupError, ValueError) as exc:
        raise usage(str(exc)) from None
    finally:
        outbox.db.close()
    if args.json:
        print(json.dumps({"tx_id": tx.tx_id, "action": args.wallet_action, "status": tx.status}))
    else:
        print(f"{args.wallet_action}: {tx.tx_id} is now {tx.status}", file=sys.stderr)
    return 0

"""`ledger table show TABLE`: a table's configuration, every version with its hash.
`ledger table list`: every configured table and its current configuration.

Read from the stored `Table.Configured` events (ledger/eventlog.py; `list` finds the
tables in the `tables` view, caught up first, as the other read commands do); a table that was
never configured has no configuration: its rounds use their rule set's defaults."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from domain.tableconfig import describe_settings
from ledger.eventlog import EventLog
from ledger.records import TableConfigured
from ops.cli.options import help_for, open_views
from projections.tables import table_ids


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("table", help="table configurations (limits, seats, time zone)")
    tsub = p.add_subparsers(dest="table_command", metavar="ACTION")
    show = tsub.add_parser("show", help="one table's configuration, every version",
                           description="TABLE is the table id the feed uses, e.g. bj-1.")
    show.add_argument("table", metavar="TABLE")
    _common(show)
    show.set_defaults(func=run_show)
    listing = tsub.add_parser("list", help="every configured table and its current configuration")
    _common(listing)
    listing.set_defaults(func=run_list)
    p.set_defaults(func=help_for(p))


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    p.add_argument("--json", action="store_true", help="machine-readable JSON")


def as_dict(r: TableConfigured) -> dict[str, Any]:
    return {"table_id": r.table_id, "config_version": r.config_version, "config_hash": r.config_hash,
            "game": r.game, "ruleset_id": r.ruleset_id, "ruleset_version": r.ruleset_version,
            "currency": r.currency, "timezone": r.timezone, "settings": r.settings,
            "studio_time": r.studio_time, "command_id": r.command_id, "position": r.position}


def run_show(args: argparse.Namespace) -> int:
    log = EventLog.open(args.db)
    try:
        history = log.table_history(args.table)
    finally:
        log.close()
    if args.json:
        print(json.dumps({"table_id": args.table, "configured": bool(history),
                          "versions": [as_dict(r) for r in history]}, indent=2))
        return 0 if history else 1
    if not history:
        print(f"table {args.table} has no configuration: its rounds use their rule set's defaults", file=sys.stderr)
        return 1
    print(f"table {args.table}: {len(history)} configuration version(s); the last is current")
    for r in history:
        print(f"  v{r.config_version}  {r.studio_time}  {r.ruleset_id} v{r.ruleset_version}  {r.currency}  "
              f"{r.timezone}  hash {r.config_hash[:16]}")
        print(f"      {describe_settings(r.settings)}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    # The configured tables' ids from the `tables` view, then each table by its aggregate id:
    # reading the events by topic would read the whole store (the library does not index it).
    with open_views(args.db) as views:
        tables = views.log.tables(table_ids(views.db))
    current = [history[-1] for history in tables.values()]
    if args.json:
        sys.stdout.writelines(json.dumps(as_dict(r)) + "\n" for r in current)
        return 0
    if not current:
        print("no table is configured: every round uses its rule set's defaults", file=sys.stderr)
        return 0
    width = max(len(r.table_id) for r in current)
    print(f"{'table':<{width}}  version  {'rule set':<24}  cur  {'time zone':<18}  settings")
    for r in current:
        print(f"{r.table_id:<{width}}  v{r.config_version:<6}  {r.ruleset_id + ' v' + str(r.ruleset_version):<24}  "
              f"{r.currency}  {r.timezone:<18}  {describe_settings(r.settings)}")
    return 0

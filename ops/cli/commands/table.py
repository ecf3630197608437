"""`ledger table show TABLE`: a table's configuration, every version with its hash.
`ledger table list`: every table seen (configured, or only played at), its rounds and current configuration.

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
from ops.cli.options import add_command, add_json_argument, open_views
from projections.rounds import tables_played
from projections.tables import table_ids


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "table", "table configurations (limits, seats, time zone)")
    tsub = p.add_subparsers(dest="table_command", metavar="ACTION")
    show = add_command(tsub, "show", "one table's configuration, every version", run_show,
                       description="TABLE is the table id the feed uses, e.g. bj-1.", wrap=True)
    show.add_argument("table", metavar="TABLE")
    _common(show)
    listing = add_command(tsub, "list", "every table: configured ones with their current configuration, and "
                              "those only seen in rounds (marked not configured)", run_list)
    _common(listing)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    add_json_argument(p, "machine-readable JSON")


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
    # Tables never configured are listed too, from the rounds played at them.
    with open_views(args.db) as views:
        tables = views.log.tables(table_ids(views.db))
        played = tables_played(views.db)
    listed = [_listed(t, tables.get(t), played.get(t)) for t in sorted(set(tables) | set(played))]
    if args.json:
        sys.stdout.writelines(json.dumps(row) + "\n" for row in listed)
        return 0
    if not listed:
        print("no table: nothing configured and no round played", file=sys.stderr)
        return 0
    _print_tables(listed)
    return 0


def _listed(table_id: str, history: list[TableConfigured] | None, played: dict[str, Any] | None) -> dict[str, Any]:
    """One table: its current configuration when it has one (`configured`), and its rounds."""
    rounds = {"rounds": played["rounds"] if played else 0, "rulesets_played": played["rulesets"] if played else []}
    if history:
        return {**as_dict(history[-1]), "configured": True, **rounds}
    return {"table_id": table_id, "configured": False, **rounds}


def _print_tables(listed: list[dict[str, Any]]) -> None:
    width = max(len("table"), *(len(r["table_id"]) for r in listed))
    print(f"{'table':<{width}}  {'rounds':>6}  version  {'rule set':<24}  cur  {'time zone':<18}  settings")
    for r in listed:
        if not r["configured"]:
            print(f"{r['table_id']:<{width}}  {r['rounds']:>6}  {'-':<7}  {', '.join(r['rulesets_played']):<24}  "
                  "not configured: its rounds use their rule set's defaults")
            continue
        ruleset = f"{r['ruleset_id']} v{r['ruleset_version']}"
        print(f"{r['table_id']:<{width}}  {r['rounds']:>6}  v{r['config_version']:<6}  {ruleset:<24}  "
              f"{r['currency']}  {r['timezone']:<18}  {describe_settings(r['settings'])}")

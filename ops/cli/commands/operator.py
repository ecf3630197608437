"""`ledger operator list`: every operator (the configured ones, and the default operator).
`ledger operator show ID`: one operator's configuration, every version with its hash.

From the `operators` view (caught up first). The default operator (docs/operators.md) plays
every bet whose feed names no operator, configured or not."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from domain.operators import DEFAULT_OPERATOR_ID
from ops.cli.options import add_command, add_db_argument, add_json_argument, open_views, operator_id
from projections.operators import OperatorInfo, operator_info, operator_list


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "operator", "operators: the casinos whose players bet at the tables")
    osub = p.add_subparsers(dest="operator_command", metavar="ACTION")
    show = add_command(osub, "show", "one operator's configuration, every version", run_show,
                       description=f"ID is the operator id the feed uses (bets naming none: {DEFAULT_OPERATOR_ID!r}).",
                       wrap=True)
    show.add_argument("operator", type=operator_id, metavar="ID")
    _common(show)
    listing = add_command(osub, "list", "every operator with its current configuration (and the default "
                              "operator, configured or not)", run_list)
    _common(listing)


def _common(p: argparse.ArgumentParser) -> None:
    add_db_argument(p)
    add_json_argument(p, "machine-readable JSON")


def as_dict(info: OperatorInfo) -> dict[str, Any]:
    return {"operator_id": info.operator_id, "default": info.operator_id == DEFAULT_OPERATOR_ID,
            "configured": info.configured, "current": asdict(info.current) if info.current else None,
            "versions": [asdict(v) for v in info.versions]}


def run_show(args: argparse.Namespace) -> int:
    with open_views(args.db) as views:
        found = operator_info(views.db, args.operator)
    if found is None:
        print(f"operator {args.operator} is not configured (configure_operator makes it)", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(as_dict(found), indent=2))
        return 0
    if not found.versions:
        print(f"operator {found.operator_id}: the default operator, not configured (bets naming no operator)")
        return 0
    print(f"operator {found.operator_id}: {len(found.versions)} configuration version(s); the last is current")
    for v in found.versions:
        print(f"  v{v.config_version}  {v.name}  {', '.join(v.currencies)}  {v.timezone}  "
              f"{', '.join(v.jurisdictions) or '-'}  hash {v.config_hash[:16]}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    with open_views(args.db) as views:
        listed = operator_list(views.db)
    if args.json:
        sys.stdout.writelines(json.dumps(as_dict(o)) + "\n" for o in listed)
        return 0
    print(f"{'operator':<16} {'v':>3}  {'name':<28} {'currencies':<12} {'zone':<18} jurisdictions")
    for o in listed:
        c = o.current
        if c is None:
            print(f"{o.operator_id:<16} {'-':>3}  {'(default, not configured)':<28}")
            continue
        print(f"{o.operator_id:<16} {c.config_version:>3}  {c.name[:28]:<28} {', '.join(c.currencies):<12} "
              f"{c.timezone:<18} {', '.join(c.jurisdictions) or '-'}")
    return 0

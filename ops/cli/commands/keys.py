"""`ledger keys add|list|revoke`: API keys of the live service (stored hashed)."""
from __future__ import annotations

import argparse
import json
import sys

from ledger.keys import ROLES
from ops.cli.options import add_command, add_json_argument

EPILOG = """\
Roles: studio (POST /v1/commands; --tables limits the tables), backoffice (reads,
reconcile), auditor (reads, audit export and verify), admin (everything).
--operator limits a backoffice key to those operators' players, bets and money (a
shared round shows the others' bets only as a count and a total), a studio key to
their bets, an auditor key to the audit trail with the other operators' bets redacted
(hashes kept); admin keys see every operator (docs/operators.md).
The key is printed once; only its hash is stored.

  ledger keys add --role studio --tables bj-live-1,bacc-1 --name studio-a
  ledger keys add --role backoffice --operator OP1 --name casino-uno
  ledger keys add --role auditor --json
  ledger keys add --role auditor --operator OP1 --name regulator-es
  ledger keys list
  ledger keys revoke studio-a           # by name or key id
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "keys", "API keys of `ledger serve`: add, list, revoke", epilog=EPILOG)
    actions = p.add_subparsers(dest="keys_action", metavar="ACTION")
    add = add_command(actions, "add", "make a key (printed once)", run_add)
    add.add_argument("--role", required=True, choices=ROLES)
    add.add_argument("--tables", default="", help="comma-separated table ids a studio key may write (default all)")
    add.add_argument("--operator", action="append", default=[], metavar="ID[,ID]",
                     help="an operator the key is limited to (repeat or comma-separate; default every operator)")
    add.add_argument("--name", default="", help="a name to find the key by (default role-keyid)")
    _common(add)
    ls = add_command(actions, "list", "every key (never the secret)", run_list)
    _common(ls)
    rev = add_command(actions, "revoke", "revoke a key by key id or name", run_revoke)
    rev.add_argument("key", metavar="KEY_ID_OR_NAME")
    _common(rev)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", help="store URL (default: $LEDGER_DB or sqlite:///./casino-ledger.db)")
    add_json_argument(p)


def _store(db: str | None, *, existing: bool = True):  # type: ignore[no-untyped-def]
    """`existing`: list and revoke read a store, and must not create the one they were
    pointed at by mistake (store_missing, exit 2); add may start a new one."""
    from ledger.keys import key_store
    from ledger.store import open_app, require_ledger

    if existing:
        require_ledger(db)
    app = open_app(db)
    return app, key_store(app)


def run_add(args: argparse.Namespace) -> int:
    operators = _listed(args.operator)
    _check_operators(args.role, operators)
    app, store = _store(args.db, existing=False)
    try:
        key, row = store.add(args.role, args.name, _listed([args.tables]), operators)
    finally:
        app.close()
    if args.json:
        print(json.dumps({"key": key, "role": row.role, "name": row.name, "key_id": row.key_id,
                          "tables": list(row.tables), "operators": list(row.operators)}))
    else:
        print(key)
        print(f"role {row.role}, name {row.name}, tables {','.join(row.tables) or 'all'}, "
              f"operators {','.join(row.operators) or 'all'} (shown once: only its hash is stored)", file=sys.stderr)
    return 0


def _check_operators(role: str, operators: list[str]) -> None:
    from domain.operators import is_operator_id
    from ledger.keys import ROLE_OPERATOR_SCOPED
    from ops.cli.errors import usage

    bad = [o for o in operators if not is_operator_id(o)]
    if bad:
        raise usage(f"--operator: {bad[0]!r} is not an operator id (letters, digits, `_.-`)")
    if operators and role not in ROLE_OPERATOR_SCOPED:
        raise usage(f"--operator: a {role} key sees every operator; only {' and '.join(ROLE_OPERATOR_SCOPED)} "
                    "keys are limited to operators")


def _listed(values: list[str]) -> list[str]:
    """Comma-separated values of one or several options, blanks dropped."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def run_list(args: argparse.Namespace) -> int:
    app, store = _store(args.db)
    try:
        rows = store.list()
    finally:
        app.close()
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    for r in rows:
        state = f"revoked {r.revoked_at[:19]}" if r.revoked_at else "active"
        print(f"{r.key_id}  {r.role:<10} {r.name:<24} tables {','.join(r.tables) or 'all':<24} "
              f"operators {','.join(r.operators) or 'all':<12} created {r.created_at[:19]}  {state}")
    if not rows:
        print("no keys")
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    app, store = _store(args.db)
    try:
        count = store.revoke(args.key)
    finally:
        app.close()
    if args.json:
        print(json.dumps({"revoked": count}))
    else:
        print(f"revoked {count} key(s)" if count else f"no active key {args.key!r}")
    return 0 if count else 1

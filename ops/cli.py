"""`ledger` command line. Each subcommand lives in its own module in
`ops/commands/` and exposes `register(subparsers)`; modules are discovered,
so adding a command never edits this file."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from ops import commands as _commands_pkg

DESCRIPTION = """\
casino-ledger: event-sourced settlement and audit for live-casino card games
(Blackjack, Baccarat, Teen Patti 20-20).

Storage: --db URL or LEDGER_DB; sqlite:///path (default ./casino-ledger.db,
no server needed) or postgresql://user@host:port/dbname.

Start here:  ledger demo          simulate a studio, ingest it, print the back-office view
             ledger settle FILE   settle one round file under its rule set (no storage)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ledger", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(_commands_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"ops.commands.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `ledger ... | head` is fine
        return 0


if __name__ == "__main__":
    sys.exit(main())

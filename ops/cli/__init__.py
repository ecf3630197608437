"""`ledger` command line. Each subcommand lives in its own module in
`ops/cli/commands/` and exposes `register(subparsers)`; modules are discovered,
so adding a command never edits this file.

Every error that stops a command is one line on standard error with a stable
code and exit status 2 (ops/cli/errors.py); `--debug` shows the traceback instead."""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import pkgutil
import sys
from typing import NoReturn

from domain.text import escaped
from ledger import logging as ledger_logging
from ops import version
from ops.cli import commands as _commands_pkg
from ops.cli.errors import EXIT_ERROR, CliError, ErrorCode, classify
from ops.cli.screen import escaping_output

DESCRIPTION = """\
casino-ledger: event-sourced settlement and audit for live-casino card games
(Blackjack, Baccarat, Teen Patti 20-20).

Storage: --db URL or LEDGER_DB; sqlite:///path (default ./casino-ledger.db,
no server needed) or postgresql://user@host:port/dbname.

Start here:  ledger demo          simulate a studio, ingest it, print the back-office view
             ledger settle FILE   settle one round file under its rule set (no storage)

Exit status (every command, with or without --json): 0 done; 1 the answer is
"no" (refusals, findings, discrepancies); 2 the command could not run (usage,
missing input, store unreachable), reported as one line on standard error:
"ledger COMMAND: error CODE: what and why". --debug shows a traceback instead.
"""


class Parser(argparse.ArgumentParser):
    """argparse with usage errors as the one-line, coded form every error takes."""

    def error(self, message: str) -> NoReturn:
        usage_error(self.prog, message)


def usage_error(prog: str, message: str) -> NoReturn:
    """argparse's way out (SystemExit), in the one-line form, named by the command's prog."""
    report(prog, CliError(ErrorCode.USAGE, f"{message} (see {prog} --help)"))
    sys.exit(EXIT_ERROR)


def report(prog: str, error: CliError) -> None:
    print(f"{prog}: error {error.code}: {escaped(error.message)}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="ledger", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"casino-ledger {version()}")
    parser.add_argument("--debug", action="store_true", help="show a traceback when a command fails")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(_commands_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"ops.cli.commands.{info.name}")
        module.register(sub)
    _debug_everywhere(parser)
    return parser


def _debug_everywhere(parser: argparse.ArgumentParser) -> None:
    """`--debug` after the command name too. SUPPRESS: a subcommand's default must not
    overwrite `ledger --debug CMD`. Each command also leaves its prog (`ledger round list`)
    in the namespace, the innermost last, so that every error names the command that failed."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                if not any("--debug" in a.option_strings for a in child._actions):
                    child.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                       help="show a traceback when the command fails")
                child.set_defaults(cli_prog=child.prog)
                _debug_everywhere(child)


def leaf_commands(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    """Every command that runs, by its name after `ledger` (`ggr`, `round list`, `export dgoj`)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in (parser or build_parser())._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                inner = leaf_commands(child)
                found.update({f"{name} {k}": v for k, v in inner.items()} if inner else {name: child})
    return found


# The options whose defaults come from the environment when the parser is built.
ENV_DEFAULTS = ("LEDGER_TIMEZONE", "LEDGER_WALLET_CONFIG")


@functools.lru_cache(maxsize=4)
def _parser_for(env: tuple[str | None, ...]) -> argparse.ArgumentParser:
    """One parser per environment its defaults read: building it imports and registers every
    command (~0.1 s), which a process that runs `main` many times (the tests, the console's
    workers) would otherwise pay on every call."""
    return build_parser()


def main(argv: list[str] | None = None) -> int:
    parser = _parser_for(tuple(os.environ.get(name) for name in ENV_DEFAULTS))
    # parse_known_args: argparse would report an unknown option under the top parser's
    # name (`ledger:`), not under the command it was given to.
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        usage_error(_prog(args), f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        with escaping_output(), ledger_logging.kept_configuration():
            return int(args.func(args) or 0)
    except BrokenPipeError:  # `ledger ... | head` is fine
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if args.debug:
            raise
        report(_prog(args), classify(exc))
        return EXIT_ERROR


def _prog(args: argparse.Namespace) -> str:
    return str(getattr(args, "cli_prog", "ledger"))


if __name__ == "__main__":
    sys.exit(main())

"""`ledger simulate`: write a seeded studio feed (JSON lines) to a file or stdout."""
from __future__ import annotations

import argparse
import sys
import time
from typing import BinaryIO

from domain.operators import EVERY_OPERATOR, OperatorScope
from ops.cli.errors import usage
from ops.cli.options import int_range
from ops.sim.operators import OPERATORS_MAX, operator_ids
from ops.sim.simulator import ROUNDS_MAX, TABLES_MAX, Studio

PROGRESS_EVERY_LINES = 20_000

EPILOG = """\
Every rule set gets tables (ids like bj-live-1, bj-spielbank-1, bj-tour-1, bacc-1,
tp-1); each table plays ROUNDS rounds from its own seeded shoe, driven by the
game's pure rules, so the feed is legal except where a fault was injected on
purpose. Same arguments -> the same bytes. Faults (per round, --fault-rate per
mille): timeouts, disconnects, host interruptions, dealer errors, pauses,
duplicate deliveries, voids delivered before their round, bad commands, late
side bets, settlement reversals.

Examples:
  ledger simulate --tables 5 --rounds 20 --seed 7 --out feed.jsonl
  ledger simulate --tables 10 --rounds 200 --seed 1 --fault-rate 50 --out - | head
  ledger simulate --tables 10 --rounds 100 --seed 1 --out feed.jsonl \\
      --wallet-out wallet.csv --wallet-discrepancies 5
  ledger simulate --tables 5 --rounds 200 --biased-table bacc-1 --out feed.jsonl
  ledger simulate --tables 5 --rounds 50 --operators 3 --out feed.jsonl --wallet-out wallet.csv
      # bets of 3 operators (OP1..OP3, configured first) whose player ids overlap; a wallet
      # file per operator (wallet-OP1.csv, ...)
  ledger ingest feed.jsonl            # then load it into the ledger
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate",
        help="write a seeded, deterministic studio feed (JSON lines) with optional faults",
        description="Simulate a live-casino studio and write its feed of commands, one JSON object per line.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--tables", type=int_range(1, TABLES_MAX), default=5, metavar="N",
                   help=f"number of tables, the rule sets dealt over them in turn (5 or more: every rule set; "
                   f"max {TABLES_MAX}; default 5)")
    p.add_argument("--rounds", type=int_range(1, ROUNDS_MAX), default=20, metavar="M",
                   help=f"rounds per table (max {ROUNDS_MAX}; default 20)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default 1)")
    p.add_argument("--fault-rate", type=int_range(0, 1000), default=0, metavar="PER_MILLE",
                   help="share of rounds with an injected fault, per mille 0..1000 (default 0: a clean feed)")
    p.add_argument("--out", default="-", metavar="FILE", help="output file, '-' for standard output (default)")
    p.add_argument("--wallet-out", metavar="FILE",
                   help="also write the operator's wallet transactions for this feed (a CSV for ledger reconcile)")
    p.add_argument("--wallet-discrepancies", type=int_range(0), default=0, metavar="N",
                   help="plant N discrepancies in the wallet file (missing, duplicated, amount differs)")
    p.add_argument("--biased-table", action="append", default=[], metavar="TABLE",
                   help="deal TABLE from a shoe stacked toward the house (a round the players win on balance "
                   "is dealt again from the reshuffled rest of the shoe); repeatable; for `ledger monitor`")
    p.add_argument("--operators", type=int_range(1, OPERATORS_MAX), metavar="N",
                   help="bets of N operators (OP1..ON, configured first) whose player ids overlap: a player bets "
                        "through a seeded operator per table (default: none named, the default operator)")
    p.add_argument("--quiet", action="store_true", help="no progress on standard error")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        studio = Studio(args.tables, args.rounds, args.seed, args.fault_rate,
                        biased_tables=frozenset(args.biased_table), operators=args.operators)
    except ValueError as exc:  # a biased table that the studio does not have
        raise usage(str(exc)) from None
    started = time.monotonic()
    # The wallet is made from the lines as written, kept here: reading --out back gave
    # nothing when it was /dev/null or a pipe (and "5 discrepancies need more than the
    # 0 movements" ended as an internal error). write_wallet holds them all anyway.
    kept: list[bytes] | None = [] if args.wallet_out else None
    if args.out == "-":
        written = _write(studio, sys.stdout.buffer, args.quiet or not sys.stderr.isatty(), kept)
    else:
        with open(args.out, "wb") as out:
            written = _write(studio, out, args.quiet, kept)
    stats = studio.stats
    if not args.quiet:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(stats.faults.items())) or "none"
        print(f"simulated {len(stats.tables)} tables, {stats.rounds_total} rounds, {written} commands "
              f"in {time.monotonic() - started:.1f}s; faults: {faults}", file=sys.stderr)
    if args.wallet_out:
        from ops.sim.wallet import events_of, write_wallet

        events = events_of(kept)  # the feed ingested once, whatever the number of wallets
        for path, scope in _wallets(args.wallet_out, args.operators):
            try:
                planted = write_wallet(events, path, args.wallet_discrepancies, args.seed, scope)
            except ValueError as exc:  # more discrepancies asked for than the feed has movements
                raise usage(f"--wallet-discrepancies: {exc}") from None
            if not args.quiet:
                print(f"wallet transactions written to {path} "
                      f"({len(planted or [])} planted discrepancies)", file=sys.stderr)
    return 0


def _wallets(path: str, operators: int | None) -> list[tuple[str, OperatorScope]]:
    """One wallet file, or with --operators one per operator (`wallet.csv` -> `wallet-OP1.csv`, ...)."""
    if not operators:
        return [(path, EVERY_OPERATOR)]
    stem, dot, suffix = path.rpartition(".")
    if not dot or "/" in suffix:
        stem, suffix = path, ""
    return [(f"{stem}-{op}{'.' + suffix if suffix else ''}", OperatorScope.of(op)) for op in operator_ids(operators)]


def _write(studio: Studio, out: BinaryIO, quiet: bool, kept: list[bytes] | None = None) -> int:
    n = 0
    for line in studio.lines():
        out.write(line)
        if kept is not None:
            kept.append(line)
        n += 1
        if not quiet and n % PROGRESS_EVERY_LINES == 0:
            print(f"  {n} commands, {studio.stats.rounds_total} rounds ...", file=sys.stderr)
    out.flush()
    return n

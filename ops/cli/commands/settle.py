"""`ledger settle ROUND.json`: settle one round file under its rule set, no storage."""
from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction

from domain.errors import Refusal, refuse
from domain.money import format_minor
from domain.outcome import HandOutcome, RoundOutcome
from domain.refusals import RefusalCode
from domain.roundfile import Played, play
from domain.tableconfig import describe_settings
from ops.cli.errors import check_input_file
from ops.cli.options import add_command, add_json_argument

EPILOG = """\
The round file names the rule set and version, the bets, and the cards and
decisions in the order they happened (format and one example per game:
docs/rounds.md). Examples:

  ledger settle docs/examples/baccarat.json
  ledger settle docs/examples/blackjack-live.json --json | jq .results
  ledger settle docs/examples/teen-patti.json --json | jq .outcome

The output says what happened first (every hand after splits with its cards,
total and result, the dealer's hand, the winner, the hand categories side bets
read: the `outcome` object of --json), then every bet's money.

Exit status: 0 settled; 1 refused (the refusal code and message are printed);
3 the round is not complete yet (what is expected next is printed); 2 the file
could not be read (one line on standard error).
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(
        sub, "settle", "settle one round file (rule set, bets, cards, decisions) without storage", run,
        description="Settle one round from its facts and print what happened (hands, totals, winner, "
        "categories) and each bet's outcome, payout, rounding remainder and explanation, or the refusal.",
        epilog=EPILOG,
    )
    p.add_argument("round_file", metavar="ROUND.json", help="round file ('-' for standard input)")
    add_json_argument(p, "print machine-readable JSON")


def run(args: argparse.Namespace) -> int:
    check_input_file(args.round_file)
    raw = sys.stdin.read() if args.round_file == "-" else open(args.round_file, encoding="utf-8").read()
    try:
        played = play(json.loads(raw))
    except json.JSONDecodeError as exc:
        return _report_refusal(args, refuse(RefusalCode.BAD_ROUND_FILE, "json", error=exc), "file")
    except Refusal as refusal:
        return _report_refusal(args, refusal, "file")
    if played.refusal is not None:
        return _report_refusal(args, played.refusal, played.refused_at or "")
    if not played.complete:
        return _report_incomplete(args, played)
    total_remainder = sum((Fraction(r.remainder_num, r.remainder_den) for r in played.results), Fraction(0))
    if args.json:
        print(json.dumps({
            "status": "settled",
            "ruleset": {"id": played.ruleset_id, "version": played.ruleset_version, "hash": played.ruleset_hash},
            "table": played.table,
            "outcome": played.outcome.as_dict() if played.outcome is not None else None,
            "results": [r.as_dict() for r in played.results],
            "remainder_total": f"{total_remainder.numerator}/{total_remainder.denominator}",
        }, indent=2))
        return 0
    print(f"{played.ruleset_id} v{played.ruleset_version}  (rule-set hash {played.ruleset_hash[:12]}…)")
    if played.table is not None:
        print(f"at table {played.table['table_id']}: {describe_settings(played.table['settings'])}")
    if played.outcome is not None:
        _print_outcome(played.outcome)
    for r in played.results:
        # a fraction of a minor unit, as money (a round file names no currency): 19/20 -> 0.0095
        rem = "" if r.remainder_num == 0 else \
            f"  kept by rounding {format_minor(Fraction(r.remainder_num, r.remainder_den))}"
        print(f"  {r.bet_id:<12} {r.player_id:<10} {r.bet_type:<16} {r.outcome:<9} "
              f"staked {format_minor(r.staked_minor):>12}  returned {format_minor(r.returned_minor):>12}{rem}")
        print(f"      {r.explanation}")
    print(f"rounding kept: {format_minor(total_remainder)} (cut off by rounding payouts down)")
    return 0


def _print_outcome(outcome: RoundOutcome) -> None:
    """What happened, as --json says it: the dealer's hand, one line per hand, the winner."""
    print(f"outcome: {outcome.summary}")
    for hand in (*([outcome.dealer] if outcome.dealer is not None else []), *outcome.hands):
        print("  " + _hand_line(hand))
    if outcome.winner is not None:
        print(f"  winner: {outcome.winner}")
    for what, category in outcome.categories:
        print(f"  {what}: {category}")
    for note in outcome.notes:
        print(f"  note: {note}")
    print("bets:")


def _hand_line(h: HandOutcome) -> str:
    line = f"{h.hand:<10} {' '.join(h.cards):<24} {h.name or ''}"
    if h.category and h.category not in (h.name or ""):
        line += f" [{h.category}]"
    flags = [flag for flag, on in (("doubled", h.doubled), ("from split", h.from_split), ("no-action rule", h.auto))
             if on]
    if h.status is not None and h.status != h.name:
        flags.insert(0, h.status)
    if flags:
        line += f" ({', '.join(flags)})"
    if h.result is not None:
        line += f" -> {h.result}"
    if h.stakes:
        line += "; stakes " + ", ".join(f"{s.bet_id} {s.reason} {format_minor(s.amount_minor)}" for s in h.stakes)
    return line


def _report_refusal(args: argparse.Namespace, refusal: Refusal, where: str) -> int:
    if args.json:
        print(json.dumps({"status": "refused", "at": where, **refusal.as_dict()}, indent=2))
    else:
        print(f"refused at {where}: {refusal.code}: {refusal.message}")
    return 1


def _report_incomplete(args: argparse.Namespace, played: Played) -> int:
    if args.json:
        print(json.dumps({"status": "incomplete", "view": played.view}, indent=2, default=str))
    else:
        print("the round is not complete yet; state so far:")
        print(json.dumps(played.view, indent=2, default=str))
    return 3

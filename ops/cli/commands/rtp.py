"""`ledger rtp`: exact return to player of every bet type, by exhaustive enumeration
through the engine's own settlement functions (see domain/gamemath.py); blackjack: optimal
play for an infinite deck and the shoe, side bets, rule effects (ops/gamemath/rtp_blackjack.py)."""
from __future__ import annotations

import argparse
import json
import time

GAMES = ("baccarat", "teen-patti", "blackjack")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "rtp",
        help="exact game math: probability of win/push/lose and RTP of every bet type",
        description="Enumerate every deal exhaustively (weighted by card counts, no sampling) "
        "under the rule sets named (id and version) and print each bet type's win/push/lose probability "
        "and RTP.",
    )
    parser.add_argument("--game", choices=(*GAMES, "all"), default="all")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--effects", action="store_true",
                        help="blackjack: what flipping each rule-set Decision field does (about 10 s per rule set)")
    parser.set_defaults(func=handler)


def handler(args: argparse.Namespace) -> int:
    from ops.gamemath import rtp  # imported lazily: the CLI starts fast for other commands

    games = GAMES if args.game == "all" else (args.game,)
    report: dict[str, dict[str, object]] = {}
    text: list[str] = []
    for game in games:
        started = time.perf_counter()
        if game == "blackjack":
            report[game], lines = _blackjack(args.effects)
        else:
            rows = rtp.tables(game)
            report[game] = {"bets": [_enumerated(game, r.as_dict()) for r in rows]}
            lines = [f"  {'bet type':<28}{'win':>10}{'push':>10}{'lose':>10}{'RTP':>10}"] + [
                f"  {r.bet:<28}{float(r.win):>10.4%}{float(r.push):>10.4%}{float(r.lose):>10.4%}{float(r.rtp):>10.4%}"
                for r in rows]
        seconds = round(time.perf_counter() - started, 2)
        report[game]["seconds"] = seconds
        how = "optimal play" if game == "blackjack" else "exhaustive enumeration"
        name = game if game == "blackjack" else "{} v{}".format(*rtp.RULE_SETS[game].key)  # blackjack: a column
        text += [f"{name}  ({how}, {seconds} s)", *lines, ""]
    print(json.dumps(report, indent=2) if args.json else "\n".join(text))
    return 0


def _enumerated(game: str, row: dict[str, object]) -> dict[str, object]:
    """A baccarat / Teen Patti row with the fields every `ledger rtp` row has."""
    rtp = row["rtp"]
    assert isinstance(rtp, float)
    from ops.gamemath.rtp import RULE_SETS

    ruleset_id, version = RULE_SETS[game].key
    return {"ruleset_id": ruleset_id, "ruleset_version": version, "bet_type": row["bet"], "rtp_percent": round(100 * rtp, 4),
            "method": "exact, exhaustive enumeration of the shoe", **row}


def _blackjack(effects: bool) -> tuple[dict[str, object], list[str]]:
    """(JSON report, text lines): figures of every rule set, and with `effects` the rule flips."""
    from domain.blackjack_rules import RULE_SETS
    from ops.gamemath import rtp_blackjack

    figures = rtp_blackjack.all_figures()
    lines = [f"  {'rule set':<24}{'version':<9}{'bet type':<11}{'RTP':>10}  method"] + [
        f"  {f.ruleset_id:<24}{f'v{f.ruleset_version}':<9}{f.bet_type:<11}{100 * f.rtp:>9.4f}%  {f.method}"
        for f in figures]
    report: dict[str, object] = {"bets": [f.as_dict() for f in figures]}
    if effects:
        # per version: keyed by the id alone, v2's flips replaced v1's and the text named neither
        flips = [(r, rtp_blackjack.rule_effects(r)) for r in RULE_SETS]
        for r, changes in flips:
            lines += ["", f"  {r.id} v{r.version}: RTP change with one field flipped (shoe, percentage points)"]
            lines += [f"    {e.field:<26}-> {e.value:<14}{e.delta_percent:>+9.4f}" for e in changes]
        lines += ["", "  no effect on optimal play: "
                  + "; ".join(f"{k} ({v})" for k, v in rtp_blackjack.NO_EFFECT.items())]
        report.update(rule_effects=[{"ruleset_id": r.id, "ruleset_version": r.version,
                                     "effects": [vars(e) for e in v]} for r, v in flips],
                      no_effect=rtp_blackjack.NO_EFFECT)
    return report, lines

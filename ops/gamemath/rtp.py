"""`ledger rtp` for the table games: each bet line's win/push/lose probability
and RTP, exact, from the game math of domain/gamemath.py (an exhaustive,
weighted enumeration through the engine's own settlement functions, priced
with the rule set's paytable).

Probabilities are exact `Fraction`s; floats appear only when printing.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache

from domain import baccarat as bac
from domain import gamemath
from domain import teenpatti as tp
from domain.errors import InvariantBroken
from domain.registry import all_rule_sets
from domain.ruleset import RuleSet


@dataclass(frozen=True)
class BetMath:
    """Exact math of one bet: outcome probabilities and return to player."""

    bet: str
    win: Fraction
    push: Fraction
    lose: Fraction
    rtp: Fraction

    def as_dict(self) -> dict[str, object]:
        return {
            "bet": self.bet,
            "win": float(self.win), "push": float(self.push), "lose": float(self.lose),
            "rtp": float(self.rtp), "rtp_exact": f"{self.rtp.numerator}/{self.rtp.denominator}",
        }


def _row(label: str, counted: gamemath.Counted, odds_of: gamemath.OddsOf) -> BetMath:
    rtp, _variance, _top = gamemath.moments(gamemath.distribution(counted, odds_of))
    return BetMath(label, *gamemath.shares(counted), rtp)


def baccarat_label(bet_type: str, mode: str | None) -> str:
    """How `ledger rtp` names a bet line: the bet type, the Banker with its mode, e.g. `banker (no-commission)`."""
    return f"{bet_type} ({mode.replace('_', '-')})" if mode else bet_type


def baccarat_table(rules: bac.BaccaratRules = bac.LIVE_8D_V1) -> list[BetMath]:
    counts = gamemath.baccarat_counts(rules)
    return [_row(baccarat_label(t, m), counts[gamemath.line_key(t, m)], rules.odds)
            for t, m in gamemath.baccarat_lines(rules)]


def teenpatti_table(rules: tp.TeenPattiRules = tp.TWENTY_TWENTY_V1) -> list[BetMath]:
    """Every bet type the rule set offers, in its order; a bet of either hand (Pair Plus A and B,
    `tp.EITHER_HAND_BETS`) is one row naming both."""
    counts = gamemath.teenpatti_counts(rules)
    second = set(tp.EITHER_HAND_BETS.values())
    return [_row(f"{t} / {tp.EITHER_HAND_BETS[t]}" if t in tp.EITHER_HAND_BETS else t, counts[t], rules.odds)
            for t, _limit in rules.limits if t not in second]


EnumeratedRules = bac.BaccaratRules | tp.TeenPattiRules


def latest_rule_sets(published: list[RuleSet] | None = None) -> dict[str, EnumeratedRules]:
    """Per enumerated game ('baccarat', 'teen-patti'), the latest published version of its rule set:
    a new version (a new side bet's) shows in `ledger rtp` once it is in the game's RULE_SETS."""
    latest: dict[str, EnumeratedRules] = {}
    for rules in all_rule_sets() if published is None else published:
        if isinstance(rules, (bac.BaccaratRules, tp.TeenPattiRules)):
            if rules.game in latest and latest[rules.game].id != rules.id:  # the message is built only when broken
                raise InvariantBroken(f"ledger rtp shows one rule set per game: {rules.game} has two ids")
            if rules.game not in latest or rules.version > latest[rules.game].version:
                latest[rules.game] = rules
    return latest


RULE_SETS: dict[str, EnumeratedRules] = latest_rule_sets()


@cache
def tables(game: str) -> tuple[BetMath, ...]:
    """Memoized: 'baccarat' or 'teen-patti' under the rule sets of RULE_SETS (the latest of each)."""
    rules = RULE_SETS.get(game)
    if isinstance(rules, bac.BaccaratRules):
        return tuple(baccarat_table(rules))
    if isinstance(rules, tp.TeenPattiRules):
        return tuple(teenpatti_table(rules))
    raise ValueError(f"unknown game {game!r}")

"""Exact game math the monitor tests against: per rule set and bet line, the
mean return per unit staked (the theoretical RTP), its variance and the
largest return per unit, as exact fractions, and how the monitor writes them.

The figures come from domain/gamemath.py: the ways each paytable line pays,
counted through the engine's own settlement functions, priced with the rule
set's paytable (the odds are declared once, in the rule set).
tests/unit/domain/test_gamemath.py counts them afresh and checks the figures.

Baccarat Banker bets are keyed by mode (`banker:traditional`,
`banker:no_commission`): the two pay differently.

Not here, on purpose (the monitor shows their observed RTP but does not test
it): the blackjack `main` bet and `insurance`. The main bet's return depends
on the players' decisions (doubles, splits, surrender add stake and change
the odds); ops/gamemath/rtp_blackjack.py's figure assumes optimal play, while real
players (and the simulator's bet-behind followers) play otherwise, so a
fair table would be flagged for its players' mistakes. Insurance is only
offered when the dealer shows an ace and its odds depend on the cards seen
(composition-dependent); it is rare and small. Blackjack tables are tested on
their deal instead (up cards, dealer busts: projections/monitor_deal.py). See
docs/monitor.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from math import isqrt

from domain import gamemath


@dataclass(frozen=True)
class BetMath:
    """Return per unit staked of one bet type: exact mean and variance, largest value."""

    mean: Fraction
    variance: Fraction
    top: Fraction

    def sd_text(self, places: int = 6) -> str:
        """The standard deviation per unit staked as a decimal, rounded down (integer arithmetic)."""
        scale = 10 ** (2 * places)
        return decimal_text(Fraction(isqrt(self.variance.numerator * scale // self.variance.denominator),
                                     10**places), places)


def decimal_text(f: Fraction, places: int = 6) -> str:
    """An exact fraction as a decimal with `places` digits (rounded half to even), no float."""
    scaled = round(f * 10**places)
    sign, scaled = ("-" if scaled < 0 else ""), abs(scaled)
    return f"{sign}{scaled // 10**places}.{scaled % 10**places:0{places}d}"


def ratio_text(num: int, den: int, places: int = 6) -> str:
    """`decimal_text(Fraction(num, den), places)` in integer arithmetic (`den` != 0): the
    monitor writes an observed RTP per bet type and settlement, so this runs for every
    settlement line it folds, and a Fraction is built and normalised each time."""
    if den < 0:
        num, den = -num, -den
    scaled, rest = divmod(num * 10**places, den)
    if rest * 2 > den or (rest * 2 == den and scaled % 2):  # round half to even, as round(Fraction)
        scaled += 1
    sign, scaled = ("-" if scaled < 0 else ""), abs(scaled)
    return f"{sign}{scaled // 10**places}.{scaled % 10**places:0{places}d}"


@cache
def bet_math(ruleset_id: str, ruleset_version: int, bet_type: str) -> BetMath | None:
    """The exact figures of a bet type under a rule set, or None when the monitor does not test it."""
    found = gamemath.figures(ruleset_id, ruleset_version, bet_type)
    return None if found is None else BetMath(*found)


@cache
def bet_math_texts(ruleset_id: str, ruleset_version: int, bet_type: str) -> tuple[str | None, str | None]:
    """(theoretical RTP, standard deviation per unit) as the monitor writes them; (None, None) untested."""
    math = bet_math(ruleset_id, ruleset_version, bet_type)
    if math is None:
        return None, None
    return decimal_text(math.mean), math.sd_text()


def tested_bets() -> list[tuple[str, int, str]]:
    return gamemath.tested()

"""Exact game math the monitor tests against: per rule set and bet type, the
mean return per unit staked (the theoretical RTP), its variance and the
largest return per unit, as exact fractions.

Precomputed, because projections may not import ops (layering): the figures
come from the exhaustive enumerations of ops/rtp.py (baccarat, Teen Patti:
the engine's own settlement functions) and ops/rtp_blackjack.py (the live-8d
Pair side bet, exact for the 8-deck shoe);
tests/projections/test_monitor_math.py recomputes every one of them from
there and must match exactly. A new rule-set version needs its own entry.

Baccarat Banker bets are keyed by mode (`banker:traditional`,
`banker:no_commission`): the two pay differently.

Not here, on purpose (the monitor shows their observed RTP but does not test
it): the blackjack `main` bet and `insurance`. The main bet's return depends
on the players' decisions (doubles, splits, surrender add stake and change
the odds); ops/rtp_blackjack.py's figure assumes optimal play, while real
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
    monitor writes an observed RTP per bet type and settlement, and Fraction arithmetic
    was most of that view's time."""
    if den < 0:
        num, den = -num, -den
    scaled, rest = divmod(num * 10**places, den)
    if rest * 2 > den or (rest * 2 == den and scaled % 2):  # round half to even, as round(Fraction)
        scaled += 1
    sign, scaled = ("-" if scaled < 0 else ""), abs(scaled)
    return f"{sign}{scaled // 10**places}.{scaled % 10**places:0{places}d}"


# (rule set id, version, bet type) -> (mean, variance, largest return) per unit staked.
_EXACT: dict[tuple[str, int, str], tuple[str, str, str]] = {
    ("baccarat/live-8d", 1, "player"): ("19283843717413/19524993263685", "344891340492053315232095456/381225361946944627939779225", "2"),
    ("baccarat/live-8d", 1, "banker:traditional"): ("10732465128097/10847218479825", "101191667832985456634546596/117662148749056983932030625", "39/20"),
    ("baccarat/live-8d", 1, "banker:no_commission"): ("19240298465317/19524993263685", "329467781537238430221132416/381225361946944627939779225", "2"),
    ("baccarat/live-8d", 1, "tie"): ("619306544887/723147898655", "3647111442485028614000096/522942883329142150809025", "9"),
    ("baccarat/live-8d", 1, "player_pair"): ("372/415", "1714176/172225", "12"),
    ("baccarat/live-8d", 1, "banker_pair"): ("372/415", "1714176/172225", "12"),
    ("baccarat/live-8d", 1, "either_pair"): ("680326/788417", "2755440037376/621601365889", "6"),
    ("baccarat/live-8d", 1, "perfect_pair"): ("1469338/1689465", "62383319070176/2854291986225", "26"),
    ("baccarat/live-8d", 1, "player_natural"): ("4599/5395", "181002843/58212050", "9/2"),
    ("baccarat/live-8d", 1, "banker_natural"): ("4599/5395", "181002843/58212050", "9/2"),
    ("baccarat/live-8d", 1, "player_bonus"): ("3801450797986/3904998652737", "466526131190296662000865798/76245072389388925587955845", "31"),
    ("baccarat/live-8d", 1, "banker_bonus"): ("93623815842/103306842665", "10712519613272122557334694/2017065407126691153120525", "31"),
    ("baccarat/live-8d", 1, "lucky_six"): ("235761260096/282970916865", "23810246502959853967962112/1841668415202631052849175", "21"),
    ("baccarat/live-8d", 1, "lucky_six_2"): ("1769445112/2065481145", "80928440862432811976/4266212360350511025", "23"),
    ("baccarat/live-8d", 1, "lucky_six_3"): ("787942102888/929761583985", "36741660423646991297542136/864456603054296208480225", "51"),
    ("teen-patti/20-20", 1, "player_a"): ("9543327/9787750", "181938442502967/191600100125000", "39/20"),
    ("teen-patti/20-20", 1, "player_b"): ("9543327/9787750", "181938442502967/191600100125000", "39/20"),
    ("teen-patti/20-20", 1, "tie"): ("3249/57575", "9529563924/3314880625", "51"),
    ("teen-patti/20-20", 1, "pair_plus_a"): ("5143/5525", "256722376/30525625", "51"),
    ("teen-patti/20-20", 1, "pair_plus_b"): ("5143/5525", "256722376/30525625", "51"),
    ("teen-patti/20-20", 1, "six_card_bonus"): ("136879/149695", "11308369579413/380946081425", "1001"),
    ("blackjack/live-8d", 1, "pair"): ("372/415", "1714176/172225", "12"),
}


@cache
def bet_math(ruleset_id: str, ruleset_version: int, bet_type: str) -> BetMath | None:
    """The exact figures of a bet type under a rule set, or None when the monitor does not test it."""
    found = _EXACT.get((ruleset_id, ruleset_version, bet_type))
    if found is None:
        return None
    mean, variance, top = (Fraction(x) for x in found)
    return BetMath(mean, variance, top)


@cache
def bet_math_texts(ruleset_id: str, ruleset_version: int, bet_type: str) -> tuple[str | None, str | None]:
    """(theoretical RTP, standard deviation per unit) as the monitor writes them; (None, None) untested."""
    math = bet_math(ruleset_id, ruleset_version, bet_type)
    if math is None:
        return None, None
    return decimal_text(math.mean), math.sd_text()


def tested_bets() -> list[tuple[str, int, str]]:
    return sorted(_EXACT)

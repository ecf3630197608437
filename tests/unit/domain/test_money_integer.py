"""`win` in integers gives what the Fraction arithmetic gave: the same winnings and the
same exact remainder, for every stake and every odds (the settlement's money rests on it)."""
from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.money import AMOUNT_MAX_MINOR, Odds, Payout, win

stakes = st.integers(min_value=0, max_value=AMOUNT_MAX_MINOR) | st.integers(min_value=0, max_value=10_000)
ratios = st.fractions(min_value=0, max_value=1000, max_denominator=10**6) | st.sampled_from(
    [Fraction(3, 2), Fraction(19, 20), Fraction(6, 5), Fraction(1, 2), Fraction(0), Fraction(1000)]
)


def fraction_win(stake_minor: int, odds: Odds) -> Payout:
    """The earlier implementation, in Fractions: the reference."""
    exact = stake_minor * odds.ratio
    winnings = exact.numerator // exact.denominator
    return Payout(stake_minor, winnings, exact - winnings)


# 300 examples: tests/unit/domain/test_foundations.py (test_win_is_exact) checks the same
# exactness over other odds, and the paytables' odds are checked below.
@settings(max_examples=300, deadline=None)
@given(stakes, ratios)
def test_integer_win_is_the_fraction_win(stake_minor: int, ratio: Fraction) -> None:
    odds = Odds(ratio)
    got, want = win(stake_minor, odds), fraction_win(stake_minor, odds)
    assert got == want
    assert type(got.remainder) is Fraction and 0 <= got.remainder < 1
    assert (got.remainder.numerator, got.remainder.denominator) == (want.remainder.numerator, want.remainder.denominator)
    assert got.winnings_minor * ratio.denominator + got.remainder * ratio.denominator == stake_minor * ratio.numerator


@given(st.sampled_from(["3:2", "0.95:1", "6:5", "1:1", "25:1", "11:1", "2:1", "1000:1", "0:1"]), stakes)
def test_integer_win_with_the_paytables_odds(text: str, stake_minor: int) -> None:
    odds = Odds.parse(text)
    assert win(stake_minor, odds) == fraction_win(stake_minor, odds)

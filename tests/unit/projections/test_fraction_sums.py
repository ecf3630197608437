"""The views' remainder sums, added up in integers instead of Fractions: the same exact values."""
from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from ledger.records import SettlementLine
from projections.folding import fraction_text, kept_sum, parse_fraction, plus_fraction_text
from projections.monitor import settlement_sums

remainders = st.one_of(st.just((0, 1)), st.tuples(st.integers(-40, 40), st.sampled_from([1, 2, 3, 20, 40, 7])))
fractions = st.fractions(max_denominator=10**6)


def _line(bet_type: str, staked: int, remainder: tuple[int, int]) -> SettlementLine:
    return SettlementLine(bet_id="b", player_id="p", bet_type=bet_type, outcome="win", staked_minor=staked,
                          returned_minor=2 * staked, explanation="", remainder_num=remainder[0],
                          remainder_den=remainder[1])


@given(st.lists(remainders, max_size=12))
def test_kept_sum_is_the_fraction_sum(pairs: list[tuple[int, int]]) -> None:
    lines = [_line("player", 100, pair) for pair in pairs]
    assert kept_sum(lines) == sum((Fraction(n, d) for n, d in pairs if n), Fraction(0))


@given(fractions, fractions)
def test_plus_fraction_text_is_the_sum_text(before: Fraction, added: Fraction) -> None:
    assert plus_fraction_text(fraction_text(before), added) == fraction_text(parse_fraction(fraction_text(before)) + added)


@given(st.lists(st.tuples(st.sampled_from(["player", "tie"]), st.integers(1, 10**6), remainders), max_size=12))
def test_settlement_sums_keep_the_exact_remainders(items: list[tuple[str, int, tuple[int, int]]]) -> None:
    sums = settlement_sums(tuple(_line(t, s, r) for t, s, r in items), {})
    for bet_type, s in sums.items():
        assert s.kept == sum((Fraction(*r) for t, _, r in items if t == bet_type and r[0]), Fraction(0))

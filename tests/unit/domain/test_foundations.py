"""Cards, shoe counting, exact money, error policies, rule-set hashing."""
from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cards import ALL_CARDS, Card, CardCounter, parse_card, shoe_composition
from domain.errorpolicy import CAUSES, ErrorPolicy, policy
from domain.errors import InvariantBroken, Refusal, refuse_unless, require
from domain.money import (
    AMOUNT_MAX_MINOR,
    Leg,
    Odds,
    check_amount,
    check_balanced,
    check_currency,
    format_minor,
    transfer,
    win,
)
from domain.refusals import RefusalCode


@pytest.mark.parametrize(
    "text, canonical",
    [("AS", "AS"), ("as", "AS"), (" kh ", "KH"), ("10D", "TD"), ("TD", "TD"), ("td", "TD"), ("2c", "2C"), ("9H", "9H")],
)
def test_parse_card_accepts_common_forms(text: str, canonical: str) -> None:
    assert str(parse_card(text)) == canonical


@pytest.mark.parametrize("text", ["", "A", "1S", "11D", "AX", "ZS", "10", "ASD", "1 0D"])
def test_parse_card_refuses_non_cards(text: str) -> None:
    with pytest.raises(Refusal) as err:
        parse_card(text)
    assert err.value.code == "bad_card"



def test_parse_card_refuses_non_string() -> None:
    with pytest.raises(Refusal):
        parse_card(10)  # type: ignore[arg-type]


def test_every_card_round_trips() -> None:
    assert len(ALL_CARDS) == 52
    for card in ALL_CARDS:
        assert parse_card(str(card)) == card


def test_card_constructor_rejects_bad_rank() -> None:
    with pytest.raises(InvariantBroken):
        Card("1", "S")


@pytest.mark.parametrize("decks", [1, 6, 8])
def test_shoe_composition(decks: int) -> None:
    shoe = shoe_composition(decks)
    assert sum(shoe.values()) == 52 * decks
    assert shoe[parse_card("AS")] == decks


def test_ninth_ace_of_spades_in_eight_decks_is_impossible() -> None:
    counter = CardCounter(8)
    ace = parse_card("AS")
    for _ in range(8):  # the limit: all eight are fine
        counter.take(ace)
    with pytest.raises(Refusal) as err:  # one past it
        counter.take(ace)
    assert err.value.code == "impossible_card"
    assert "AS" in err.value.message
    assert counter.seen[ace] == 8  # the refused card was not counted
    assert counter.remaining == 8 * 52 - 8


def test_repeated_card_in_single_deck_is_impossible() -> None:
    counter = CardCounter(1)
    counter.take(parse_card("7H"))
    with pytest.raises(Refusal):
        counter.take(parse_card("7h"))


@pytest.mark.parametrize(
    "text, ratio",
    [("3:2", Fraction(3, 2)), ("0.95:1", Fraction(19, 20)), ("7:2", Fraction(7, 2)), ("1:2", Fraction(1, 2)),
     ("11:1", Fraction(11)), ("1000:1", Fraction(1000))],
)
def test_odds_parse_exactly(text: str, ratio: Fraction) -> None:
    assert Odds.parse(text).ratio == ratio


@pytest.mark.parametrize(
    "stake, odds, winnings, remainder",
    [
        (1000, "3:2", 1500, Fraction(0)),
        (1001, "3:2", 1501, Fraction(1, 2)),
        (1, "0.95:1", 0, Fraction(19, 20)),
        (999, "0.95:1", 949, Fraction(1, 20)),
        (1000, "1:2", 500, Fraction(0)),
        (3, "7:2", 10, Fraction(1, 2)),
        (5, "0:1", 0, Fraction(0)),
    ],
)
def test_win_rounds_down_and_keeps_remainder(stake: int, odds: str, winnings: int, remainder: Fraction) -> None:
    payout = win(stake, Odds.parse(odds))
    assert payout.winnings_minor == winnings
    assert payout.remainder == remainder
    assert payout.returned_minor == stake + winnings


@given(st.integers(0, AMOUNT_MAX_MINOR), st.integers(0, 1000), st.integers(1, 100))
def test_win_is_exact(stake: int, num: int, den: int) -> None:
    odds = Odds(Fraction(num, den))
    payout = win(stake, odds)
    assert payout.winnings_minor + payout.remainder == stake * odds.ratio
    assert 0 <= payout.remainder < 1
    assert isinstance(payout.winnings_minor, int)


@pytest.mark.parametrize("value", [0, -1, AMOUNT_MAX_MINOR + 1, 1.0, "10", True, None])
def test_check_amount_refuses(value: object) -> None:
    with pytest.raises(Refusal) as err:
        check_amount(value, "stake")
    assert err.value.code == "bad_amount"


@pytest.mark.parametrize("value", [1, AMOUNT_MAX_MINOR])
def test_check_amount_accepts_limits(value: int) -> None:
    assert check_amount(value, "stake") == value


def test_currency() -> None:
    assert check_currency("EUR") == "EUR"
    for bad in ["eur", "EURO", "E1R", 978]:
        with pytest.raises(Refusal):
            check_currency(bad)


def test_transfer_is_balanced_and_unbalanced_crashes() -> None:
    legs = transfer("player:p1", "round:r1", 500)
    check_balanced(legs)
    assert legs[0].amount_minor == -500 and legs[1].amount_minor == 500
    with pytest.raises(InvariantBroken):
        check_balanced([Leg("a", 5), Leg("b", -4)])


def test_format_minor() -> None:
    assert format_minor(123456) == "1,234.56"
    assert format_minor(-5, "EUR") == "-0.05 EUR"


def test_require_and_refuse_unless() -> None:
    require(True, "fine")
    with pytest.raises(InvariantBroken):
        require(False, "broken")
    with pytest.raises(Refusal) as err:
        refuse_unless(False, RefusalCode.BAD_AMOUNT, "why")
    assert err.value.as_dict() == {"code": "bad_amount", "message": "why"}


def test_policy_covers_every_cause() -> None:
    p = policy("test", default="pause", host_interruption="void")
    assert p.action_for("host_interruption") == "void"
    assert p.action_for("other") == "pause"
    assert len(p.actions) == len(CAUSES)
    with pytest.raises(Refusal):
        p.action_for("earthquake")
    with pytest.raises(InvariantBroken):
        ErrorPolicy(actions=(("other", "void"),), replace_shoe_on_void=False, source="x")

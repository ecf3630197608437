"""Teen Patti 20-20: hand ranking boundaries, paytable lines, 6 Card Bonus, refusals."""
from __future__ import annotations

import dataclasses

import pytest

from domain import teenpatti as tp
from domain.cards import parse_card
from domain.errors import Refusal
from domain.model import Bet

RULES = tp.TWENTY_TWENTY_V1
STAKE = 1000


def hand(text):
    return tuple(parse_card(t) for t in text.split())


def bet(bet_type, stake=STAKE, bet_id=None, player="p1", spot="table"):
    return Bet(bet_id or f"{player}-{bet_type}-{stake}", player, spot, bet_type, stake)


def play(a, b, bets, rules=RULES):
    model = tp.new_round(rules, round_in_shoe=1)
    for x in bets:
        model.place_bet(x)
    model.close_betting()
    for ca, cb in zip(hand(a), hand(b)):
        model.deal(ca, model.next_card_target())
        model.deal(cb, model.next_card_target())
    assert model.is_complete()
    return model


# ------------------------------------------------------------ ranking: higher first, lower second

BEATS = [
    ("AS AH AD", "KS KH KD"),  # trail of aces is top
    ("KS KH KD", "2S 2H 2D"),
    ("2S 2H 2D", "AS KS QS"),  # lowest trail beats the best pure sequence
    ("AS KS QS", "AH 2H 3H"),  # A-K-Q > A-2-3
    ("AH 2H 3H", "KH QH JH"),  # A-2-3 > K-Q-J
    ("KH QH JH", "QD JD TD"),
    ("4C 3C 2C", "AS KD QC"),  # lowest pure sequence beats the best sequence
    ("AS KD QC", "AH 2D 3C"),
    ("AH 2D 3C", "KS QD JC"),
    ("KS QD JC", "4S 3D 2C"),
    ("4S 3D 2C", "AS KS JS"),  # lowest sequence beats the best colour
    ("AS KS JS", "AH KH TH"),  # colour: second card decides
    ("AH KH TH", "AD QD JD"),
    ("AC QC 9C", "AD QD 8D"),  # colour: third card decides
    ("5S 3S 2S", "AS AH KD"),  # lowest colour beats the best pair
    ("AS AH KD", "AC AD QD"),  # pair: kicker decides
    ("AC AD 2D", "KS KH QD"),  # pair rank first
    ("3S 3H 4D", "2C 2D AH"),
    ("2C 2D 3H", "AS KD JC"),  # lowest pair beats the best high card
    ("AS KD JC", "AH KH 9C"),  # suits never decide: high card compares ranks only
    ("AS KD 9C", "AH QH JC"),
    ("KH AD 2C", "KS QD TC"),  # K-A-2 is not a sequence: high card A-K-2
    ("KC QD TH", "KD JH TC"),
    ("6S 4D 2C", "5S 4H 2D"),
    ("6S 6D 3C", "6H 6C 2D"),  # pairs of sixes: kicker decides
]


@pytest.mark.parametrize("high, low", BEATS)
def test_rank_order(high, low):
    assert tp.rank_hand(hand(high)) > tp.rank_hand(hand(low))
    assert tp.compare_hands(hand(high), hand(low), RULES) == 1
    assert tp.compare_hands(hand(low), hand(high), RULES) == -1


@pytest.mark.parametrize(
    "cards, category, name",
    [
        ("AS AH AD", "trail", "Trail of aces"),
        ("QS QH QD", "trail", "Trail of queens"),
        ("QS KS AS", "pure_sequence", "Pure Sequence A-K-Q"),
        ("3S AS 2S", "pure_sequence", "Pure Sequence A-2-3"),
        ("AS 2D 3C", "sequence", "Sequence A-2-3"),
        ("TS JD QC", "sequence", "Sequence Q-J-10"),
        ("KH AD 2C", "high_card", "High Card A-K-2"),
        ("9H 7H 5H", "colour", "Colour 9-7-5"),
        ("9S 9D 4C", "pair", "Pair of nines, kicker 4"),
        ("QH 9C 7S", "high_card", "High Card Q-9-7"),
    ],
)
def test_categories_and_names(cards, category, name):
    assert tp.category_of(hand(cards)) == category
    assert tp.hand_name(hand(cards)) == name


@pytest.mark.parametrize(
    "a, b",
    [("AS KD QC", "AH KC QD"), ("9S 9D 4C", "9H 9C 4D"), ("QH 9C 7S", "QD 9H 7C")],
)
def test_same_three_ranks_tie(a, b):
    assert tp.compare_hands(hand(a), hand(b), RULES) == 0


def test_category_decides_before_the_same_ranks_tie_by_decision():
    suited, unsuited = hand("KS QS JS"), hand("KH QD JC")
    assert tp.compare_hands(suited, unsuited, RULES) == 1  # Pure Sequence beats Sequence
    assert tp.compare_hands(unsuited, suited, RULES) == -1
    literal = dataclasses.replace(RULES, tie_when_same_ranks=True)
    assert tp.compare_hands(suited, unsuited, literal) == 0


# ------------------------------------------------------------ paytable

A_WINS = ("AS AH KD", "QS JD 9C")  # pair of aces vs high card
TIE = ("AS KD QC", "AH KC QD")


@pytest.mark.parametrize(
    "a, b, bet_type, outcome, back",
    [
        (*A_WINS, "player_a", "win", 1950),
        (*A_WINS, "player_b", "lose", 0),
        (*A_WINS, "tie", "lose", 0),
        (A_WINS[1], A_WINS[0], "player_b", "win", 1950),
        (*TIE, "player_a", "push", 1000),
        (*TIE, "player_b", "push", 1000),
        (*TIE, "tie", "win", 51000),
        (*A_WINS, "pair_plus_a", "win", 2000),
        (*A_WINS, "pair_plus_b", "lose", 0),
        ("AS AH AD", "KS QD 9C", "pair_plus_a", "win", 51000),
        ("KS KH KD", "AS QD 9C", "pair_plus_a", "win", 41000),
        ("KS QS JS", "AH QD 9C", "pair_plus_a", "win", 31000),
        ("KS QD JS", "AH QC 9C", "pair_plus_a", "win", 7000),
        ("KS 9S 2S", "AH QD 9C", "pair_plus_a", "win", 4000),
        ("2S 2D 3S", "AH QD 9C", "pair_plus_a", "win", 2000),  # pays although A loses
        ("2S 5D 3S", "AH QD 9C", "pair_plus_a", "lose", 0),
    ],
)
def test_paytable_line(a, b, bet_type, outcome, back):
    [r] = play(a, b, [bet(bet_type)]).settle()
    assert (r.outcome, r.returned_minor, r.staked_minor) == (outcome, back, STAKE)


@pytest.mark.parametrize(
    "a, b, category, back",
    [
        ("AS QS TS", "KS JS 2D", "royal_flush", 1_001_000),  # royal flush across both hands
        ("AH 2H 3H", "4H 5H KC", "straight_flush", 201_000),  # A-2-3-4-5 suited
        ("9D 8D 7D", "6D 5D 5C", "straight_flush", 201_000),
        ("KS KH 2C", "KD KC 3S", "four_of_a_kind", 101_000),
        ("QS QH QD", "JS JH 2C", "full_house", 21_000),
        ("AS 9S 2S", "7S 4S KD", "flush", 16_000),
        ("AS 2D 3C", "4H 5S 9D", "straight", 11_000),  # A-2-3-4-5 across both hands
        ("TS JD QC", "KH AS 2D", "straight", 11_000),
        ("7S 7H 7D", "2C 9H KD", "three_of_a_kind", 8_000),
        ("7S 7H 2D", "2C 9H KD", "two_pair", 0),
        ("AS KD 9C", "7H 4S 2D", "high_card", 0),
    ],
)
def test_six_card_bonus(a, b, category, back):
    assert tp.six_card_category(hand(a) + hand(b), RULES) == category
    [r] = play(a, b, [bet("six_card_bonus")]).settle()
    assert r.returned_minor == back


def test_ace_low_straight_is_a_decision():
    no_wheel = dataclasses.replace(RULES, six_card_ace_low_straight=False)
    assert tp.six_card_category(hand("AS 2D 3C 4H 5S 9D"), no_wheel) == "high_card"
    assert tp.six_card_category(hand("AS 2D 3C 4H 5S 9D"), RULES) == "straight"


def test_player_a_rounds_down_and_keeps_the_remainder():
    [r] = play(*A_WINS, [bet("player_a", 1001)]).settle()
    assert r.returned_minor == 1001 + 950
    assert (r.remainder_num, r.remainder_den) == (19, 20)
    assert "Player A wins: Pair of aces, kicker K beats High Card Q-J-9" in r.explanation
    assert "19:20 → returns 19.51 (stake 10.01 + winnings 9.50)" in r.explanation  # issue 20: one labelled arrow


# ------------------------------------------------------------ deal order, limits, refusals


def _refused(model, action, code):
    before = model.view()
    with pytest.raises(Refusal) as err:
        action()
    assert err.value.code == code
    assert model.view() == before


def test_deal_order_a_b_alternating():
    model = tp.new_round(RULES, round_in_shoe=1)
    model.close_betting()
    targets = []
    for card in hand("2S 3S 4S 5S 6S 7S"):
        targets.append(model.next_card_target())
        model.deal(card, targets[-1])
    assert targets == ["A", "B", "A", "B", "A", "B"]
    assert model.next_card_target() is None and model.is_complete()


def test_every_refusal_code():
    m = tp.new_round(RULES, round_in_shoe=1)
    m.place_bet(bet("player_a", bet_id="x"))
    _refused(m, lambda: m.place_bet(bet("tie", bet_id="x")), "duplicate_bet_id")
    _refused(m, lambda: m.place_bet(bet("tie", spot="box:1")), "bad_spot")
    _refused(m, lambda: m.place_bet(bet("player")), "bet_not_offered")
    _refused(m, lambda: m.place_bet(bet("tie", stake=-5)), "bad_amount")
    _refused(m, lambda: m.deal(parse_card("AS"), "A"), "card_not_expected")
    _refused(m, m.settle, "round_not_complete")
    _refused(m, lambda: m.decide("A", "hit", "player"), "no_decisions")
    _refused(m, lambda: m.follow("x", "split", True), "no_follow_offers")
    m.close_betting()
    _refused(m, lambda: m.place_bet(bet("tie")), "betting_closed")
    _refused(m, m.close_betting, "betting_closed")
    _refused(m, lambda: m.deal(parse_card("AS"), "B"), "wrong_target")
    m.deal(parse_card("AS"), "A")
    _refused(m, lambda: m.deal(parse_card("AS"), "B"), "impossible_card")  # one deck
    for text in "KS QS JS TS 9S".split():
        m.deal(parse_card(text), m.next_card_target())
    _refused(m, lambda: m.deal(parse_card("2C"), "A"), "card_not_expected")
    few = dataclasses.replace(RULES, bets_per_round_max=1)
    f = tp.new_round(few, round_in_shoe=1)
    f.place_bet(bet("tie"))
    _refused(f, lambda: f.place_bet(bet("player_a")), "too_many_bets")
    assert m.legal_decisions() == {} and m.pending_follows() == []


@pytest.mark.parametrize("bet_type", tp.BET_TYPES)
def test_limits_at_the_limit_and_one_past(bet_type):
    limit = RULES.limit_for(bet_type)
    m = tp.new_round(RULES, round_in_shoe=1)
    _refused(m, lambda: m.place_bet(bet(bet_type, limit.min_minor - 1)), "stake_below_minimum")
    m.place_bet(bet(bet_type, limit.min_minor, "a"))
    m.place_bet(bet(bet_type, limit.max_minor - limit.min_minor, "b"))
    _refused(m, lambda: m.place_bet(bet(bet_type, limit.min_minor, "c")), "stake_above_maximum")
    m.place_bet(bet(bet_type, limit.max_minor, "d", player="p2"))  # limits are per player


@pytest.mark.parametrize("value", [0, -1, "1", None, 10**9 + 1])
def test_bad_round_number(value):
    with pytest.raises(Refusal) as err:
        tp.new_round(RULES, round_in_shoe=value)
    assert err.value.code == "bad_round_in_shoe"


def test_rule_set_identity_and_error_policy():
    assert tp.RULE_SETS == (RULES,)
    assert (RULES.id, RULES.version, RULES.game, RULES.decks) == ("teen-patti/20-20", 1, "teen-patti", 1)
    assert RULES.error_policy.action_for("player_connection_lost") == "complete"
    assert RULES.error_policy.action_for("system_error") == "pause"
    assert str(RULES.odds("tie")) == "50:1" and str(RULES.odds("player")) == "19:20"

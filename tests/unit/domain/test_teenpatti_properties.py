"""Teen Patti invariants over random legal rounds from a seeded shuffled deck."""
from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from domain import teenpatti as tp
from domain.cards import ALL_CARDS
from domain.errors import Refusal
from domain.model import Bet

RULES = tp.TWENTY_TWENTY_V1
MAX_WIN = {"player_a": 0.95, "player_b": 0.95, "tie": 50, "pair_plus_a": 50, "pair_plus_b": 50,
           "six_card_bonus": 1000}
bets_strategy = st.lists(st.tuples(st.sampled_from(tp.BET_TYPES), st.integers(100, 50_000)), max_size=8)


def run(seed, bets):
    deck = list(ALL_CARDS)
    random.Random(seed).shuffle(deck)
    model = tp.new_round(RULES, round_in_shoe=1)
    placed = [Bet(f"b{i}", f"p{i}", "table", t, s) for i, (t, s) in enumerate(bets)]
    for b in placed:
        model.place_bet(b)
    model.close_betting()
    dealt = []
    while (target := model.next_card_target()) is not None:
        dealt.append((deck.pop(), target))
        model.deal(*dealt[-1])
    return model, placed, dealt


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), bets_strategy)
def test_random_rounds_complete_and_settle_within_the_paytable(seed, bets):
    model, placed, dealt = run(seed, bets)
    assert model.is_complete()
    results = model.settle()
    assert results == model.settle()
    for r, b in zip(results, placed, strict=True):
        assert 0 <= r.returned_minor <= b.stake_minor * (1 + MAX_WIN[b.bet_type])
        assert (r.outcome == "lose") == (r.returned_minor == 0)
    again = tp.new_round(RULES, round_in_shoe=1)
    for b in placed:
        again.place_bet(b)
    again.close_betting()
    for card, target in dealt:
        again.deal(card, target)
    assert again.view() == model.view() and again.settle() == results


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 6), st.sampled_from(["A", "B", "player", "burn"]))
def test_wrong_or_unexpected_cards_change_nothing(seed, stop, wrong):
    deck = list(ALL_CARDS)
    random.Random(seed).shuffle(deck)
    model = tp.new_round(RULES, round_in_shoe=1)
    model.close_betting()
    for _ in range(stop):
        model.deal(deck.pop(), model.next_card_target())
    before, expected = model.view(), model.next_card_target()
    if wrong != expected:
        try:
            model.deal(deck.pop(), wrong)
            raise AssertionError("accepted")
        except Refusal as refusal:
            assert refusal.code in ("wrong_target", "card_not_expected")
        assert model.view() == before
    if stop and expected is not None:  # a card already dealt this round is impossible
        try:
            model.deal(model.hands["A"][0], expected)
            raise AssertionError("accepted a repeated card")
        except Refusal as refusal:
            assert refusal.code == "impossible_card"
        assert model.view() == before


@settings(max_examples=200, deadline=None)
@given(st.permutations(ALL_CARDS))
def test_comparison_is_antisymmetric_and_tie_means_same_ranks(deck):
    a, b = tuple(deck[:3]), tuple(deck[3:6])
    assert tp.compare_hands(a, b, RULES) == -tp.compare_hands(b, a, RULES)
    # a tie needs the same ranks in the same category: 5-6-9 suited (a colour) beats 5-6-9 offsuit
    same = sorted(c.rank for c in a) == sorted(c.rank for c in b) and tp.category_of(a) == tp.category_of(b)
    assert (tp.compare_hands(a, b, RULES) == 0) == same


def test_category_counts_over_all_22100_hands_are_the_textbook_counts():
    counts = Counter(tp.category_of(h) for h in combinations(ALL_CARDS, 3))
    assert counts == {"trail": 52, "pure_sequence": 48, "sequence": 720, "colour": 1096,
                      "pair": 3744, "high_card": 16440}


def test_every_pair_ranks_by_its_pair_then_its_kicker_in_any_order_of_its_cards() -> None:
    """`rank_hand` reads a pair from three sorted values without counting them: checked against
    a count over all 3,744 pairs, each in all six orders of its cards."""
    from itertools import permutations

    pairs = 0
    for hand in combinations(ALL_CARDS, 3):
        counts = Counter(tp.RANK_VALUE[c.rank] for c in hand)
        if len(counts) != 2:
            continue
        pairs += 1
        pair, kicker = (max(counts, key=counts.__getitem__), min(counts, key=counts.__getitem__))
        for order in permutations(hand):
            assert tp.rank_hand(order) == (tp.CATEGORIES.index("pair"), (pair, kicker)), order
    assert pairs == 3744

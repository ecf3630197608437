"""Baccarat invariants over random legal rounds dealt from a seeded shuffled 8-deck shoe."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from domain import baccarat as bac
from domain.cards import shoe_composition
from domain.errors import Refusal
from domain.model import Bet

RULES = bac.LIVE_8D_V1
# The most a bet type can ever win per unit staked (from the seed's paytable, written out here).
MAX_WIN = {
    "player": 1, "banker": 1, "tie": 8, "player_pair": 11, "banker_pair": 11, "either_pair": 5,
    "perfect_pair": 25, "player_natural": 3.5, "banker_natural": 3.5, "player_bonus": 30,
    "banker_bonus": 30, "lucky_six": 20, "lucky_six_2": 22, "lucky_six_3": 50,
}
SHOE = sorted(shoe_composition(8).elements())

bets_strategy = st.lists(
    st.tuples(st.sampled_from(bac.BET_TYPES), st.integers(100, 50_000), st.sampled_from([None, *bac.MODES])),
    max_size=8,
)


def run(seed, round_in_shoe, bets):
    shoe = list(SHOE)
    random.Random(seed).shuffle(shoe)
    model = bac.new_round(RULES, round_in_shoe=round_in_shoe)
    calls = []
    for i, (bet_type, stake, mode) in enumerate(bets):
        b = Bet(f"b{i}", f"p{i}", "table", bet_type, stake, mode)
        try:
            model.place_bet(b)
            calls.append(b)
        except Refusal as refusal:
            assert refusal.code == "bet_not_offered"  # only max-round refusals for these stakes
    model.close_betting()
    dealt = []
    while (target := model.next_card_target()) is not None:
        card = shoe.pop()
        model.deal(card, target)
        dealt.append((card, target))
    return model, calls, dealt


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 70), bets_strategy)
def test_random_rounds_complete_and_settle_within_the_paytable(seed, round_in_shoe, bets):
    model, calls, dealt = run(seed, round_in_shoe, bets)
    assert model.is_complete()
    assert 4 <= len(model.player) + len(model.banker) <= 6
    results = model.settle()
    assert results == model.settle()  # deterministic
    assert [r.bet_id for r in results] == [b.bet_id for b in calls]
    for r, b in zip(results, calls):
        assert r.staked_minor == b.stake_minor
        assert 0 <= r.returned_minor <= b.stake_minor * (1 + MAX_WIN[b.bet_type])
        assert (r.outcome == "lose") == (r.returned_minor == 0)
        assert (r.outcome == "push") == (r.returned_minor == b.stake_minor)
        assert 0 <= r.remainder_num < r.remainder_den
    # Replaying the same calls gives the same state and settlement.
    again = bac.new_round(RULES, round_in_shoe=round_in_shoe)
    for b in calls:
        again.place_bet(b)
    again.close_betting()
    for card, target in dealt:
        again.deal(card, target)
    assert again.view() == model.view()
    assert again.settle() == results


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 3), st.integers(0, 8), st.sampled_from(["player", "banker", "burn", "A", "dealer"]))
def test_wrong_target_or_unexpected_card_is_refused_and_changes_nothing(seed, round_in_shoe, stop, wrong):
    shoe = list(SHOE)
    rng = random.Random(seed)
    rng.shuffle(shoe)
    model = bac.new_round(RULES, round_in_shoe=round_in_shoe)
    model.close_betting()
    for _ in range(stop):
        target = model.next_card_target()
        if target is None:
            break
        model.deal(shoe.pop(), target)
    before = model.view()
    expected = model.next_card_target()
    if wrong == expected:
        return
    try:
        model.deal(shoe.pop(), wrong)
        raise AssertionError("a card to the wrong target was accepted")
    except Refusal as refusal:
        assert refusal.code == ("card_not_expected" if expected is None else "wrong_target")
    assert model.view() == before

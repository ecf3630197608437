"""The game models' read-only `outcome()` (domain/outcome.py): refused before the round is
complete, changes nothing, and agrees with the cards dealt and with `settle()`."""
from __future__ import annotations

import random
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import baccarat, blackjack, teenpatti
from domain.blackjack_rules import hand_total as blackjack_total
from domain.cards import ALL_CARDS, parse_card
from domain.errors import Refusal
from domain.model import Bet
from domain.refusals import RefusalCode
from tests.unit.domain.test_blackjack_props import Driver


def _table_round(module, rules, cards: list[str], bet_types: tuple[str, ...], round_in_shoe: int = 2):  # type: ignore[no-untyped-def]
    model = module.new_round(rules, round_in_shoe=round_in_shoe)
    for i, bet_type in enumerate(bet_types):
        model.place_bet(Bet(f"b{i}", f"p{i}", "table", bet_type, 1000))
    model.close_betting()
    for card in cards:
        target = model.next_card_target()
        if target is None:
            break
        model.deal(parse_card(card), target)
    return model


@pytest.mark.parametrize(("module", "rules", "bet_type"), [
    (baccarat, baccarat.LIVE_8D_V1, "player"),
    (teenpatti, teenpatti.RULE_SETS[0], "player_a"),
    (blackjack, blackjack.RULE_SETS[0], None),
])
def test_no_outcome_before_the_round_is_complete(module, rules, bet_type) -> None:  # type: ignore[no-untyped-def]
    if bet_type is None:
        model = module.new_round(rules, round_in_shoe=1)
        model.place_bet(Bet("b1", "p1", "seat:1", "main", 1000))
        model.close_betting()
        model.deal(parse_card("TH"), "seat:1")
    else:
        model = _table_round(module, rules, ["2H", "3D"], (bet_type,))
    with pytest.raises(Refusal) as refused:
        model.outcome()
    assert refused.value.code == RefusalCode.ROUND_NOT_COMPLETE


def _deck(rng: random.Random, decks: int) -> list[str]:
    cards = [str(c) for c in ALL_CARDS] * decks
    rng.shuffle(cards)
    return cards


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_baccarat_outcome_agrees_with_the_cards_and_the_settlement(seed: int) -> None:
    rules = baccarat.LIVE_8D_V1
    model = _table_round(baccarat, rules, _deck(random.Random(seed), rules.decks), ("player", "banker", "tie"))
    before = model.view()
    out = model.outcome()
    assert model.view() == before  # read-only
    player, banker = out.hands
    assert list(player.cards) == before["player"]["cards"] and list(banker.cards) == before["banker"]["cards"]
    assert (player.total, banker.total) == (before["player"]["total"], before["banker"]["total"])
    assert out.winner == ("tie" if player.total == banker.total else "player" if player.total > banker.total
                          else "banker")
    results = {r.bet_type: r.outcome for r in model.settle()}
    if out.winner == "tie":
        assert results["tie"] == "win" and results["player"] == results["banker"] == "push"
    else:
        assert results[out.winner] == "win" and results["tie"] == "lose"


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_teen_patti_outcome_agrees_with_the_cards_and_the_settlement(seed: int) -> None:
    rules = teenpatti.RULE_SETS[0]
    model = _table_round(teenpatti, rules, _deck(random.Random(seed), 1), ("player_a", "player_b", "six_card_bonus"))
    out = model.outcome()
    a, b = (tuple(parse_card(c) for c in h.cards) for h in out.hands)
    assert [h.category for h in out.hands] == [teenpatti.category_of(a), teenpatti.category_of(b)]
    assert dict(out.categories)["six_card_bonus"] == teenpatti.six_card_category(a + b, rules)
    results = {r.bet_type: r.outcome for r in model.settle()}
    if out.winner == "tie":
        assert results["player_a"] == results["player_b"] == "push"
    else:
        assert results[f"player_{out.winner.lower()}"] == "win"
    six_pays = teenpatti.SIX_CARD_CATEGORIES.index(dict(out.categories)["six_card_bonus"]) <= \
        teenpatti.SIX_CARD_CATEGORIES.index("three_of_a_kind")
    assert (results["six_card_bonus"] == "win") == six_pays


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rules=st.sampled_from(blackjack.RULE_SETS))
def test_blackjack_outcome_has_one_line_per_hand_and_every_main_stake(seed: int, rules) -> None:  # type: ignore[no-untyped-def]
    d = Driver(rules, seed, illegal=False)
    d.play()
    view = d.model.view()
    out = d.model.outcome()
    assert [h.hand for h in out.hands] == [h["name"] for h in view["hands"]]
    assert out.dealer is not None and list(out.dealer.cards) == view["dealer"]["cards"]
    assert out.dealer.total == blackjack_total([parse_card(c) for c in out.dealer.cards])[0]
    staked: dict[str, int] = defaultdict(int)
    for hand in out.hands:
        assert hand.total == blackjack_total([parse_card(c) for c in hand.cards])[0]
        assert hand.result in ("win", "lose", "push", "surrender", "even_money")
        for stake in hand.stakes or ():
            staked[stake.bet_id] += stake.amount_minor
    mains = {r.bet_id: r.staked_minor for r in d.model.settle() if r.bet_type == "main"}
    assert dict(staked) == mains  # every main stake (splits, doubles, follows) lies on exactly one hand line
    categories = dict(out.categories)
    for r in d.model.settle():
        if r.bet_type == "pair":  # the Pair bet reads the category its seat shows
            spot = next(b.spot for b in d.placed if b.bet_id == r.bet_id)
            seat = f"{rules.spot_kind}:{spot.split(':')[1]}"
            assert (categories[f"pair:{seat}"] == "pair") == (r.outcome == "win")
    if out.hands and all(h.status in ("bust", "surrendered") for h in out.hands):
        if len(out.dealer.cards) == 1:
            assert "no further card" in out.notes[0]
        else:  # insurance or a player blackjack still needs the dealer's second card, and only that
            assert len(out.dealer.cards) == 2 and "drew only the second card" in out.notes[0]

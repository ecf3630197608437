"""Property tests: random legal blackjack rounds of every rule set.

A seeded random.Random drives bets, cards from a shuffled shoe and decisions
picked from legal_decisions(); hypothesis picks the seeds.
"""
from __future__ import annotations

import random
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.blackjack import RULE_SETS, new_round
from domain.cards import ALL_CARDS, Card
from domain.errors import Refusal
from domain.model import Bet, StakeMove
from ops.sim.strategy import basic_strategy  # the simulator's players: realistic play to check the rules against

STEPS_MAX = 600
ACTIONS = ("hit", "stand", "double", "split", "insurance", "no_insurance", "even_money", "surrender", "auto")


def _random_bets(rules, rng: random.Random) -> list[Bet]:
    low = rules.limit_for("main").min_minor
    kinds = [rules.spot_kind, rules.spot_kind, "behind", "behind"]
    bets = []
    for i in range(rng.randint(1, 20)):
        spot = f"{rng.choice(kinds)}:{rng.randint(1, rules.spots_count)}"
        bet_type = rng.choice(["main", "main", "main", "pair"])
        stake = rng.choice([low, low * 2, low * 3 + 1, low * 10, 500_000, 250_001])
        seat = rng.choice([None, rng.randint(1, 7)])
        bets.append(Bet(f"b{i}", f"p{rng.randint(1, 6)}", spot, bet_type, stake, seat_no=seat))
    return bets


class Driver:
    """Plays one random round and records every call (refused ones too) for replay."""

    def __init__(self, rules, seed: int, illegal: bool) -> None:
        self.rules = rules
        self.rng = random.Random(seed)
        self.illegal = illegal
        self.shoe = list(ALL_CARDS) * rules.decks
        self.rng.shuffle(self.shoe)
        self.model = new_round(rules, round_in_shoe=1)
        self.calls: list[tuple[str, tuple]] = []
        self.moves: list[StakeMove] = []
        self.placed: list[Bet] = []

    def call(self, name: str, *args):
        self.calls.append((name, args))
        return getattr(self.model, name)(*args)

    def try_call(self, name: str, *args) -> bool:
        before = self.model.view()
        try:
            out = self.call(name, *args)
        except Refusal:
            assert self.model.view() == before, f"{name}{args} was refused but changed the model"
            return False
        if name in ("decide", "follow"):
            self.moves += out
        return True

    def play(self) -> None:
        for bet in _random_bets(self.rules, self.rng):
            if self.try_call("place_bet", bet):
                self.placed.append(bet)
        self.call("close_betting")
        for _ in range(STEPS_MAX):
            if self.model.is_complete():
                return
            if self.illegal and self.rng.random() < 0.15:
                self.poke()
                continue
            self.step()
        raise AssertionError(f"round did not complete in {STEPS_MAX} steps: {self.model.view()}")

    def step(self) -> None:
        for offer in self.model.pending_follows():
            if self.rng.random() < 0.6:
                assert self.try_call("follow", offer.bet_id, offer.kind, self.rng.random() < 0.5)
        target = self.model.next_card_target()
        if target is not None:
            assert self.try_call("deal", self.shoe.pop(), target)
            return
        legal = self.model.legal_decisions()
        assert legal, f"no card and no decision expected: {self.model.view()}"
        hand = self.rng.choice(sorted(legal))
        actions = legal[hand]
        if self.rng.random() < 0.5:
            view = self.model.view()
            cards = next(h["cards"] for h in view["hands"] if h["name"] == hand or h["spot"] == hand)
            from domain.cards import parse_card

            action = basic_strategy([parse_card(c) for c in cards], parse_card(view["dealer"]["cards"][0]), actions)
        else:
            action = self.rng.choice(actions)
        source = "timeout" if action == "auto" else "player"
        amount = None
        if action == "insurance" and self.rules.insurance_amount == "half_min_to_half_stake" and self.rng.random() < 0.5:
            amount = self.rng.randint(self.rules.limit_for("main").min_minor // 2, 600)
        ok = self.try_call("decide", hand, action, source, amount)
        assert ok or amount is not None, f"legal {action} on {hand} was refused"

    def poke(self) -> None:
        """Something probably illegal; if refused, the model must not have changed."""
        names = [h["name"] for h in self.model.view()["hands"]] + ["dealer", "seat:9", "box:1.7"]
        kind = self.rng.randrange(4)
        if kind == 0:
            card = Card(self.rng.choice("A23456789TJQK"), self.rng.choice("SHDC"))
            self.try_call("deal", card, self.rng.choice(names))
            # a legal card consumed a shoe card's slot: keep shoe plausibility by not reusing it
        elif kind == 1:
            self.try_call("decide", self.rng.choice(names), self.rng.choice(ACTIONS), "player", None)
        elif kind == 2:
            self.try_call("follow", f"b{self.rng.randint(0, 20)}", self.rng.choice(("split", "double")), True)
        else:
            self.try_call("place_bet", Bet("late", "p1", "seat:1", "main", 1000))


def replay(rules, calls):
    model = new_round(rules, round_in_shoe=1)
    for name, args in calls:
        try:
            getattr(model, name)(*args)
        except Refusal:
            pass
    return model


def check_settlement(d: Driver) -> None:
    results = d.model.settle()
    assert results == d.model.settle()  # deterministic
    max_ratio = 1 + d.rules.max_odds.ratio
    by_line: dict[str, int] = {}
    for bet in d.placed:
        by_line[bet.bet_id] = by_line.get(bet.bet_id, 0) + bet.stake_minor
    for m in d.moves:
        by_line[m.bet_id] = by_line.get(m.bet_id, 0) + m.amount_minor
    assert {r.bet_id for r in results} == set(by_line)
    for r in results:
        assert r.staked_minor == by_line[r.bet_id], r
        assert 0 <= r.returned_minor <= r.staked_minor * max_ratio, r
        assert 0 <= Fraction(r.remainder_num, r.remainder_den) < 1, r
        assert r.outcome in ("win", "lose", "push", "mixed", "surrender", "even_money"), r
        assert r.explanation
    assert sum(r.staked_minor for r in results) == sum(b.stake_minor for b in d.placed) + sum(
        m.amount_minor for m in d.moves)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rules=st.sampled_from(RULE_SETS))
def test_random_legal_rounds_complete_and_settle_within_paytable(seed, rules) -> None:
    d = Driver(rules, seed, illegal=False)
    d.play()
    check_settlement(d)
    again = replay(rules, d.calls)
    assert again.view() == d.model.view()
    assert again.settle() == d.model.settle()


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rules=st.sampled_from(RULE_SETS))
def test_random_illegal_actions_are_refused_without_change(seed, rules) -> None:
    d = Driver(rules, seed, illegal=True)
    d.play()
    check_settlement(d)
    assert replay(rules, d.calls).view() == d.model.view()

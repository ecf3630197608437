"""Blackjack game math (ops/gamemath/rtp_blackjack.py) against an independent computation.

`_Independent` below is a second infinite-deck solver written from the rule text
(docs: ../shared/spec/rules.md), sharing no code with the module: its own hand
totals, dealer recursion on (total, soft), and closed forms for splits (two or
three hands, or unlimited resplits: E = (1-p) V / (1-2p)). Both are exact up to
float rounding, so they must agree to TOLERANCE. The shoe figures are checked
against the full composition-dependent computation (precomputed, slow test) and
the figures the spec states.
"""
from __future__ import annotations

import dataclasses
import os
from fractions import Fraction
from functools import cache

import pytest

from domain.blackjack_rules import CASINO_TOUR_V1, LIVE_8D_V1, RULE_SETS, SPIELBANK_V1, BlackjackRules
from domain.money import Odds
from ops.gamemath import rtp_blackjack as bj

TOLERANCE = 1e-9  # two float computations of the same exact quantity
P = {v: Fraction(4 if v == 10 else 1, 13) for v in range(1, 11)}


def _add(total: int, soft: bool, v: int) -> tuple[int, bool]:
    """Add a card of value v (ace 1) to a hand (total, soft: an ace counts 11)."""
    if v == 1 and not soft and total + 11 <= 21:
        return total + 11, True
    total += v
    if total > 21 and soft:
        return total - 10, False
    return total, soft


class _Independent:
    """Optimal-play expected gain for an infinite deck, straight from the rule text."""

    def __init__(self, rules: BlackjackRules) -> None:
        self.r = rules
        self.p = {v: float(q) for v, q in P.items()}

    @cache  # noqa: B019 - a few instances per test run
    def dealer(self, up: int) -> dict[int | str, float]:
        out: dict[int | str, float] = {}

        def go(total: int, soft: bool, cards: int, q: float) -> None:
            if cards == 2 and total == 21:
                out["bj"] = out.get("bj", 0.0) + q
            elif total > 21:
                out["bust"] = out.get("bust", 0.0) + q
            elif cards >= 2 and (total > 17 or total == 17 and (not soft or self.r.dealer_stands_soft_17)):
                out[total] = out.get(total, 0.0) + q
            else:
                for v, pv in self.p.items():
                    go(*_add(total, soft, v), cards + 1, q * pv)

        go(*_add(0, False, up), 1, 1.0)
        return out

    def stand(self, up: int, total: int, stake: int, original: bool) -> float:
        if total > 21:
            return -stake
        win = float(self.r.odds_win.ratio)
        ev = 0.0
        for d, q in self.dealer(up).items():
            if d == "bj":
                ev -= q * (stake if self.r.dealer_bj_takes == "all" else int(original))
            elif d == "bust" or isinstance(d, int) and total > d:
                ev += q * stake * win
            elif isinstance(d, int) and total < d:
                ev -= q * stake
        return ev

    @cache  # noqa: B019
    def hit_or_stand(self, up: int, total: int, soft: bool, original: bool) -> float:
        if total >= 21:
            return self.stand(up, total, 1, original)
        hit = sum(q * (self.hit_or_stand(up, *_add(total, soft, v), original) if _add(total, soft, v)[0] <= 21
                       else -1.0) for v, q in self.p.items())
        return max(hit, self.stand(up, total, 1, original))

    def two_cards(self, up: int, a: int, b: int, split_hand: bool, original: bool) -> float:
        total, soft = _add(*_add(0, False, a), b)
        if split_hand and a == 1 and self.r.split_aces_one_card:
            return self.stand(up, total, 1, original)
        best = self.hit_or_stand(up, total, soft, original)
        hard_9_11 = not soft and total in (9, 10, 11)
        may_double = (self.r.double_on == "any_two" or hard_9_11) and (
            not split_hand or self.r.double_after_split and (a != 1 or self.r.double_on_split_aces))
        if may_double:
            best = max(best, sum(q * self.stand(up, _add(total, soft, v)[0], 2, original) for v, q in self.p.items()))
        return best

    def split(self, up: int, x: int) -> float:
        p = self.p[x]

        def one(original: bool) -> tuple[float, float, float]:
            """(E over non-pair second cards, value of the pair kept, E over all second cards)."""
            kept = self.two_cards(up, x, x, True, original)
            other = sum(q * self.two_cards(up, x, v, True, original) for v, q in self.p.items() if v != x) / (1 - p)
            return other, kept, (1 - p) * other + p * kept

        resplit = x != 1 or self.r.resplit_aces
        hands = self.r.hands_per_box_max
        if hands == 2 or not resplit:
            return one(True)[2] + one(False)[2]
        if hands == 3:
            assert self.r.dealer_bj_takes == "all", "the closed form treats the hands alike"
            other, kept, any_card = one(True)
            second = (1 - p) * other + p * max(kept, 2 * any_card)
            return (1 - p) * (other + second) + p * max(kept + second, 3 * any_card)
        other, kept, _ = one(True)  # unlimited resplits (64 hands: the rest is below 1e-30)
        each = (1 - p) * other / (1 - 2 * p)
        return 2 * (each if 2 * each > kept else (1 - p) * other + p * kept)

    def deal(self, up: int, a: int, b: int) -> float:
        r = self.r
        dealer_bj = self.dealer(up).get("bj", 0.0)
        insurance = max(0.0, 0.5 * (dealer_bj * float(r.odds_insurance.ratio) - (1 - dealer_bj))) if up == 1 else 0.0
        if {a, b} == {1, 10}:
            paid = (1 - dealer_bj) * float(r.odds_blackjack.ratio) + insurance
            return max(paid, 1.0) if r.even_money and up == 1 else paid
        best = self.two_cards(up, a, b, False, True)
        if a == b and (a != 10 or r.split_ten_values_any):
            best = max(best, self.split(up, a))
        if r.surrender == "before_third_card" or r.surrender == "early_no_ace_ten" and up not in (1, 10):
            best = max(best, -0.5)
        return best + insurance

    def gain(self) -> float:
        return sum(self.p[up] * self.p[a] * self.p[b] * self.deal(up, a, b)
                   for up in self.p for a in self.p for b in self.p)


VARIANTS = [
    *RULE_SETS,
    dataclasses.replace(LIVE_8D_V1, dealer_bj_takes="original_only", double_after_split=True),
    dataclasses.replace(LIVE_8D_V1, dealer_stands_soft_17=False, surrender="before_third_card"),
    dataclasses.replace(SPIELBANK_V1, double_on="any_two", resplit_aces=True),
    dataclasses.replace(CASINO_TOUR_V1, split_aces_one_card=False, even_money=False, odds_blackjack=Odds.parse("6:5")),
]


@pytest.mark.parametrize("rules", VARIANTS, ids=[f"{r.id}:{i}" for i, r in enumerate(VARIANTS)])
def test_infinite_deck_equals_the_independent_solver(rules: BlackjackRules) -> None:
    assert bj.infinite_deck(rules) == pytest.approx(_Independent(rules).gain(), abs=TOLERANCE)


# Wizard of Odds, blackjack appendix 2B (dealer probabilities before the peek, 1 deck, stands on
# soft 17, only the up card removed): up card -> 17, 18, 19, 20, 21, blackjack, bust.
WIZARD_1D_S17 = {
    1: (0.126128, 0.131003, 0.129486, 0.131553, 0.0515646, 0.313726, 0.11654),
    2: (0.138976, 0.131762, 0.131815, 0.123948, 0.120526, 0.0, 0.352973),
    6: (0.166948, 0.106454, 0.107192, 0.100705, 0.0978785, 0.0, 0.420823),
    7: (0.372345, 0.138583, 0.0773344, 0.0788967, 0.072987, 0.0, 0.259854),
}


@pytest.mark.parametrize("up", sorted(WIZARD_1D_S17))
def test_dealer_shoe_matches_published_one_deck_table(up: int) -> None:
    counts = [4] * 9 + [16]
    counts[up - 1] -= 1
    dealer = bj.dealer_shoe(True, up, tuple(counts))
    got = [dealer.get(k, 0.0) for k in (17, 18, 19, 20, 21, bj.DEALER_BJ, bj.BUST)]
    assert got == pytest.approx(WIZARD_1D_S17[up], abs=1e-6)


SHOE_CD = {r.id: bj.SHOE_CD_PRECOMPUTED[r.content_hash()] for r in RULE_SETS}  # recomputed by the slow test


@pytest.mark.parametrize("rules", RULE_SETS, ids=lambda r: r.id)
def test_shoe_figure_is_within_the_stated_bound_of_the_full_computation(rules: BlackjackRules) -> None:
    fast = 1 + bj.shoe(rules)
    assert abs(fast - SHOE_CD[rules.id]) * 100 <= bj.ERROR_BOUND
    assert fast > 1 + bj.infinite_deck(rules)  # fewer decks favour the player


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LEDGER_SLOW"), reason="about 2 minutes per rule set; LEDGER_SLOW=1 runs it")
@pytest.mark.parametrize("rules", RULE_SETS, ids=lambda r: r.id)
def test_precomputed_full_composition_figure(rules: BlackjackRules) -> None:
    assert 1 + bj.shoe(rules, cd=True) == pytest.approx(SHOE_CD[rules.id], abs=1e-7)


def test_spec_figures_for_live_8d() -> None:
    # rules.md: the rules as written return 99.29%; original_only + double after split 99.51%.
    assert round(100 * (1 + bj.shoe(LIVE_8D_V1)), 2) == 99.29
    generous = dataclasses.replace(LIVE_8D_V1, dealer_bj_takes="original_only", double_after_split=True)
    assert round(100 * (1 + bj.shoe(generous)), 2) == 99.51


@pytest.mark.parametrize("decks", [None, 6, 8])
def test_side_bets_are_the_closed_forms(decks: int | None) -> None:
    if decks is None:
        pair, insurance = Fraction(12, 13), Fraction(12, 13)
    else:
        pair = 12 * Fraction(4 * decks - 1, 52 * decks - 1)  # 11:1 on the same rank
        insurance = 3 * Fraction(16 * decks, 52 * decks - 1)  # 2:1 on a ten under the ace
    assert bj.pair_rtp(LIVE_8D_V1, decks) == pair
    assert bj.insurance_rtp(LIVE_8D_V1, decks) == insurance


def test_figures_rows_and_json_fields() -> None:
    rows = bj.figures(LIVE_8D_V1)
    assert {(r.bet_type, r.method.split(",")[1].strip()) for r in rows} >= {
        ("main", "infinite deck"), ("main", "8-deck shoe"), ("pair", "8-deck shoe"), ("insurance", "infinite deck")}
    main = next(r.as_dict() for r in rows if r.bet_type == "main" and "shoe" in r.method)
    assert set(main) == {"ruleset_id", "ruleset_version", "bet_type", "rtp_percent", "method"}  # issue 20: the version
    assert main["ruleset_id"] == "blackjack/live-8d" and main["ruleset_version"] == 1 and main["rtp_percent"] == 99.2892
    assert not any(r.bet_type in ("pair", "behind") for r in bj.figures(SPIELBANK_V1))  # not offered there
    behind = [r.rtp for r in rows if r.bet_type == "behind"]
    assert behind == [r.rtp for r in rows if r.bet_type == "main"] and len(behind) == 3


def test_rule_effects_flip_one_field() -> None:
    flips = bj.rule_effects(SPIELBANK_V1, only=("double_on", "auto_deal_to_min_total", "odds_blackjack"))
    effects = {(e.field, e.value): e.delta_percent for e in flips}
    assert effects[("double_on", "any_two")] > 0.05  # spielbank's hard 9-11 rule costs the player
    assert effects[("auto_deal_to_min_total", "0")] == 0  # optimal play never stands below 12
    assert effects[("odds_blackjack", "6:5")] < -1
    assert ("double_on", "hard_9_10_11") not in effects  # the rule set's own value is not a flip


def test_cli_json_rows_have_the_common_fields(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse
    import json

    from ops.cli.commands import rtp as rtp_command

    parser = argparse.ArgumentParser()
    rtp_command.register(parser.add_subparsers())
    args = parser.parse_args(["rtp", "--game", "blackjack", "--json"])
    assert args.func(args) == 0
    rows = json.loads(capsys.readouterr().out)["blackjack"]["bets"]
    assert {r["ruleset_id"] for r in rows} == {r.id for r in RULE_SETS}
    shoe_main = {(r["ruleset_id"], "every card" in r["method"]): r["rtp_percent"]
                 for r in rows if r["bet_type"] == "main" and "shoe" in r["method"]}
    assert shoe_main == {
        ("blackjack/live-8d", False): 99.2892, ("blackjack/spielbank", False): 99.2537,
        ("blackjack/casino-tour", False): 100.1891, ("blackjack/live-8d", True): 99.287,
        ("blackjack/spielbank", True): 99.2515, ("blackjack/casino-tour", True): 100.192}
    pair = next(r for r in rows if r["bet_type"] == "pair" and "shoe" in r["method"])
    assert pair["rtp_exact"] == "372/415"


ORIGINAL_ONLY = dataclasses.replace(LIVE_8D_V1, dealer_bj_takes="original_only")
DEALER_HANDS = {"17": "T7", "20": "KQ", "bust": "T69", "blackjack": "AK"}
PLAYER_HANDS = [  # (cards, stake reasons on the hand, the math's stake units, carries the original stake)
    ("T9", ("main",), 1, True),
    ("T6", ("main",), 1, True),
    ("56T", ("main", "double"), 2, True),
    ("8T", ("split",), 1, False),
    ("83T", ("split", "double"), 2, False),
    ("T6K", ("main",), 1, True),
]


@pytest.mark.parametrize("rules", [LIVE_8D_V1, ORIGINAL_ONLY], ids=["all", "original_only"])
@pytest.mark.parametrize("dealer", sorted(DEALER_HANDS))
@pytest.mark.parametrize("hand", PLAYER_HANDS, ids=lambda h: "+".join(h[1]) + ":" + h[0])
def test_the_math_pays_what_the_engine_settles(rules: BlackjackRules, dealer: str,
                                               hand: tuple[str, tuple[str, ...], int, bool]) -> None:
    from domain.blackjack_settle import settle
    from domain.blackjack_state import Hand, Stake, State
    from domain.cards import Card, CardCounter
    from domain.model import Bet

    cards, reasons, units, main = hand
    player_total = sum(bj.VALUE_OF[r] for r in cards)
    dealt = [Card(r, "S") for r in DEALER_HANDS[dealer]]
    engine_hand = Hand(name="seat:1", spot="seat:1", cards=[Card(r, "H") for r in cards],
                       status="bust" if player_total > 21 else "stood",
                       stakes=[Stake("b", "p", 100, reason) for reason in reasons])
    s = State(seen=CardCounter(8), phase="complete", bets=[Bet("b", "p", "seat:1", "main", 100)],
              spots=["seat:1"], holders={"seat:1": "b"}, hands=[engine_hand], dealer=dealt)
    (line,) = settle(rules, s)
    engine_net = Fraction(line.returned_minor - line.staked_minor, 100)
    outcome = {"17": 17, "20": 20, "bust": bj.BUST, "blackjack": bj.DEALER_BJ}[dealer]
    sit = bj.Situation(rules, DEALER_HANDS[dealer][0], (0.1,) * 10, {outcome: 1.0}, {})
    assert sit.stand(player_total, units, main) == float(engine_net)


@pytest.mark.parametrize("dealer", sorted(DEALER_HANDS))
def test_player_blackjack_is_paid_as_the_engine_pays_it(dealer: str) -> None:
    from domain.blackjack_settle import settle
    from domain.blackjack_state import Hand, Stake, State
    from domain.cards import Card, CardCounter
    from domain.model import Bet

    hand = Hand(name="seat:1", spot="seat:1", cards=[Card("A", "H"), Card("Q", "H")], status="blackjack",
                stakes=[Stake("b", "p", 100, "main")])
    s = State(seen=CardCounter(8), phase="complete", bets=[Bet("b", "p", "seat:1", "main", 100)],
              spots=["seat:1"], holders={"seat:1": "b"}, hands=[hand], dealer=[Card(r, "S") for r in DEALER_HANDS[dealer]])
    (line,) = settle(LIVE_8D_V1, s)
    outcome = {"17": 17, "20": 20, "bust": bj.BUST, "blackjack": bj.DEALER_BJ}[dealer]
    sit = bj.Situation(LIVE_8D_V1, "7", (0.1,) * 10, {outcome: 1.0}, {})  # up 7: no insurance in the way
    assert sit.deal(("A", "Q")) == (line.returned_minor - line.staked_minor) / 100

"""Blackjack rule cases: paytable, dealer rule, and every spec Decision, table-driven.

`Table` is the small driver the other blackjack test modules import.
"""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from domain.blackjack import (
    CASINO_TOUR_V1,
    LIVE_8D_V1,
    RULE_SETS,
    SPIELBANK_V1,
    BlackjackRules,
    hand_total,
    new_round,
)
from domain.cards import parse_card
from domain.errors import Refusal
from domain.model import Bet, BetResult

LIVE, SPIEL, TOUR = LIVE_8D_V1, SPIELBANK_V1, CASINO_TOUR_V1


class Table:
    """Drive one round: bets, then cards go to whatever next_card_target() says."""

    def __init__(self, rules: BlackjackRules, **override: object) -> None:
        self.rules = replace(rules, **override) if override else rules
        self.r = new_round(self.rules, round_in_shoe=1)
        self.moves: list = []

    def bet(self, bet_id: str, player: str, spot: str, stake: int, bet_type: str = "main",
            seat_no: int | None = None) -> Table:
        self.r.place_bet(Bet(bet_id, player, spot, bet_type, stake, seat_no=seat_no))
        return self

    def close(self) -> Table:
        self.r.close_betting()
        return self

    def cards(self, *cards: str) -> Table:
        for c in cards:
            target = self.r.next_card_target()
            assert target is not None, f"no card expected for {c}; legal: {self.r.legal_decisions()}"
            self.r.deal(parse_card(c), target)
        return self

    def to(self, target: str, card: str) -> Table:
        self.r.deal(parse_card(card), target)
        return self

    def do(self, hand: str, action: str, amount: int | None = None, source: str = "player") -> Table:
        self.moves += self.r.decide(hand, action, source, amount)
        return self

    def target(self) -> str | None:
        return self.r.next_card_target()

    def legal(self, hand: str) -> tuple[str, ...]:
        return self.r.legal_decisions().get(hand, ())

    def results(self) -> dict[str, BetResult]:
        assert self.r.is_complete(), self.r.view()
        return {x.bet_id: x for x in self.r.settle()}

    def hand(self, name: str) -> dict:
        return next(h for h in self.r.view()["hands"] if h["name"] == name)


def refused(code: str, fn, *args, **kw) -> Refusal:
    with pytest.raises(Refusal) as e:
        fn(*args, **kw)
    assert e.value.code == code, e.value
    return e.value


def one(rules: BlackjackRules = LIVE, stake: int = 1000, spot: str | None = None, **over: object) -> Table:
    spot = spot or f"{rules.spot_kind}:1"
    return Table(rules, **over).bet("b1", "p1", spot, stake).close()


# ---------------------------------------------------------------- helpers
@pytest.mark.parametrize("cards,total,soft", [
    ("AS KD", 21, True), ("AS AD", 12, True), ("AS 6D", 17, True), ("AS 6D TC", 17, False),
    ("TS 6D", 16, False), ("AS AD AH AC 7S", 21, True), ("TS 6D 9C", 25, False), ("5S 6D", 11, False),
])
def test_hand_total(cards: str, total: int, soft: bool) -> None:
    assert hand_total([parse_card(c) for c in cards.split()]) == (total, soft)


def test_rule_sets_ids_versions_decks_seeds() -> None:
    assert [(r.id, r.version, r.decks) for r in RULE_SETS] == [
        ("blackjack/live-8d", 1, 8), ("blackjack/live-8d", 2, 8), ("blackjack/spielbank", 1, 6),
        ("blackjack/spielbank", 2, 6), ("blackjack/casino-tour", 1, 6)]
    assert [r.seed[:3] for r in RULE_SETS] == ["000", "000", "002", "002", "004"]
    assert all(r.game == "blackjack" and len(r.content_hash()) == 64 for r in RULE_SETS)
    assert LIVE.error_policy.action_for("player_no_action") == "complete"
    assert LIVE.error_policy.action_for("host_interruption") == "void"
    assert LIVE.error_policy.replace_shoe_on_void
    assert SPIEL.error_policy.action_for("system_error") == "pause"
    assert TOUR.error_policy.action_for("player_connection_lost") == "complete"


@pytest.mark.parametrize("rules", RULE_SETS, ids=lambda r: f"{r.id}-v{r.version}")
def test_spec_decisions_are_fields(rules: BlackjackRules) -> None:
    assert rules.dealer_bj_takes == "all"
    assert rules.split_ten_values_any is True
    assert rules.dealer_stands_soft_17 is True
    assert rules.timeout_policy == ("hit_to_12" if rules.id == LIVE.id else "stand")
    assert rules.bet_behind_insurance is False
    assert str(rules.odds_blackjack) == "3:2" and str(rules.odds_insurance) == "2:1"


# ---------------------------------------------------------------- paytable
@pytest.mark.parametrize("player,dealer,outcome,returned", [
    (("TS", "9D"), ("7C", "TC"), "win", 2000),        # 19 vs 17: 1:1
    (("AS", "KD"), ("7C", "TC"), "win", 2500),        # blackjack 3:2
    (("TS", "7D"), ("7C", "TC"), "push", 1000),       # 17 vs 17
    (("TS", "7D"), ("9C", "TC"), "lose", 0),          # 17 vs 19
    (("TS", "6D"), ("6C", "TC", "8H"), "win", 2000),  # dealer bust pays standing hand
    (("AS", "KD"), ("TC", "AH"), "push", 1000),       # blackjack vs dealer blackjack
])
def test_main_paytable(player, dealer, outcome, returned) -> None:
    t = one(LIVE)
    t.cards(player[0], dealer[0], player[1])
    if t.legal("seat:1"):
        t.do("seat:1", "stand")
    for card in dealer[1:]:
        if t.target() == "dealer":  # a player blackjack vs a 7 needs no dealer card
            t.cards(card)
    res = t.results()["b1"]
    assert (res.outcome, res.staked_minor, res.returned_minor) == (outcome, 1000, returned)


def test_blackjack_3_2_on_odd_stake_keeps_remainder() -> None:
    t = one(LIVE, stake=1001).cards("AS", "7C", "KD")  # no dealer card needed against a 7
    res = t.results()["b1"]
    assert res.returned_minor == 1001 + 1501
    assert Fraction(res.remainder_num, res.remainder_den) == Fraction(1, 2)


def test_pair_side_bet_11_to_1_same_rank_only() -> None:
    t = Table(LIVE).bet("b1", "p1", "seat:1", 1000).bet("pp", "p1", "seat:1", 200, "pair")
    t.bet("b2", "p2", "seat:2", 1000).bet("pq", "p2", "seat:2", 200, "pair").close()
    t.cards("8S", "TS", "7C", "8D", "KS")  # seat:1 8-8 pair, seat:2 T-K not a pair
    t.do("seat:1", "stand").do("seat:2", "stand").cards("TC")
    res = t.results()
    assert (res["pp"].outcome, res["pp"].returned_minor) == ("win", 2400)
    assert (res["pq"].outcome, res["pq"].returned_minor) == ("lose", 0)


@pytest.mark.parametrize("dealer2,outcome,returned", [("KC", "win", 1500), ("9C", "lose", 0)])
def test_insurance_pays_2_to_1_on_dealer_blackjack(dealer2, outcome, returned) -> None:
    t = one(LIVE).cards("TS", "AC", "9D")
    assert t.legal("seat:1") == ("insurance", "no_insurance", "auto")
    t.do("seat:1", "insurance")
    assert t.moves[-1].bet_id == "b1:insurance" and t.moves[-1].amount_minor == 500
    t.do("seat:1", "stand").cards(dealer2)
    res = t.results()["b1:insurance"]
    assert (res.bet_type, res.outcome, res.staked_minor, res.returned_minor) == ("insurance", outcome, 500, returned)


def test_insurance_half_of_odd_main_rounds_down() -> None:
    t = one(LIVE, stake=1001).cards("TS", "AC", "9D")
    refused("bad_insurance_amount", t.r.decide, "seat:1", "insurance", "player", 501)
    t.do("seat:1", "insurance", 500)
    assert t.moves[-1].amount_minor == 500


@pytest.mark.parametrize("amount,ok", [(49, False), (50, True), (500, True), (501, False)])
def test_casino_tour_insurance_between_half_min_and_half_stake(amount, ok) -> None:
    t = one(TOUR, stake=1000).cards("TS", "AC", "9D")
    if ok:
        t.do("box:1", "insurance", amount)
        assert t.moves[-1].amount_minor == amount
    else:
        refused("bad_insurance_amount", t.r.decide, "box:1", "insurance", "player", amount)


@pytest.mark.parametrize("dealer2,ins_return", [("KC", 0), ("9C", 0)])
def test_even_money_casino_tour_settles_at_once(dealer2, ins_return) -> None:
    t = one(TOUR).cards("AS", "AC", "KD")
    assert "even_money" in t.legal("box:1")
    t.do("box:1", "even_money")
    assert t.r.is_complete() and t.target() is None  # the hand is settled; no dealer card needed
    res = t.results()["b1"]
    assert (res.outcome, res.returned_minor) == ("even_money", 2000)


def test_even_money_not_offered_live() -> None:
    t = one(LIVE).cards("AS", "AC", "KD")
    assert "even_money" not in t.legal("seat:1")


# ---------------------------------------------------------------- dealer
@pytest.mark.parametrize("dealer,draws_more", [
    (("TC", "6D"), True), (("TC", "7D"), False), (("AC", "6D"), False), (("9C", "8D"), False),
])
def test_dealer_draws_to_16_stands_on_all_17(dealer, draws_more) -> None:
    t = one(LIVE).cards("TS", dealer[0], "9D")
    if dealer[0] == "AC":
        t.do("seat:1", "no_insurance")
    t.do("seat:1", "stand").cards(dealer[1])
    assert (t.target() == "dealer") is draws_more


def test_dealer_hits_soft_17_when_rule_says_so() -> None:
    t = one(LIVE, dealer_stands_soft_17=False).cards("TS", "AC", "9D").do("seat:1", "no_insurance")
    t.do("seat:1", "stand").cards("6D")
    assert t.target() == "dealer"


def test_dealer_drawing_on_17_is_refused() -> None:
    t = one(LIVE).cards("TS", "TC", "9D").do("seat:1", "stand").cards("7D")
    assert t.r.is_complete()
    refused("card_not_expected", t.r.deal, parse_card("2C"), "dealer")


def test_no_dealer_cards_when_every_hand_busted() -> None:
    t = one(LIVE).cards("TS", "TC", "6D").do("seat:1", "hit").cards("9H")
    assert t.r.is_complete() and t.r.view()["dealer"]["cards"] == ["TC"]
    assert t.results()["b1"].outcome == "lose"


def test_insurance_needs_dealer_second_card_even_if_all_bust() -> None:
    t = one(LIVE).cards("TS", "AC", "6D").do("seat:1", "insurance").do("seat:1", "hit").cards("9H")
    assert t.target() == "dealer"
    t.cards("KD")
    assert t.target() is None and t.r.is_complete()
    assert t.results()["b1:insurance"].returned_minor == 1500


def test_player_blackjack_vs_dealer_ten_needs_second_card_only() -> None:
    t = one(LIVE).cards("AS", "TC", "KD")
    assert t.target() == "dealer"
    t.cards("6D")  # dealer 16 but nothing else is standing: no third card
    assert t.r.is_complete() and t.results()["b1"].returned_minor == 2500


def test_dealer_completes_anyway_when_rule_says_so() -> None:
    t = one(LIVE, dealer_draws_only_if_needed=False).cards("TS", "TC", "6D").do("seat:1", "hit").cards("9H")
    assert t.target() == "dealer"


# ---------------------------------------------------------------- dealer blackjack takes
@pytest.mark.parametrize("takes,returned", [("all", 0), ("original_only", 1000)])
def test_dealer_blackjack_takes_doubles(takes, returned) -> None:
    t = one(LIVE, dealer_bj_takes=takes).cards("6S", "TC", "5D").do("seat:1", "double").cards("KH", "AD")
    res = t.results()["b1"]
    assert (res.staked_minor, res.returned_minor) == (2000, returned)


@pytest.mark.parametrize("takes,returned", [("all", 0), ("original_only", 1000)])
def test_dealer_blackjack_takes_splits(takes, returned) -> None:
    t = one(LIVE, dealer_bj_takes=takes).cards("8S", "TC", "8D").do("seat:1", "split")
    t.cards("TH").do("seat:1.1", "stand").cards("TD").do("seat:1.2", "stand").cards("AD")
    res = t.results()["b1"]
    assert (res.staked_minor, res.returned_minor) == (2000, returned)


def test_ace_ten_after_split_is_21_not_blackjack() -> None:
    t = one(TOUR).cards("AS", "9C", "AD").do("box:1", "split").cards("KH")
    t.cards("5D").cards("TC")  # box:1.2 A-5 split aces: one card each; dealer 9+T = 19
    res = t.results()["b1"]
    assert res.returned_minor == 2000  # A-K pays 1:1 (2000 on 1000), A-5 (16) loses
    assert "21" in res.explanation


# ---------------------------------------------------------------- splits
@pytest.mark.parametrize("first,second,any_ten,splittable", [
    ("TS", "KD", True, True), ("TS", "KD", False, False), ("JS", "JD", False, True), ("8S", "8D", True, True),
    ("8S", "9D", True, False), ("AS", "AD", True, True),
])
def test_split_pairs_and_ten_values(first, second, any_ten, splittable) -> None:
    t = one(LIVE, split_ten_values_any=any_ten).cards(first, "7C", second)
    assert ("split" in t.legal("seat:1")) is splittable


def test_split_order_first_hand_played_out_before_second_gets_its_card() -> None:
    t = one(LIVE).cards("8S", "7C", "8D").do("seat:1", "split")
    assert t.target() == "seat:1.1"
    t.cards("2H")
    assert t.legal("seat:1.1") and t.target() is None
    t.do("seat:1.1", "hit").cards("3H").do("seat:1.1", "stand")
    assert t.target() == "seat:1.2"
    assert t.hand("seat:1.2")["cards"] == ["8D"]


def test_resplit_hand_is_played_right_after_its_parent() -> None:
    t = one(SPIEL, stake=500).cards("8S", "7C", "8D").do("box:1", "split").cards("8H")
    t.do("box:1.1", "split")
    assert [h["name"] for h in t.r.view()["hands"]] == ["box:1.1", "box:1.3", "box:1.2"]
    t.cards("TH").do("box:1.1", "stand")
    assert t.target() == "box:1.3"
    assert "split" not in t.legal("box:1.1")  # three hands is the spielbank maximum


def test_live_one_split_per_seat_and_no_double_after_split() -> None:
    t = one(LIVE).cards("8S", "7C", "8D").do("seat:1", "split").cards("8H")
    assert t.legal("seat:1.1") == ("hit", "stand", "auto")


def test_casino_tour_double_after_split_but_not_on_split_aces() -> None:
    t = one(TOUR).cards("8S", "7C", "8D").do("box:1", "split").cards("3H")
    assert "double" in t.legal("box:1.1")
    t2 = one(TOUR).cards("AS", "7C", "AD").do("box:1", "split").cards("AH")
    assert t2.legal("box:1.1") == ("stand", "split", "auto")  # no hit, no double; resplit aces


def test_casino_tour_resplits_aces_without_rule_limit() -> None:
    t = one(TOUR).cards("AS", "7C", "AD").do("box:1", "split").cards("AH").do("box:1.1", "split")
    assert [h["name"] for h in t.r.view()["hands"]] == ["box:1.1", "box:1.3", "box:1.2"]
    t.cards("AC").do("box:1.1", "split")  # the third ace split: four hands
    assert [h["name"] for h in t.r.view()["hands"]] == ["box:1.1", "box:1.4", "box:1.3", "box:1.2"]
    assert sum(m.reason == "split" for m in t.moves) == 3


def test_spielbank_does_not_resplit_aces() -> None:
    t = one(SPIEL, stake=500).cards("AS", "7C", "AD").do("box:1", "split").cards("AH")
    assert t.legal("box:1.1") == () and t.target() == "box:1.2"  # one card, stands


def test_split_aces_get_one_card_each() -> None:
    t = one(LIVE).cards("AS", "7C", "AD").do("seat:1", "split").cards("5H")
    assert t.target() == "seat:1.2" and t.hand("seat:1.1")["status"] == "stood"
    t.cards("6H")
    assert t.target() == "dealer"


# ---------------------------------------------------------------- doubles
@pytest.mark.parametrize("cards,can", [
    (("5S", "4D"), True), (("5S", "5D"), True), (("6S", "5D"), True), (("4S", "4D"), False),
    (("6S", "6D"), False), (("AS", "8D"), False), (("AS", "AD"), False), (("7S", "5D"), False),
])
def test_spielbank_doubles_only_hard_9_10_11(cards, can) -> None:
    t = one(SPIEL, stake=500).cards(cards[0], "7C", cards[1])
    legal = t.r.legal_decisions()
    assert ("double" in legal.get("box:1", ())) is can


def test_double_takes_exactly_one_card() -> None:
    t = one(LIVE).cards("5S", "7C", "4D").do("seat:1", "double")
    assert t.moves[-1].reason == "double" and t.moves[-1].amount_minor == 1000
    t.cards("2H")  # 11: no more cards even though low
    assert t.hand("seat:1")["status"] == "stood" and t.target() == "dealer"


def test_doubled_stake_may_exceed_max_or_not() -> None:
    assert "double" in one(LIVE, stake=500_000).cards("5S", "7C", "5D").legal("seat:1")
    t = one(LIVE, stake=250_001, doubled_stake_may_exceed_max=False).cards("5S", "7C", "5D")
    assert "double" not in t.legal("seat:1")
    t = one(LIVE, stake=250_000, doubled_stake_may_exceed_max=False).cards("5S", "7C", "5D")
    assert "double" in t.legal("seat:1")


# ---------------------------------------------------------------- timeout
def test_live_no_action_hits_to_12_then_stands() -> None:
    t = one(LIVE).cards("2S", "7C", "3D").do("seat:1", "auto", source="timeout")
    assert t.target() == "seat:1"
    t.cards("4H")  # 9
    assert t.target() == "seat:1"
    t.cards("3H")  # 12
    assert t.hand("seat:1")["status"] == "stood" and t.target() == "dealer"


def test_live_no_action_counts_ace_11_unless_bust() -> None:
    t = one(LIVE).cards("AS", "7C", "5D").do("seat:1", "auto", source="timeout")  # soft 16
    assert t.hand("seat:1")["status"] == "stood"


@pytest.mark.parametrize("rules", [SPIEL, TOUR], ids=lambda r: r.id)
def test_timeout_stand_elsewhere(rules) -> None:
    t = one(rules, stake=500).cards("TS", "7C", "3D")
    t.do("box:1", "auto", source="timeout")
    assert t.hand("box:1")["status"] == "stood"


def test_auto_declines_insurance() -> None:
    t = one(LIVE).cards("TS", "AC", "9D").do("seat:1", "auto", source="timeout")
    assert t.r.view()["insurance"] == {} and "stand" in t.legal("seat:1")


def test_hand_reaching_21_stands_by_itself() -> None:
    t = one(LIVE).cards("5S", "7C", "6D").do("seat:1", "hit").cards("TH")
    assert t.hand("seat:1")["status"] == "stood" and t.target() == "dealer"


# ---------------------------------------------------------------- surrender
@pytest.mark.parametrize("rules,up,offered", [
    (LIVE, "9C", True), (LIVE, "TC", False), (LIVE, "KC", False), (LIVE, "AC", False),
    (TOUR, "AC", True), (TOUR, "TC", True), (SPIEL, "9C", False),
])
def test_surrender_window_by_dealer_card(rules, up, offered) -> None:
    t = one(rules, stake=500).cards("TS", up, "6D")
    hand = f"{rules.spot_kind}:1"
    if up == "AC":
        t.do(hand, "no_insurance")
    assert ("surrender" in t.legal(hand)) is offered


def test_surrender_only_before_any_other_action_and_not_on_split_hands() -> None:
    t = one(LIVE).cards("2S", "9C", "3D").do("seat:1", "hit").cards("2H")
    assert "surrender" not in t.legal("seat:1")
    t = one(TOUR).cards("8S", "9C", "8D").do("box:1", "split").cards("7H")
    assert "surrender" not in t.legal("box:1.1")


@pytest.mark.parametrize("stake,returned,rem", [(1000, 500, Fraction(0)), (1001, 500, Fraction(1, 2))])
def test_surrender_loses_half(stake, returned, rem) -> None:
    t = one(LIVE, stake=stake).cards("TS", "9C", "6D").do("seat:1", "surrender")
    assert t.r.is_complete()
    res = t.results()["b1"]
    assert (res.outcome, res.returned_minor, Fraction(res.remainder_num, res.remainder_den)) == ("surrender", returned, rem)


# ---------------------------------------------------------------- bet behind
def behind_table() -> Table:
    return (Table(LIVE).bet("s", "seated", "seat:2", 1000).bet("bb", "backer", "behind:2", 400)
            .bet("bp", "backer", "behind:2", 100, "pair").close())


def test_bet_behind_follows_split_accept() -> None:
    t = behind_table().cards("8S", "7C", "8D").do("seat:2", "split")
    assert [(o.bet_id, o.kind, o.amount_minor) for o in t.r.pending_follows()] == [("bb", "split", 400)]
    moves = t.r.follow("bb", "split", True)
    assert moves[0].reason == "follow_split" and moves[0].amount_minor == 400
    t.cards("TH").do("seat:2.1", "stand").cards("TS").do("seat:2.2", "stand").cards("KD")  # 18, 18 vs 17
    res = t.results()
    assert (res["bb"].staked_minor, res["bb"].returned_minor, res["bb"].outcome) == (800, 800 + 800, "win")
    assert res["bp"].outcome == "win"  # the backer's pair follows the seat's first two cards


def test_bet_behind_declined_or_silent_split_stays_on_first_hand() -> None:
    for answer in ("decline", "silence"):
        t = behind_table().cards("8S", "7C", "8D").do("seat:2", "split")
        if answer == "decline":
            assert t.r.follow("bb", "split", False) == []
        t.cards("TH")
        assert t.r.pending_follows() == []
        refused("no_follow_offer", t.r.follow, "bb", "split", True)
        t.do("seat:2.1", "stand").cards("9H").do("seat:2.2", "stand").cards("TD")
        res = t.results()["bb"]
        assert (res.staked_minor, res.returned_minor) == (400, 800)


def test_bet_behind_follows_double() -> None:
    t = behind_table().cards("6S", "7C", "5D").do("seat:2", "double")
    assert [(o.kind) for o in t.r.pending_follows()] == ["double"]
    t.r.follow("bb", "double", True)
    t.cards("TH", "TD")  # 21 vs dealer 17
    res = t.results()["bb"]
    assert (res.staked_minor, res.returned_minor) == (800, 1600)


def test_bet_behind_not_offered_insurance() -> None:
    t = behind_table().cards("TS", "AC", "9D")
    assert set(t.r.legal_decisions()) == {"seat:2"}
    t.do("seat:2", "insurance")
    assert t.moves[-1].bet_id == "s:insurance"


# ---------------------------------------------------------------- spielbank
def test_spielbank_auto_deals_to_12_before_asking() -> None:
    t = one(SPIEL, stake=500).cards("2S", "7C", "3D")
    assert t.target() == "box:1" and t.legal("box:1") == ()
    t.cards("4H")  # 9: may double now? no: the first two cards decided that
    assert t.target() == "box:1"
    t.cards("3H")  # 12
    assert t.legal("box:1") == ("hit", "stand", "auto")


def test_spielbank_asks_double_before_auto_deal_and_no_stand_below_12() -> None:
    t = one(SPIEL, stake=500).cards("5S", "7C", "5D")
    assert t.legal("box:1") == ("hit", "double", "split", "auto")


def test_spielbank_auto_deal_on_split_hands_except_aces() -> None:
    t = one(SPIEL, stake=500).cards("3S", "7C", "3D").do("box:1", "split").cards("2H")
    assert t.target() == "box:1.1"  # 5: no pair, no double after split -> dealt to 12
    t.cards("7H")
    assert t.legal("box:1.1") == ("hit", "stand", "auto")


@pytest.mark.parametrize("seats,holder", [
    ((4, 3, 1), "b2"),           # the player sitting at box 3 holds it, whoever staked first
    ((4, 2, 1), "b2"),           # nobody sits at box 3: the next lower seat (2)
    ((None, 5, 6), "b3"),        # no staker below: wrap round to the highest seat
    ((None, None, None), "b1"),  # no staker gave a seat: the first stake
])
def test_spielbank_box_holder(seats, holder) -> None:
    t = Table(SPIEL)
    for i, seat in enumerate(seats, 1):
        t.bet(f"b{i}", f"p{i}", "box:3", 500, seat_no=seat)
    t.close()
    assert t.r.view()["holders"] == {"box:3": holder}


def test_spielbank_other_players_follow_split_and_double() -> None:
    t = Table(SPIEL).bet("h", "p1", "box:1", 1000, seat_no=1).bet("o", "p2", "box:1", 500, seat_no=4).close()
    t.cards("5S", "7C", "5D").do("box:1", "double")
    assert [(o.bet_id, o.kind, o.amount_minor) for o in t.r.pending_follows()] == [("o", "double", 500)]
    assert t.moves[-1].bet_id == "h" and t.moves[-1].amount_minor == 1000
    t.r.follow("o", "double", True)
    t.cards("9H", "TD")  # box 19 vs dealer 17
    res = t.results()
    assert (res["h"].staked_minor, res["h"].returned_minor) == (2000, 4000)
    assert (res["o"].staked_minor, res["o"].returned_minor) == (1000, 2000)


# ---------------------------------------------------------------- bet refusals at the limit and one past
@pytest.mark.parametrize("rules,spot,bet_type,stake,code", [
    (LIVE, "seat:1", "main", 100, None), (LIVE, "seat:1", "main", 99, "stake_below_minimum"),
    (LIVE, "seat:1", "main", 500_000, None), (LIVE, "seat:1", "main", 500_001, "stake_above_maximum"),
    (SPIEL, "box:1", "main", 500, None), (SPIEL, "box:1", "main", 499, "stake_below_minimum"),
    (SPIEL, "box:1", "main", 1000, None), (SPIEL, "box:1", "main", 1001, "stake_not_divisible"),
    (SPIEL, "box:1", "pair", 500, "bet_not_offered"), (TOUR, "behind:1", "main", 500, "bet_not_offered"),
    (LIVE, "seat:7", "main", 500, None), (LIVE, "seat:8", "main", 500, "unknown_spot"),
    (LIVE, "box:1", "main", 500, "unknown_spot"), (LIVE, "seat:1", "tie", 500, "bet_not_offered"),
    (LIVE, "behind:1", "main", 500, "behind_without_seat"), (LIVE, "seat:1", "pair", 500, "side_bet_without_main"),
    (LIVE, "seat:1", "main", 0, "bad_amount"),
])
def test_single_bet_refusals(rules, spot, bet_type, stake, code) -> None:
    t = Table(rules)
    if code is None:
        t.bet("b", "p", spot, stake, bet_type)
        assert len(t.r.view()["bets"]) == 1
    else:
        refused(code, t.r.place_bet, Bet("b", "p", spot, bet_type, stake))
        assert t.r.view()["bets"] == []


def test_pair_limit_at_and_past() -> None:
    t = Table(LIVE).bet("b1", "p1", "seat:1", 1000).bet("p", "p1", "seat:1", 100_000, "pair")
    t2 = Table(LIVE).bet("b1", "p1", "seat:1", 1000)
    refused("stake_above_maximum", t2.r.place_bet, Bet("p", "p1", "seat:1", "pair", 100_001))
    refused("duplicate_bet", t.r.place_bet, Bet("p2", "p1", "seat:1", "pair", 100))


def test_seat_refusals_live() -> None:
    t = Table(LIVE).bet("b1", "p1", "seat:1", 1000)
    refused("duplicate_bet_id", t.r.place_bet, Bet("b1", "p9", "seat:2", "main", 1000))
    refused("seat_taken", t.r.place_bet, Bet("b2", "p2", "seat:1", "main", 1000))
    refused("player_already_seated", t.r.place_bet, Bet("b2", "p1", "seat:2", "main", 1000))
    refused("seated_player_behind", t.r.place_bet, Bet("b2", "p1", "behind:1", "main", 1000))
    t.bet("bb", "p3", "behind:1", 1000)
    refused("seated_player_behind", t.r.place_bet, Bet("b3", "p3", "seat:2", "main", 1000))
    refused("duplicate_bet", t.r.place_bet, Bet("b4", "p3", "behind:1", "main", 1000))


def test_behind_bets_per_seat_limit() -> None:
    t = Table(LIVE, behind_bets_per_seat_max=2).bet("b1", "p1", "seat:1", 1000)
    t.bet("x1", "q1", "behind:1", 100).bet("x2", "q2", "behind:1", 100)
    refused("too_many_bets", t.r.place_bet, Bet("x3", "q3", "behind:1", "main", 100))


def test_spielbank_box_and_player_limits() -> None:
    t = Table(SPIEL)
    for i in range(1, 5):
        t.bet(f"b{i}", f"p{i}", "box:1", 500)
    refused("box_full", t.r.place_bet, Bet("b5", "p5", "box:1", "main", 500))
    t.bet("c1", "p1", "box:2", 500)
    refused("too_many_boxes", t.r.place_bet, Bet("c2", "p1", "box:3", "main", 500))
    refused("duplicate_bet", t.r.place_bet, Bet("c3", "p1", "box:2", "main", 500))


def test_spielbank_box_maximum_is_for_all_stakes_together() -> None:
    t = Table(SPIEL).bet("b1", "p1", "box:1", 300_000)
    t.bet("b2", "p2", "box:1", 200_000)  # exactly the maximum
    refused("stake_above_maximum", t.r.place_bet, Bet("b3", "p3", "box:1", "main", 500))


def test_casino_tour_player_may_bet_several_boxes_but_one_player_per_box() -> None:
    t = Table(TOUR)
    for n in range(1, 8):
        t.bet(f"b{n}", "p1", f"box:{n}", 100)
    refused("seat_taken", t.r.place_bet, Bet("x", "p2", "box:1", "main", 100))


def test_betting_closed_and_open_refusals() -> None:
    t = Table(LIVE).bet("b1", "p1", "seat:1", 1000)
    refused("betting_open", t.r.deal, parse_card("AS"), "seat:1")
    refused("betting_open", t.r.decide, "seat:1", "hit", "player")
    t.close()
    refused("betting_closed", t.r.place_bet, Bet("b2", "p2", "seat:2", "main", 1000))
    refused("betting_closed", t.r.close_betting)
    refused("round_not_complete", t.r.settle)


def test_card_refusals() -> None:
    t = one(LIVE)
    e = refused("wrong_target", t.r.deal, parse_card("AS"), "dealer")
    assert "seat:1" in e.message and "dealer" in e.message
    t.cards("TS", "9C", "6D")
    refused("card_not_expected", t.r.deal, parse_card("AS"), "seat:1")
    refused("decision_not_legal", t.r.decide, "seat:1", "split", "player")
    refused("unknown_hand", t.r.decide, "seat:4", "hit", "player")
    refused("bad_decision_source", t.r.decide, "seat:1", "hit", "robot")
    refused("amount_not_allowed", t.r.decide, "seat:1", "hit", "player", 100)


def test_impossible_card_in_round() -> None:
    t = Table(LIVE, decks=1).bet("b1", "p1", "seat:1", 1000).close().cards("AS", "9C")
    refused("impossible_card", t.r.deal, parse_card("AS"), "seat:1")


def test_empty_round_completes_with_no_results() -> None:
    t = Table(LIVE).close()
    assert t.r.is_complete() and t.r.settle() == []


def test_split_hand_counts_as_box_for_max_or_not() -> None:
    assert "split" in one(LIVE, stake=300_000).cards("8S", "7C", "8D").legal("seat:1")
    t = one(LIVE, stake=250_001, split_hand_counts_as_box_for_max=False).cards("8S", "7C", "8D")
    assert "split" not in t.legal("seat:1")
    t = one(LIVE, stake=250_000, split_hand_counts_as_box_for_max=False).cards("8S", "7C", "8D")
    assert "split" in t.legal("seat:1")


def test_only_the_box_holder_decides() -> None:
    t = Table(SPIEL).bet("h", "p1", "box:2", 500, seat_no=2).bet("o", "p2", "box:2", 500, seat_no=5).close()
    t.r.check_decider("box:2", "p1")
    refused("not_box_holder", t.r.check_decider, "box:2", "p2")
    refused("unknown_hand", t.r.check_decider, "box:6", "p2")


def test_bets_per_round_limit_at_and_past() -> None:
    from domain.blackjack_rules import BETS_PER_ROUND_MAX

    t = Table(LIVE, behind_bets_per_seat_max=100)
    n = 0
    for seat in range(1, 8):
        t.bet(f"s{seat}", f"seated{seat}", f"seat:{seat}", 100)
        n += 1
    backer = 0
    while n < BETS_PER_ROUND_MAX:
        seat = backer % 7 + 1
        t.bet(f"x{n}", f"q{backer}", f"behind:{seat}", 100)
        n += 1
        if n < BETS_PER_ROUND_MAX:
            t.bet(f"x{n}", f"q{backer}", f"behind:{seat}", 100, "pair")
            n += 1
        backer += 1
    assert len(t.r.view()["bets"]) == BETS_PER_ROUND_MAX
    refused("too_many_bets", t.r.place_bet, Bet("late", "z", "behind:1", "main", 100))


def test_spielbank_follower_declines_double_keeps_single_stake() -> None:
    t = Table(SPIEL).bet("h", "p1", "box:1", 1000, seat_no=1).bet("o", "p2", "box:1", 500, seat_no=4).close()
    t.cards("5S", "7C", "5D").do("box:1", "double").cards("9H", "TD")  # offer silently declined
    res = t.results()
    assert (res["o"].staked_minor, res["o"].returned_minor) == (500, 1000)
    assert (res["h"].staked_minor, res["h"].returned_minor) == (2000, 4000)


def test_follow_offer_expires_at_next_decision() -> None:
    t = Table(SPIEL).bet("h", "p1", "box:1", 1000, seat_no=1).bet("o", "p2", "box:1", 500, seat_no=4).close()
    t.cards("8S", "7C", "8D").do("box:1", "split")
    assert len(t.r.pending_follows()) == 1
    t.cards("TH")
    refused("no_follow_offer", t.r.follow, "o", "split", True)


def test_decision_source_and_view_are_plain() -> None:
    import json

    t = behind_table().cards("8S", "7C", "8D").do("seat:2", "split")
    view = t.r.view()
    assert json.loads(json.dumps(view)) == view
    assert view["follow_offers"][0]["hand"] == "seat:2.2"
    assert view["legal_decisions"] == {} and view["next_card_target"] == "seat:2.1"

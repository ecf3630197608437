"""Baccarat live-8d: drawing rules, every paytable line, limits, burn, refusals."""
from __future__ import annotations

import dataclasses

import pytest

from domain import baccarat as bac
from domain.cards import parse_card
from domain.errors import Refusal
from domain.model import Bet

RULES = bac.LIVE_8D_V1
STAKE = 1000


def cards(text):
    return [parse_card(t) for t in text.split()]


def bet(bet_type, stake=STAKE, bet_id=None, player="p1", mode=None, spot="table"):
    return Bet(bet_id or f"{player}-{bet_type}-{stake}", player, spot, bet_type, stake, mode)


def deal_all(model, text):
    for card in cards(text):
        model.deal(card, model.next_card_target())


def play(text, bets, round_in_shoe=2, rules=RULES):
    model = bac.new_round(rules, round_in_shoe=round_in_shoe)
    for b in bets:
        model.place_bet(b)
    model.close_betting()
    deal_all(model, text)
    assert model.is_complete()
    return model


def returned(text, bet_type, mode=None):
    [result] = play(text, [bet(bet_type, mode=mode)]).settle()
    return result


# ------------------------------------------------------------ drawing rules

# Banker's two-card total -> player third-card values on which Banker draws (the spec table).
BANKER_TABLE = {
    0: set(range(10)), 1: set(range(10)), 2: set(range(10)), 3: set(range(10)) - {8},
    4: {2, 3, 4, 5, 6, 7}, 5: {4, 5, 6, 7}, 6: {6, 7}, 7: set(),
}
BANKER_HANDS = {0: "TH KH", 1: "AH KH", 2: "2H KH", 3: "3H KH", 4: "4H KH", 5: "5H KH", 6: "6H KH", 7: "7H KH"}
THIRD = {0: "TD", 1: "AD", 2: "2D", 3: "3D", 4: "4D", 5: "5D", 6: "6D", 7: "7D", 8: "8D", 9: "9D"}


@pytest.mark.parametrize("banker_total", range(8))
@pytest.mark.parametrize("p3", [None, *range(10)])
def test_banker_third_card_cell(banker_total, p3):
    expected = banker_total <= 5 if p3 is None else p3 in BANKER_TABLE[banker_total]
    assert bac.banker_draws(banker_total, p3) is expected
    model = bac.new_round(RULES, round_in_shoe=2)
    model.close_betting()
    b1, b2 = cards(BANKER_HANDS[banker_total])
    p1, p2 = cards("6S KS") if p3 is None else cards("TS KS")  # 6 stands, 0 draws
    for card in (p1, b1, p2, b2):
        model.deal(card, model.next_card_target())
    if p3 is not None:
        assert model.next_card_target() == "player"
        model.deal(parse_card(THIRD[p3]), "player")
    assert model.next_card_target() == ("banker" if expected else None)
    assert model.is_complete() is not expected


@pytest.mark.parametrize("total, draws", [(t, t <= 5) for t in range(8)])
def test_player_draws(total, draws):
    assert bac.player_draws(total) is draws


@pytest.mark.parametrize("p, b", [("4S 5S", "TH 2H"), ("4S 4D", "2H 3H"), ("2S 3S", "9H TH"), ("TS 8S", "9H KH")])
def test_a_natural_stops_the_deal(p, b):
    p1, p2 = cards(p)
    b1, b2 = cards(b)
    model = play(f"{p1} {b1} {p2} {b2}", [])
    assert len(model.player) == len(model.banker) == 2


def test_points():
    assert [bac.point_value(c) for c in cards("AS 2S 9S TS JS QS KS")] == [1, 2, 9, 0, 0, 0, 0]
    assert bac.hand_total(cards("8H 9H")) == 7


# ------------------------------------------------------------ paytable
# Deal order is P1 B1 P2 B2 (then third cards): each string below is in deal order.
P_NAT9 = "4S 3H 5S 4H"  # Player 4-5 = 9 natural, Banker 3-4 = 7
NAT_TIE = "4S 8H 4D KH"  # Player 4-4 = 8 (pair), Banker 8-K = 8: natural tie
PERFECT = "7S 2H 7S 3H 5D 9H"  # Player 7S-7S perfect pair, 4+5 = 9; Banker 5 draws on 5 -> 4
B6_TWO = "2S 3S 3H 3D TS"  # Player 5 draws 0 -> 5; Banker 3-3 = 6 stands on 0: Banker 6-5
B6_THREE = "TS 2H JS 2D 2S 2C"  # Player 0 draws 2 -> 2; Banker 2-2 = 4 draws 2 -> 6: Banker 6-2
TIE_66 = "3S 4H 3H 2D"  # both 6, both stand
P_NAT8_LOSES = "3S 4D 5H 5D"  # Player 8 natural, Banker 9 natural
B_NAT9 = "3S 4D 5H 5D"


@pytest.mark.parametrize(
    "deal, bet_type, mode, outcome, back",
    [
        (P_NAT9, "player", None, "win", 2000),
        (P_NAT9, "banker", "traditional", "lose", 0),
        (P_NAT9, "tie", None, "lose", 0),
        (P_NAT9, "player_natural", None, "win", 4500),
        (P_NAT9, "banker_natural", None, "lose", 0),
        (P_NAT9, "player_bonus", None, "win", 2000),  # natural win 1:1 whatever the margin
        (P_NAT9, "banker_bonus", None, "lose", 0),
        (P_NAT9, "player_pair", None, "lose", 0),
        (NAT_TIE, "player", None, "push", 1000),
        (NAT_TIE, "banker", "traditional", "push", 1000),
        (NAT_TIE, "banker", "no_commission", "push", 1000),
        (NAT_TIE, "tie", None, "win", 9000),
        (NAT_TIE, "player_pair", None, "win", 12000),
        (NAT_TIE, "banker_pair", None, "lose", 0),
        (NAT_TIE, "either_pair", None, "win", 6000),
        (NAT_TIE, "perfect_pair", None, "lose", 0),  # 4S 4D: same rank, not same suit
        (NAT_TIE, "player_bonus", None, "push", 1000),  # natural tie pushes
        (NAT_TIE, "banker_bonus", None, "push", 1000),
        (NAT_TIE, "player_natural", None, "win", 4500),
        (NAT_TIE, "banker_natural", None, "win", 4500),
        (PERFECT, "perfect_pair", None, "win", 26000),
        (PERFECT, "either_pair", None, "win", 6000),
        (PERFECT, "player_pair", None, "win", 12000),
        (PERFECT, "player_bonus", None, "win", 3000),  # non-natural win by 5: 2:1
        (PERFECT, "player_natural", None, "lose", 0),  # 9 on three cards is no natural
        (B6_TWO, "banker", "traditional", "win", 1950),
        (B6_TWO, "banker", "no_commission", "win", 1500),
        (B6_TWO, "banker", None, "win", 1950),  # no mode: the default, traditional
        (B6_TWO, "lucky_six", None, "win", 13000),
        (B6_TWO, "lucky_six_2", None, "win", 23000),
        (B6_TWO, "lucky_six_3", None, "lose", 0),
        (B6_TWO, "banker_pair", None, "win", 12000),
        (B6_TWO, "banker_bonus", None, "lose", 0),  # margin 1
        (B6_THREE, "lucky_six", None, "win", 21000),
        (B6_THREE, "lucky_six_2", None, "lose", 0),
        (B6_THREE, "lucky_six_3", None, "win", 51000),
        (B6_THREE, "banker", "no_commission", "win", 1500),  # any winning Banker 6
        (B6_THREE, "banker_bonus", None, "win", 2000),  # non-natural margin 4: 1:1
        (B6_THREE, "player", None, "lose", 0),
        (TIE_66, "lucky_six", None, "lose", 0),  # a 6-6 tie loses
        (TIE_66, "lucky_six_2", None, "lose", 0),
        (TIE_66, "player_bonus", None, "lose", 0),  # a non-natural tie loses
        (TIE_66, "banker_bonus", None, "lose", 0),
        (TIE_66, "tie", None, "win", 9000),
        (P_NAT8_LOSES, "player_natural", None, "win", 4500),  # pays although Player loses
        (P_NAT8_LOSES, "player_bonus", None, "lose", 0),
        (B_NAT9, "banker_bonus", None, "win", 2000),
        (B_NAT9, "banker_natural", None, "win", 4500),
        (B_NAT9, "banker", "no_commission", "win", 2000),
    ],
)
def test_paytable_line(deal, bet_type, mode, outcome, back):
    result = returned(deal, bet_type, mode)
    assert (result.outcome, result.returned_minor, result.staked_minor) == (outcome, back, STAKE)


# Player T-2 = 2 draws 7 -> 9; Banker T-J = 0 draws the card below: margin 9 - value.
@pytest.mark.parametrize(
    "banker_third, margin, back",
    [("KD", 9, 31000), ("AD", 8, 11000), ("2D", 7, 7000), ("3D", 6, 5000), ("4D", 5, 3000),
     ("5D", 4, 2000), ("6D", 3, 0), ("9C", 0, 0)],
)
def test_bonus_margins(banker_third, margin, back):
    result = returned(f"TS TH 2S JH 7S {banker_third}", "player_bonus")
    assert result.returned_minor == back
    assert result.outcome == ("win" if back else "lose")


def test_banker_commission_rounds_down_and_keeps_the_remainder():
    [result] = play(B6_TWO, [bet("banker", 1001, mode="traditional")]).settle()
    # 1001 * 19/20 = 950.95 -> 950, remainder 19/20
    assert result.returned_minor == 1001 + 950
    assert (result.remainder_num, result.remainder_den) == (19, 20)


def test_explanation_names_the_rule_and_amounts():
    [result] = play(B6_TWO, [bet("banker", 100_000, mode="no_commission")]).settle()
    assert result.explanation == "Banker wins 6–5, no-commission mode: Banker 6 pays 1:2 → returns 1,500.00 (stake 1,000.00 + winnings 500.00)"


def test_pair_needs_the_same_rank_ten_king_is_no_pair():
    assert returned("TS 2H KS 3H 5D 9H", "player_pair").outcome == "lose"
    loose = dataclasses.replace(RULES, pair_same_rank_only=False)
    [r] = play("TS 2H KS 3H 5D 9H", [bet("player_pair")], rules=loose).settle()
    assert r.outcome == "win"


def test_decision_fields_change_the_result():
    nat = dataclasses.replace(RULES, natural_pays_regardless_of_win=False)
    [r] = play(P_NAT8_LOSES, [bet("player_natural")], rules=nat).settle()
    assert r.outcome == "lose"
    six = dataclasses.replace(RULES, lucky_six_needs_banker_win=False)
    [r] = play(TIE_66, [bet("lucky_six")], rules=six).settle()
    assert r.outcome == "win"
    nc = dataclasses.replace(RULES, no_commission_half_on_any_banker_6=False)
    [r] = play(B6_THREE, [bet("banker", mode="no_commission")], rules=nc).settle()
    assert r.returned_minor == 2000


# ------------------------------------------------------------ max round of the shoe

SIDE_MAX = [("player_pair", 60), ("banker_pair", 60), ("either_pair", 50), ("perfect_pair", 50),
            ("player_natural", 50), ("banker_natural", 50), ("lucky_six", 50), ("lucky_six_2", 50),
            ("lucky_six_3", 50)]


@pytest.mark.parametrize("bet_type, last", SIDE_MAX)
def test_side_bet_offered_up_to_its_max_round(bet_type, last):
    bac.new_round(RULES, round_in_shoe=last).place_bet(bet(bet_type))
    model = bac.new_round(RULES, round_in_shoe=last + 1)
    with pytest.raises(Refusal) as err:
        model.place_bet(bet(bet_type))
    assert err.value.code == "bet_not_offered"
    assert err.value.message == (
        f"{bac.BET_NAMES[bet_type]} is not offered after round {last} of the shoe; this is round {last + 1}"
    )
    assert model.bets == []


@pytest.mark.parametrize("bet_type", ["player", "banker", "tie", "player_bonus", "banker_bonus"])
def test_bets_without_max_round_are_offered_late_in_the_shoe(bet_type):
    bac.new_round(RULES, round_in_shoe=104).place_bet(bet(bet_type))


def test_perfect_pair_message():
    with pytest.raises(Refusal, match="Perfect Pair is not offered after round 50 of the shoe; this is round 51"):
        bac.new_round(RULES, round_in_shoe=51).place_bet(bet("perfect_pair"))


# ------------------------------------------------------------ limits

MAX_MAIN = RULES.limit_for("player").max_minor


def test_difference_limit_at_the_limit_and_one_past():
    model = bac.new_round(RULES, round_in_shoe=2)
    model.place_bet(bet("banker", 500_000, "b1"))
    model.place_bet(bet("player", MAX_MAIN + 500_000, "p1"))  # difference exactly the max
    with pytest.raises(Refusal) as err:
        model.place_bet(bet("player", 1 * 100, "p2"))  # one more unit of 100 past
    assert err.value.code == "difference_above_maximum"
    model.place_bet(bet("banker", 100, "b2"))  # offsetting is fine


def test_difference_is_per_player():
    model = bac.new_round(RULES, round_in_shoe=2)
    model.place_bet(bet("banker", MAX_MAIN, "b1", player="p1"))
    with pytest.raises(Refusal):
        model.place_bet(bet("banker", 100, "b2", player="p1"))
    model.place_bet(bet("banker", MAX_MAIN, "b3", player="p2"))


def test_single_main_bet_at_max_and_one_past():
    bac.new_round(RULES, round_in_shoe=2).place_bet(bet("player", MAX_MAIN))
    with pytest.raises(Refusal) as err:
        bac.new_round(RULES, round_in_shoe=2).place_bet(bet("player", MAX_MAIN + 1))
    assert err.value.code == "difference_above_maximum"


@pytest.mark.parametrize("bet_type", [t for t in bac.BET_TYPES if t not in bac.MAIN_BETS])
def test_side_bet_limits(bet_type):
    limit = RULES.limit_for(bet_type)
    model = bac.new_round(RULES, round_in_shoe=2)
    model.place_bet(bet(bet_type, limit.min_minor, "a"))
    model.place_bet(bet(bet_type, limit.max_minor - limit.min_minor, "b"))  # total exactly the max
    with pytest.raises(Refusal) as err:
        model.place_bet(bet(bet_type, 1, "c"))
    assert err.value.code == "stake_below_minimum"
    with pytest.raises(Refusal) as err:
        model.place_bet(bet(bet_type, limit.min_minor, "d"))
    assert err.value.code == "stake_above_maximum"


@pytest.mark.parametrize("bet_type", bac.BET_TYPES)
def test_minimum_stake(bet_type):
    low = RULES.limit_for(bet_type).min_minor
    bac.new_round(RULES, round_in_shoe=2).place_bet(bet(bet_type, low))
    with pytest.raises(Refusal) as err:
        bac.new_round(RULES, round_in_shoe=2).place_bet(bet(bet_type, low - 1))
    assert err.value.code == "stake_below_minimum"


# ------------------------------------------------------------ burn


@pytest.mark.parametrize("first, more", [("AS", 1), ("5H", 5), ("9D", 9), ("TC", 10), ("KS", 10)])
def test_burn_on_a_new_shoe(first, more):
    model = bac.new_round(RULES, round_in_shoe=1)
    model.close_betting()
    model.deal(parse_card(first), "burn")
    burned = [f"{rank}C" for rank in "23456789TJ"[:more]]
    for text in burned:
        assert model.next_card_target() == "burn"
        model.deal(parse_card(text), "burn")
    assert model.next_card_target() == "player"
    assert model.view()["burn"] == [first] + burned


def test_burn_only_on_round_one():
    model = bac.new_round(RULES, round_in_shoe=2)
    model.close_betting()
    assert model.next_card_target() == "player"


def test_unreported_burn_stops_after_the_revealed_card():
    rules = dataclasses.replace(RULES, burned_cards_reported=False)
    model = bac.new_round(rules, round_in_shoe=1)
    model.close_betting()
    model.deal(parse_card("9S"), "burn")
    assert model.next_card_target() == "player"


def test_burn_card_to_player_is_refused():
    model = bac.new_round(RULES, round_in_shoe=1)
    model.close_betting()
    with pytest.raises(Refusal) as err:
        model.deal(parse_card("9S"), "player")
    assert err.value.code == "wrong_target"


# ------------------------------------------------------------ refusals leave the model unchanged


def _refused(model, action, code):
    before = model.view()
    with pytest.raises(Refusal) as err:
        action()
    assert err.value.code == code
    assert model.view() == before


def test_every_refusal_code():
    m = bac.new_round(RULES, round_in_shoe=2)
    m.place_bet(bet("player", bet_id="x"))
    _refused(m, lambda: m.place_bet(bet("tie", bet_id="x")), "duplicate_bet_id")
    _refused(m, lambda: m.place_bet(bet("player", spot="seat:1")), "bad_spot")
    _refused(m, lambda: m.place_bet(bet("dragon")), "bet_not_offered")
    _refused(m, lambda: m.place_bet(bet("banker", mode="ez")), "bad_mode")
    _refused(m, lambda: m.place_bet(bet("banker", stake=0)), "bad_amount")
    _refused(m, lambda: m.place_bet(bet("banker", stake=10.0)), "bad_amount")
    _refused(m, lambda: m.place_bet(bet("banker", stake=True)), "bad_amount")
    _refused(m, lambda: m.deal(parse_card("AS"), "player"), "card_not_expected")
    _refused(m, m.settle, "round_not_complete")
    _refused(m, lambda: m.decide("player", "hit", "player"), "no_decisions")
    _refused(m, lambda: m.follow("x", "split", True), "no_follow_offers")
    m.close_betting()
    _refused(m, lambda: m.place_bet(bet("tie")), "betting_closed")
    _refused(m, m.close_betting, "betting_closed")
    _refused(m, lambda: m.deal(parse_card("AS"), "banker"), "wrong_target")
    _refused(m, m.settle, "round_not_complete")
    deal_all(m, "4S 3H 5S 4H")
    _refused(m, lambda: m.deal(parse_card("AS"), "player"), "card_not_expected")
    assert m.legal_decisions() == {} and m.pending_follows() == []
    strict = dataclasses.replace(RULES, banker_mode_default=None)
    s = bac.new_round(strict, round_in_shoe=2)
    _refused(s, lambda: s.place_bet(bet("banker")), "mode_required")
    few = dataclasses.replace(RULES, bets_per_round_max=1)
    f = bac.new_round(few, round_in_shoe=2)
    f.place_bet(bet("tie"))
    _refused(f, lambda: f.place_bet(bet("player")), "too_many_bets")


def test_impossible_card():
    rules = dataclasses.replace(RULES, decks=1)
    m = bac.new_round(rules, round_in_shoe=2)
    m.close_betting()
    m.deal(parse_card("AS"), "player")
    _refused(m, lambda: m.deal(parse_card("AS"), "banker"), "impossible_card")


@pytest.mark.parametrize("value", [0, 105, "1", 1.0, None])
def test_bad_round_in_shoe(value):
    with pytest.raises(Refusal) as err:
        bac.new_round(RULES, round_in_shoe=value)
    assert err.value.code == "bad_round_in_shoe"


def test_round_104_is_the_last_possible():
    assert bac.new_round(RULES, round_in_shoe=104).round_in_shoe == 104


def test_rule_set_identity_and_error_policy():
    assert bac.RULE_SETS == (RULES,)
    assert (RULES.id, RULES.version, RULES.game, RULES.decks) == ("baccarat/live-8d", 1, "baccarat", 8)
    assert RULES.error_policy.action_for("player_connection_lost") == "complete"
    for cause in ("system_error", "human_error", "host_interruption", "other", "player_no_action"):
        assert RULES.error_policy.action_for(cause) == "pause"
    assert len(RULES.content_hash()) == 64

"""Spielbank v2: the other players on a box insure their own stake (seed 002); v1 keeps
the holder's insurance only; v2 seat numbers are one player's each. Table-driven (pure model)."""
from __future__ import annotations

import pytest

from domain.blackjack import SPIELBANK_V1
from domain.blackjack_rules import SPIELBANK_V2
from tests.unit.domain.test_blackjack import Table, refused


def box_with_dealer_ace(rules=SPIELBANK_V2) -> Table:  # type: ignore[no-untyped-def]
    """box:1 held by p1 (own seat 1); p2 (seat 2) and p3 (seat 3) stake on it too; dealer ace."""
    return (Table(rules).bet("h", "p1", "box:1", 1000, seat_no=1).bet("f2", "p2", "box:1", 2000, seat_no=2)
            .bet("f3", "p3", "box:1", 500, seat_no=3).close().cards("TS", "AH", "9D"))


def offers(t: Table) -> list[tuple[str, str, str, int]]:
    return [(o.bet_id, o.player_id, o.kind, o.amount_minor) for o in t.r.pending_follows()]


def test_v2_offers_each_other_player_their_own_insurance_at_half_their_stake():
    t = box_with_dealer_ace()
    assert t.legal("box:1") == ("insurance", "no_insurance", "auto")
    assert offers(t) == [("f2", "p2", "insurance", 1000), ("f3", "p3", "insurance", 250)]


def test_v1_offers_no_insurance_to_the_other_players():
    assert offers(box_with_dealer_ace(SPIELBANK_V1)) == []


@pytest.mark.parametrize("dealer_second, f2_outcome, f2_returned", [("KD", "win", 3000), ("7C", "lose", 0)])
def test_follower_insurance_settles_on_its_own_line(dealer_second, f2_outcome, f2_returned):
    t = box_with_dealer_ace()
    moves = t.r.follow("f2", "insurance", True)
    assert [(m.bet_id, m.player_id, m.amount_minor, m.reason) for m in moves] == [("f2:insurance", "p2", 1000, "insurance")]
    t.r.follow("f3", "insurance", False)
    t.do("box:1", "no_insurance").do("box:1", "stand")
    t.cards(dealer_second)  # A-K dealer blackjack; A-7 soft 18 stands
    res = t.results()
    assert (res["f2:insurance"].outcome, res["f2:insurance"].returned_minor) == (f2_outcome, f2_returned)
    assert "h:insurance" not in res and "f3:insurance" not in res  # the holder and p3 declined


def test_the_holders_answer_closes_the_boxs_insurance_offers():
    t = box_with_dealer_ace()
    t.do("box:1", "insurance")
    assert offers(t) == []
    refused("no_follow_offer", t.r.follow, "f2", "insurance", True)
    t.do("box:1", "stand").cards("7C")
    res = t.results()
    assert res["h:insurance"].staked_minor == 500 and "f2:insurance" not in res


def test_a_followers_insurance_stays_open_while_another_box_answers():
    t = (Table(SPIELBANK_V2).bet("h1", "p1", "box:1", 1000, seat_no=1).bet("f", "p2", "box:1", 1000, seat_no=2)
         .bet("h2", "p3", "box:2", 1000, seat_no=4).close().cards("TS", "TH", "AH", "9D", "9C"))
    t.do("box:2", "no_insurance")
    assert offers(t) == [("f", "p2", "insurance", 500)]
    t.r.follow("f", "insurance", True)
    t.do("box:1", "no_insurance").do("box:1", "stand").do("box:2", "stand").cards("KD")
    assert t.results()["f:insurance"].returned_minor == 1500


@pytest.mark.parametrize("rules, second, code", [
    (SPIELBANK_V2, ("b", "p2", "box:2", 3), "seat_taken"),  # seat 3 is p1's this round
    (SPIELBANK_V2, ("b", "p1", "box:2", 4), "player_already_seated"),  # p1 already gave seat 3
    (SPIELBANK_V2, ("b", "p1", "box:2", 3), None),  # p1's second box, same seat
    (SPIELBANK_V2, ("b", "p2", "box:2", 4), None),
    (SPIELBANK_V2, ("b", "p2", "box:2", None), None),  # no seat number: nothing to check
    (SPIELBANK_V1, ("b", "p2", "box:2", 3), None),  # v1 as recorded: two players may give one seat
])
def test_seat_numbers_are_one_players_each_in_v2(rules, second, code):
    t = Table(rules).bet("a", "p1", "box:1", 1000, seat_no=3)
    bet_id, player, spot, seat_no = second
    if code is None:
        t.bet(bet_id, player, spot, 1000, seat_no=seat_no)
    else:
        refused(code, t.bet, bet_id, player, spot, 1000, seat_no=seat_no)


def test_only_a_followers_insurance_left_the_dealer_still_draws_the_second_card():
    t = box_with_dealer_ace()
    t.r.follow("f2", "insurance", True)
    t.do("box:1", "no_insurance").do("box:1", "hit").cards("KC")  # 29: the box is bust
    assert t.target() == "dealer"  # no hand stands, but p2's insurance needs the dealer's second card
    t.cards("KD")
    assert t.target() is None and t.results()["f2:insurance"].returned_minor == 3000

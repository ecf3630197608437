"""Seats that span rounds (domain/seating.py), table-driven: which bet a seating refuses,
and how a closed round moves the seats."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.blackjack_rules import CASINO_TOUR_V1, LIVE_8D_V1, LIVE_8D_V2, SPIELBANK_V1, SPIELBANK_V2
from domain.errors import InvariantBroken, Refusal
from domain.model import Bet
from domain.seating import Held, Loss, Seating, SeatPlay, after_round, check_bet, seat_plays, spans_rounds

# p1 holds seat:1 since round 3; p2 lost seat:2 in round 4 (took no action).
SEATING = Seating(held=(Held("seat:1", "p1", 3),), lost=(Loss("seat:2", "p2", 4),), last_round_no=4)


def bet(player: str, spot: str, bet_type: str = "main") -> Bet:
    return Bet("b", player, spot, bet_type, 1000)


@pytest.mark.parametrize("player, spot, bet_type, round_no, code", [
    ("p1", "seat:1", "main", 5, None),  # the holder on their own seat
    ("p1", "seat:1", "pair", 5, None),
    ("p3", "seat:1", "main", 5, "seat_held"),  # another player on a held seat
    ("p3", "seat:1", "pair", 5, None),  # a Pair bet needs the main bet first: the round refuses it
    ("p1", "seat:3", "main", 5, "player_already_seated"),  # the holder on a second seat
    ("p1", "behind:3", "main", 5, "seated_player_behind"),  # the holder bets behind
    ("p1", "behind:3", "pair", 5, "seated_player_behind"),
    ("p3", "behind:1", "main", 5, None),  # anyone unseated may bet behind a held seat
    ("p2", "seat:2", "main", 5, "seat_lost"),  # the round after the loss: refused on that seat
    ("p2", "seat:2", "main", 6, None),  # the wait (1 round) is over: re-seated
    ("p2", "seat:3", "main", 5, None),  # another free seat at once
    ("p2", "behind:1", "main", 5, None),  # or a bet behind at once
    ("p3", "seat:2", "main", 5, None),  # the lost seat is free for every other player
])
def test_check_bet_under_live_8d_v2(player, spot, bet_type, round_no, code):
    if code is None:
        check_bet(LIVE_8D_V2, SEATING, bet(player, spot, bet_type), round_no)
        return
    with pytest.raises(Refusal) as refused:
        check_bet(LIVE_8D_V2, SEATING, bet(player, spot, bet_type), round_no)
    assert refused.value.code == code


@pytest.mark.parametrize("rules", [LIVE_8D_V1, SPIELBANK_V1, SPIELBANK_V2, CASINO_TOUR_V1], ids=lambda r: f"{r.id} v{r.version}")
def test_rule_sets_without_seats_across_rounds_refuse_nothing(rules):
    assert not spans_rounds(rules)
    check_bet(rules, SEATING, bet("p3", "seat:1"), 5)
    assert after_round(rules, SEATING, 5, [SeatPlay("seat:1", "p3", True, False)]) is SEATING


def held(s: Seating) -> dict[str, str]:
    return {h.spot: h.player_id for h in s.held}


def lost(s: Seating) -> set[tuple[str, str, int]]:
    return {tuple(x) for x in s.lost}  # type: ignore[misc]


@pytest.mark.parametrize("plays, held_after, lost_after", [
    # p1 acts again: keeps seat:1; p2's loss of round 4 still refuses round 6? no: its wait ends with round 5
    ([SeatPlay("seat:1", "p1", True, True)], {"seat:1": "p1"}, set()),
    # a hand that asked nothing (a blackjack) is not "no action"
    ([SeatPlay("seat:1", "p1", False, False)], {"seat:1": "p1"}, set()),
    # asked, never acted (timeout / a pause completed it): lost after the round
    ([SeatPlay("seat:1", "p1", True, False)], {}, {("seat:1", "p1", 5)}),
    # p1 placed no main bet in round 5: no action, lost
    ([SeatPlay("seat:3", "p3", True, True)], {"seat:3": "p3"}, {("seat:1", "p1", 5)}),
    # a new player seated by a main bet; the timeout of a new player loses the seat at once
    ([SeatPlay("seat:1", "p1", True, True), SeatPlay("seat:4", "p4", True, False)], {"seat:1": "p1"},
     {("seat:4", "p4", 5)}),
])
def test_after_round_moves_the_seats(plays, held_after, lost_after):
    after = after_round(LIVE_8D_V2, SEATING, 5, plays)
    assert held(after) == held_after
    assert lost(after) == lost_after
    assert after.last_round_no == 5


def test_holding_since_is_kept_while_the_player_stays():
    after = after_round(LIVE_8D_V2, SEATING, 5, [SeatPlay("seat:1", "p1", True, True)])
    assert after.held == (Held("seat:1", "p1", 3),)


def test_a_loss_refuses_for_its_wait_then_is_forgotten():
    s = after_round(LIVE_8D_V2, Seating(), 1, [SeatPlay("seat:2", "p2", True, False)])
    assert lost(s) == {("seat:2", "p2", 1)}
    with pytest.raises(Refusal):
        check_bet(LIVE_8D_V2, s, bet("p2", "seat:2"), 2)
    s = after_round(LIVE_8D_V2, s, 2, [])
    check_bet(LIVE_8D_V2, s, bet("p2", "seat:2"), 3)
    assert s.lost == ()


@pytest.mark.parametrize("round_no, voided", [(4, False), (3, False), (5, True)])
def test_void_and_late_rounds_move_no_seat(round_no, voided):
    after = after_round(LIVE_8D_V2, SEATING, round_no, [SeatPlay("seat:1", "p1", True, False)], voided=voided)
    assert after.held == SEATING.held and after.lost == SEATING.lost


@pytest.mark.parametrize("decisions, asked, acted", [
    ([], False, False),
    ([("seat:1", "player")], True, True),
    ([("seat:1", "timeout")], True, False),
    ([("seat:1", "system")], True, False),
    ([("seat:1.1", "timeout"), ("seat:1.2", "player")], True, True),  # split hands count for the seat
    ([("seat:2", "player")], False, False),
])
def test_seat_plays_reads_who_acted(decisions, asked, acted):
    bets = [bet("p1", "seat:1"), Bet("x", "p9", "behind:1", "main", 500), bet("p1", "seat:1", "pair")]
    assert seat_plays(LIVE_8D_V2, bets, decisions) == [SeatPlay("seat:1", "p1", asked, acted)]


def test_seating_round_trips_through_its_stored_form():
    assert Seating.from_dict(SEATING.as_dict()) == SEATING


def test_more_plays_than_seats_is_a_bug():
    with pytest.raises(InvariantBroken):
        after_round(LIVE_8D_V2, Seating(), 1, [SeatPlay(f"seat:{n}", f"p{n}", True, True) for n in range(1, 9)])


def test_v1_hashes_did_not_move_when_seat_fields_were_added():
    # recorded on every stored round (tests/store/golden): a new field at its "as before" value is not hashed
    assert LIVE_8D_V1.content_hash() == "17fa981ae6a397e634f6a3975ac9c4fe7ec64208c61e30554ea671a150dbd9ae"
    assert SPIELBANK_V1.content_hash() == "e22eaf7333d0711ee8d87c20c6bc41d5aeae231ba62018e01950f549a66eedf6"
    assert "seats_span_rounds" not in LIVE_8D_V1.canonical()
    assert LIVE_8D_V2.canonical()["seats_span_rounds"] is True


# ---------------------------------------------------------------- property: any run of rounds

PLAYERS = [f"p{n}" for n in range(1, 6)]
attempt = st.tuples(st.sampled_from(PLAYERS), st.integers(1, 7), st.booleans(), st.booleans())  # player, seat, asked, acted


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(attempt, max_size=8), st.booleans()), max_size=12))
def test_any_run_of_rounds_keeps_one_player_per_seat_and_one_seat_per_player(rounds):
    seating = Seating()
    for round_no, (attempts, voided) in enumerate(rounds, start=1):
        taken: dict[str, str] = {}
        for player, n, _asked, _acted in attempts:
            spot = f"seat:{n}"
            try:
                check_bet(LIVE_8D_V2, seating, bet(player, spot), round_no)
            except Refusal:
                continue
            if spot in taken or player in taken.values():
                continue  # the round model refuses these (seat_taken / player_already_seated)
            taken[spot] = player
            holder = seating.holder(spot)
            assert holder is None or holder.player_id == player
        plays = [SeatPlay(s, p, *next((a, c) for pl, n, a, c in attempts if pl == p and f"seat:{n}" == s))
                 for s, p in taken.items()]
        before = seating
        seating = after_round(LIVE_8D_V2, seating, round_no, plays, voided=voided)
        spots = [h.spot for h in seating.held]
        players = [h.player_id for h in seating.held]
        assert len(spots) == len(set(spots)) and len(players) == len(set(players))
        if voided:
            assert seating.held == before.held
        for h in seating.held:  # a seat is held only by who bet on it and acted, or kept it from before
            assert taken.get(h.spot) == h.player_id or (voided and before.holder(h.spot) == h)

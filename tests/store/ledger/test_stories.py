"""Rounds told as stories through the application, on SQLite and PostgreSQL."""
from __future__ import annotations

from ledger.round import Round
from ledger.store import open_app
from tests.support.feed import Feed, baccarat_round, balances, lines, round_balance, teen_patti_round


def statuses(results):  # type: ignore[no-untyped-def]
    return [(r.status, r.code) for r in results]


def event_names(app, rnd):  # type: ignore[no-untyped-def]
    return [type(e).__name__ for e in app.repository.event_store.get(rnd.id)]


def test_teen_patti_round_from_opening_to_settlement(ledger):
    f = Feed("tp-1")
    results = ledger.ingest(lines(*teen_patti_round(f)))
    assert all(r.status == "accepted" for r in results), statuses(results)
    assert results[-1].events == ("CardDealt", "Settled")
    rnd = ledger.find_round("tp-1", 1)
    assert rnd.phase == "settled"
    money = balances(ledger, rnd)
    # A (pair of kings) beats B: alice's 1000 at 0.95:1 returns 1950; bob loses 500 and the 100 tie.
    assert money["player:alice"] == 950
    assert money["player:bob"] == -600
    assert money["house:tp-1"] == -350
    assert round_balance(ledger, rnd) == 0
    settled = list(ledger.repository.event_store.get(rnd.id))[-1]
    assert [r["outcome"] for r in settled.results] == ["win", "lose", "lose"]


def test_baccarat_round_with_burn_settles_player_natural(ledger):
    f = Feed("bacc-1")
    results = ledger.ingest(lines(*baccarat_round(f)))
    assert all(r.status == "accepted" for r in results), statuses(results)
    rnd = ledger.find_round("bacc-1", 1)
    assert rnd.phase == "settled" and rnd.round_in_shoe == 1
    assert balances(ledger, rnd)["player:alice"] == 1000
    assert balances(ledger, rnd)["player:bob"] == -2000
    shoe = ledger.get_shoe("bacc-1", "S1")
    assert sum(shoe.seen.values()) == 6  # burn + four cards count against the 8-deck shoe


def test_second_baccarat_round_is_round_two_of_the_shoe(ledger):
    f = Feed("bacc-2")
    ledger.ingest(lines(*baccarat_round(f)))
    results = ledger.ingest(lines(*baccarat_round(f.at(2), first_in_shoe=False)))
    assert all(r.status == "accepted" for r in results), statuses(results)
    assert ledger.find_round("bacc-2", 2).round_in_shoe == 2


def blackjack_opening(f: Feed) -> list:  # type: ignore[type-arg]
    return [
        f.open("blackjack/live-8d", shoe_id="bj-shoe-1"),
        f.bet("m1", "p1", "seat:1", "main", 1000),
        f.close(),
        f.cards("TS>seat:1", "6H>dealer", "9D>seat:1"),
    ]


def test_blackjack_round_player_stands_dealer_busts(ledger):
    f = Feed("bj-1")
    results = ledger.ingest(
        lines(*blackjack_opening(f), f.decide("seat:1", "stand"), f.cards("TC>dealer", "7D>dealer"))
    )
    assert all(r.status == "accepted" for r in results), statuses(results)
    rnd = ledger.find_round("bj-1", 1)
    assert rnd.phase == "settled"
    assert balances(ledger, rnd)["player:p1"] == 1000


def test_bet_behind_follows_a_split(ledger):
    f = Feed("bj-2")
    results = ledger.ingest(lines(
        f.open("blackjack/live-8d"),
        f.bet("m1", "p1", "seat:1", "main", 1000),
        f.bet("bb", "p2", "behind:1", "main", 500),
        f.close(),
        f.cards("8S>seat:1", "6H>dealer", "8D>seat:1"),
        f.decide("seat:1", "split"),
        f.follow("bb", "split", True),
        f.card("TS", "seat:1.1"),
        f.decide("seat:1.1", "stand"),
        f.card("9C", "seat:1.2"),
        f.decide("seat:1.2", "stand"),
        f.cards("TD>dealer"),  # dealer 16 draws
        f.cards("9H>dealer"),  # 25: bust
    ))
    assert all(r.status == "accepted" for r in results), statuses(results)
    follow = results[8]
    assert follow.events == ("FollowDecided",)
    rnd = ledger.find_round("bj-2", 1)
    assert rnd.phase == "settled"
    assert rnd.put_in[("bb", "p2")] == 1000  # the stake plus the followed split
    money = balances(ledger, rnd)
    assert money["player:p1"] == 2000 and money["player:p2"] == 1000
    assert round_balance(ledger, rnd) == 0


def test_paused_and_resumed_round(ledger):
    f = Feed("tp-2")
    opening = teen_patti_round(f)
    head, cards = opening[:5], opening[5]
    early = f.card("KD", "A", seq_no=3)  # dealt while paused: refused
    again = f.card("KD", "A", seq_no=3)  # the studio sends it again (a new command) after the resume
    results = ledger.ingest(lines(
        *head, cards[:2], f.pause("system_error", note="camera down"), early, f.resume(), again, cards[3:]
    ))
    by_id = {r.command_id: r for r in results}
    assert (by_id[early["command_id"]].status, by_id[early["command_id"]].code) == ("refused", "round_paused")
    assert by_id[again["command_id"]].status == "accepted"
    assert [r.code for r in results if r.status != "accepted"] == ["round_paused"]
    rnd = ledger.find_round("tp-2", 1)
    assert rnd.phase == "settled"
    assert event_names(ledger, rnd).count("Paused") == 1 and event_names(ledger, rnd).count("Resumed") == 1


def test_voided_baccarat_round_refunds_every_stake(ledger):
    f = Feed("bacc-3")
    results = ledger.ingest(lines(
        *baccarat_round(f)[:4], f.pause("host_interruption"), f.void("host_interruption")
    ))
    assert results[-2].events == ("Paused",)
    assert results[-1].events == ("Voided",)
    rnd = ledger.find_round("bacc-3", 1)
    voided = list(ledger.repository.event_store.get(rnd.id))[-1]
    assert {(r["player_id"], r["amount_minor"]) for r in voided.refunds} == {("alice", 1000), ("bob", 2000)}
    money = balances(ledger, rnd)
    assert money["player:alice"] == 0 and money["player:bob"] == 0 and round_balance(ledger, rnd) == 0


def test_live_blackjack_host_interruption_voids_refunds_and_retires_the_shoe(ledger):
    f = Feed("bj-3")
    results = ledger.ingest(lines(
        f.open("blackjack/live-8d", shoe_id="shoe-A"),
        f.bet("m1", "p1", "seat:1", "main", 1000),
        f.bet("pp", "p1", "seat:1", "pair", 200),
        f.close(),
        f.cards("8S>seat:1", "6H>dealer", "8D>seat:1"),
        f.decide("seat:1", "double"),
        f.pause("host_interruption"),
    ))
    assert results[-1].events == ("Voided", "Shoe.CardsRecorded", "Shoe.Retired")
    rnd = ledger.find_round("bj-3", 1)
    voided = list(ledger.repository.event_store.get(rnd.id))[-1]
    assert sorted((r["bet_id"], r["amount_minor"]) for r in voided.refunds) == [("m1", 2000), ("pp", 200)]
    assert balances(ledger, rnd)["player:p1"] == 0
    again = ledger.handle(lines(f.at(2).open("blackjack/live-8d", shoe_id="shoe-A"))[0])
    assert (again.status, again.code) == ("refused", "shoe_retired")
    assert "retired after round bj-3#1 was voided" in again.message  # named as people do, not by its UUID
    ledger.forget_cached()  # the same from the stored events alone
    assert "round bj-3#1 was" in ledger.handle(lines(f.at(3).open("blackjack/live-8d", shoe_id="shoe-A"))[0]).message
    fresh = ledger.handle(lines(f.open("blackjack/live-8d", shoe_id="shoe-B"))[0])
    assert fresh.status == "accepted"


def test_live_blackjack_player_disconnect_completes_the_hand(ledger):
    f = Feed("bj-4")
    results = ledger.ingest(lines(
        f.open("blackjack/live-8d"),
        f.bet("m1", "p1", "seat:1", "main", 1000),
        f.bet("bb", "p2", "behind:1", "main", 500),
        f.close(),
        f.cards("8S>seat:1", "6H>dealer", "8D>seat:1"),
        f.decide("seat:1", "split"),
        f.pause("player_connection_lost", player_id="p2"),  # the follower drops: declined
    ))
    assert results[-1].status == "accepted"
    assert results[-1].events == ("Interrupted", "FollowDecided")
    rnd = ledger.find_round("bj-4", 1)
    assert rnd.put_in[("bb", "p2")] == 500


def test_settlement_reversed_then_voided(ledger):
    f = Feed("tp-3")
    ledger.ingest(lines(*teen_patti_round(f)))
    result = ledger.handle(lines(f.reverse("void"))[0])
    assert result.events == ("SettlementReversed", "Voided")
    rnd = ledger.find_round("tp-3", 1)
    money = balances(ledger, rnd)
    assert all(v == 0 for v in money.values()), money


def test_settlement_reversed_then_resettled(ledger):
    f = Feed("tp-4")
    ledger.ingest(lines(*teen_patti_round(f)))
    result = ledger.handle(lines(f.reverse("resettle"))[0])
    assert result.events == ("SettlementReversed", "Settled")
    rnd = ledger.find_round("tp-4", 1)
    assert rnd.settlement_no == 2 and rnd.phase == "settled"
    assert balances(ledger, rnd)["player:alice"] == 950


def round_state(rnd: Round) -> dict:  # type: ignore[type-arg]
    return {
        "version": rnd.version, "phase": rnd.phase, "balance": rnd.balance_minor, "cards": rnd.cards,
        "put_in": rnd.put_in, "settlements": rnd.settlements, "paused": rnd.paused, "voided": rnd.voided,
        "view": rnd.model.view() if rnd.model else None,
    }


def test_replay_from_events_equals_live_state(ledger, store_url):
    f = Feed("bj-5")
    ledger.ingest(lines(*blackjack_opening(f)))
    live = ledger.find_round("bj-5", 1)
    ledger.ingest(lines(f.decide("seat:1", "stand"), f.cards("TC>dealer", "7D>dealer")))
    live_done = ledger.find_round("bj-5", 1)
    fresh = open_app(store_url)
    try:
        assert round_state(fresh.find_round("bj-5", 1)) == round_state(live_done)
        assert round_state(fresh.get_round(live.id, version=live.version)) == round_state(live)
    finally:
        fresh.close()

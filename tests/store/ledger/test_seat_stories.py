"""Seats and boxes that span rounds, told as stories through the application (issue 11
item 3), on SQLite and PostgreSQL: live-8d v2 seats held, lost after a round with no
action, re-taken after the wait; spielbank box holders alone decide. Every story's
rounds replay (`ledger audit replay`'s recompute) with no finding."""
from __future__ import annotations

from typing import Any

from ledger.eventlog import EventLog
from ledger.records import TableSeatingChanged
from ops.cli.commands.audit import replay_all
from tests.support.feed import Feed, lines
from tests.support.seating import replay_seating

LIVE = "blackjack/live-8d"
SPIELBANK = "blackjack/spielbank"


def statuses(results: list[Any]) -> list[tuple[str, str | None]]:
    return [(r.status, r.code) for r in results]


def seat_round(f: Feed, round_no: int, seats: dict[str, str], *, sources: dict[str, str] | None = None,
               behind: tuple[tuple[str, str, str], ...] = (), version: int = 2,
               tried: tuple[tuple[str, str, str], ...] = ()) -> list[Any]:
    """A live-8d round: `seats` spot -> player (main 1000 each, in seat order); each seat
    holds T+9 = 19 and stands, by the player unless `sources[spot]` says otherwise
    (`timeout`: the no-action rule stands on 19); dealer 6, T, 7 busts. `tried` bets
    (bet id, player, spot) are sent before the seats' bets (the stories expect them refused)."""
    sources = sources or {}
    f.at(round_no)
    spots = sorted(seats, key=lambda s: int(s.split(":")[1]))
    cmds: list[Any] = [f.open(LIVE, shoe_id=f"S{round_no}", version=version)]
    cmds += [f.bet(b, p, s, "main", 1000) for b, p, s in tried]
    cmds += [f.bet(f"r{round_no}-{s}", seats[s], s, "main", 1000) for s in spots]
    cmds += [f.bet(b, p, s, "main", 500) for b, p, s in behind]
    cmds.append(f.close())
    suits = "SHDC"
    cmds += [f.card(f"T{suits[i % 4]}", s) for i, s in enumerate(spots)]
    cmds.append(f.card("6H", "dealer"))
    cmds += [f.card(f"9{suits[i % 4]}", s) for i, s in enumerate(spots)]
    for s in spots:
        source = sources.get(s, "player")
        cmds.append(f.decide(s, "stand" if source == "player" else "auto", source))
    cmds += f.cards("TC>dealer", "7D>dealer")
    return cmds


def ingest(ledger: Any, *cmds: Any) -> list[Any]:
    return ledger.ingest(lines(*cmds))


def held(ledger: Any, table: str) -> dict[str, str]:
    t = ledger.get_table(table)
    return {} if t is None else {h.spot: h.player_id for h in t.seating.held}


def replays_clean(ledger: Any) -> None:
    """Every round replays to the same money, and the rounds replay to the same seats."""
    summary = replay_all(EventLog(ledger))
    assert summary["findings"] == []
    seats = replay_seating(EventLog(ledger).records())
    assert seats.findings == []


def test_a_seat_is_held_across_rounds_one_seat_per_player_no_bet_behind(ledger):
    f = Feed("bj-s1")
    r1 = ingest(ledger, seat_round(f, 1, {"seat:1": "p1", "seat:2": "p3"}))
    assert all(r.status == "accepted" for r in r1), statuses(r1)
    assert r1[-1].events == ("CardDealt", "Settled", "Shoe.CardsRecorded", "Table.SeatingChanged")
    assert held(ledger, "bj-s1") == {"seat:1": "p1", "seat:2": "p3"}
    f.at(2)
    r2 = ingest(
        ledger,
        f.open(LIVE, shoe_id="S2", version=2),
        f.bet("x1", "p2", "seat:1", "main", 1000),  # p1 holds seat:1
        f.bet("x2", "p1", "seat:4", "main", 1000),  # p1 already sits at seat:1
        f.bet("ok1", "p1", "seat:1", "main", 1000),
        f.bet("ok2", "p3", "seat:2", "main", 1000),
        f.bet("x3", "p1", "behind:2", "main", 500),  # a seated player cannot bet behind
    )
    assert statuses(r2) == [("accepted", None), ("refused", "seat_held"), ("refused", "player_already_seated"),
                            ("accepted", None), ("accepted", None), ("refused", "seated_player_behind")]
    assert "held by player p1 (seated since round 1)" in r2[1].message
    replays_clean(ledger)


def test_a_round_with_no_action_loses_the_seat_until_the_wait_is_over(ledger):
    f = Feed("bj-s2")
    r1 = ingest(ledger, seat_round(f, 1, {"seat:1": "p1", "seat:2": "p2"}, sources={"seat:1": "timeout"}))
    assert all(r.status == "accepted" for r in r1), statuses(r1)
    assert held(ledger, "bj-s2") == {"seat:2": "p2"}  # p1 took no action: seat:1 is free
    # Round 2: p1 may not take seat:1 back yet, but may bet behind; another player takes seat:3.
    r2 = ingest(ledger, seat_round(f, 2, {"seat:2": "p2", "seat:3": "p4"}, behind=(("bb", "p1", "behind:2"),),
                                   tried=(("x1", "p1", "seat:1"),)))
    assert statuses(r2)[1] == ("refused", "seat_lost")
    assert "lost seat:1 after taking no action in round 1; they may take it again from round 3" in r2[1].message
    assert all(r.status == "accepted" for r in r2[2:]), statuses(r2)
    # Round 3: the wait is over, seat:1 is still free: p1 re-seats with a main bet.
    r3 = ingest(ledger, seat_round(f, 3, {"seat:1": "p1", "seat:2": "p2", "seat:3": "p4"}))
    assert all(r.status == "accepted" for r in r3), statuses(r3)
    assert held(ledger, "bj-s2") == {"seat:1": "p1", "seat:2": "p2", "seat:3": "p4"}
    replays_clean(ledger)


def test_a_freed_seat_goes_to_another_player_and_a_pause_is_no_action(ledger):
    f = Feed("bj-s3")
    ingest(ledger, seat_round(f, 1, {"seat:1": "p1"}))
    # Round 2: p1 bets but disconnects; the pause completes the hand (source system): no action.
    f.at(2)
    r2 = ingest(ledger, f.open(LIVE, shoe_id="S2", version=2), f.bet("m", "p1", "seat:1", "main", 1000), f.close(),
                f.cards("TS>seat:1", "6H>dealer", "9D>seat:1"), f.pause("player_connection_lost", player_id="p1"),
                f.cards("TC>dealer", "7D>dealer"))
    assert all(r.status == "accepted" for r in r2), statuses(r2)
    assert held(ledger, "bj-s3") == {}
    r3 = ingest(ledger, seat_round(f, 3, {"seat:1": "p2"}))  # free for another player at once
    assert all(r.status == "accepted" for r in r3), statuses(r3)
    assert held(ledger, "bj-s3") == {"seat:1": "p2"}
    replays_clean(ledger)


def test_sitting_out_a_round_loses_the_seat_afterwards(ledger):
    f = Feed("bj-s4")
    ingest(ledger, seat_round(f, 1, {"seat:1": "p1"}))
    r2 = ingest(ledger, seat_round(f, 2, {"seat:2": "p2"}, tried=(("x", "p3", "seat:1"),)))
    assert statuses(r2)[1] == ("refused", "seat_held")  # p1 still holds seat:1 during round 2
    assert held(ledger, "bj-s4") == {"seat:2": "p2"}  # ... and loses it afterwards: no bet, no action
    r3 = ingest(ledger, seat_round(f, 3, {"seat:1": "p3", "seat:2": "p2"}))
    assert all(r.status == "accepted" for r in r3), statuses(r3)


def test_a_voided_round_moves_no_seat(ledger):
    f = Feed("bj-s5")
    ingest(ledger, seat_round(f, 1, {"seat:1": "p1"}))
    f.at(2)
    r2 = ingest(ledger, f.open(LIVE, shoe_id="S2", version=2), f.bet("m", "p2", "seat:2", "main", 1000),
                f.void("host_interruption"))
    assert r2[-1].events == ("Voided", "Shoe.Retired")  # no card dealt; no Table event
    assert held(ledger, "bj-s5") == {"seat:1": "p1"}  # p1 sat out a void round: kept; p2 never seated
    replays_clean(ledger)


def test_version_1_feeds_keep_seating_round_by_round(ledger):
    f = Feed("bj-s6")
    ingest(ledger, seat_round(f, 1, {"seat:1": "p1"}, version=1, sources={"seat:1": "timeout"}))
    r2 = ingest(ledger, seat_round(f, 2, {"seat:1": "p2", "seat:3": "p1"}, version=1))
    assert all(r.status == "accepted" for r in r2), statuses(r2)
    assert all(not e.startswith("Table.") for r in r2 for e in r.events)
    assert ledger.get_table("bj-s6") is None  # no Table aggregate: nothing spans rounds under v1


def test_only_the_seated_player_decides_when_the_feed_names_who(ledger):
    f = Feed("bj-s7")
    r = ingest(ledger, f.open(LIVE, shoe_id="S1", version=2), f.bet("m", "p1", "seat:1", "main", 1000),
               f.bet("bb", "p2", "behind:1", "main", 500), f.close(),
               f.cards("TS>seat:1", "6H>dealer", "9D>seat:1"),
               f.decide("seat:1", "hit", player_id="p2"),  # the bet-behind player has no say
               f.decide("seat:1", "stand", player_id="p1"))
    assert statuses(r)[-2:] == [("refused", "not_box_holder"), ("accepted", None)]
    assert "only the seated player p1 decides; p2 may only follow" in r[-2].message


def spielbank_box(f: Feed, *, decide_as: str | None) -> list[Any]:
    """Box 2 staked by p1 (own seat 3) and p2 (own seat 1): nobody sits at seat 2, so the
    holder is the staker with the next lower seat number, p2."""
    extra = {} if decide_as is None else {"player_id": decide_as}
    return [
        f.open(SPIELBANK, shoe_id=f"S{f.round_no}"),
        f.bet("a", "p1", "box:2", "main", 1000, seat_no=3),
        f.bet("b", "p2", "box:2", "main", 1000, seat_no=1),
        f.close(),
        *f.cards("TS>box:2", "6H>dealer", "9D>box:2"),
        f.decide("box:2", "stand", **extra),
    ]


def test_only_the_box_holder_decides_next_lower_seat_rule(ledger):
    f = Feed("bj-sb1")
    r = ingest(ledger, spielbank_box(f, decide_as="p1"))
    assert statuses(r) == [("accepted", None)] * 7 + [("refused", "not_box_holder")]
    assert "box:2: only the box holder p2 decides; p1 may only follow a split or double" == r[-1].message
    r = ingest(ledger, f.decide("box:2", "stand", player_id="p2"), f.cards("TC>dealer", "7D>dealer"))
    assert all(x.status == "accepted" for x in r), statuses(r)
    assert ledger.find_round("bj-sb1", 1).phase == "settled"
    replays_clean(ledger)


def test_a_decision_without_player_id_is_taken_as_the_holders(ledger):
    f = Feed("bj-sb2")
    r = ingest(ledger, spielbank_box(f, decide_as=None), f.cards("TC>dealer", "7D>dealer"))
    assert all(x.status == "accepted" for x in r), statuses(r)
    assert ledger.find_round("bj-sb2", 1).phase == "settled"


def test_the_other_players_on_a_box_insure_their_own_stake_v2(ledger):
    f = Feed("bj-sb3")
    r = ingest(
        ledger,
        f.open(SPIELBANK, shoe_id="S1", version=2),
        f.bet("h", "p1", "box:1", "main", 1000, seat_no=1),
        f.bet("o", "p2", "box:1", "main", 2000, seat_no=2),
        f.close(),
        *f.cards("TS>box:1", "AH>dealer", "9D>box:1"),
        f.follow("o", "insurance", True),  # p2 insures their own stake
        f.decide("box:1", "no_insurance", player_id="p2"),  # only the holder answers for the box
        f.decide("box:1", "no_insurance", player_id="p1"),
        f.decide("box:1", "stand", player_id="p1"),
        f.card("KD", "dealer"),  # dealer blackjack
    )
    assert statuses(r)[8] == ("refused", "not_box_holder")
    assert all(x.status == "accepted" for i, x in enumerate(r) if i != 8), statuses(r)
    rnd = ledger.find_round("bj-sb3", 1)
    settled = rnd.settlements[-1]["results"]
    line = next(x for x in settled if x["bet_id"] == "o:insurance")
    assert (line["player_id"], line["staked_minor"], line["returned_minor"]) == ("p2", 1000, 3000)
    replays_clean(ledger)


def test_version_1_keeps_insurance_for_the_holder_only(ledger):
    f = Feed("bj-sb4")
    r = ingest(
        ledger,
        f.open(SPIELBANK, shoe_id="S1"),
        f.bet("h", "p1", "box:1", "main", 1000, seat_no=1),
        f.bet("o", "p2", "box:1", "main", 2000, seat_no=2),
        f.close(),
        *f.cards("TS>box:1", "AH>dealer", "9D>box:1"),
        f.follow("o", "insurance", True),
    )
    assert statuses(r)[-1] == ("refused", "no_follow_offer")


def test_a_tampered_stored_seating_is_a_finding(ledger):
    from tests.store.projections.test_audit_store import Store

    f = Feed("bj-s9")
    ingest(ledger, seat_round(f, 1, {"seat:1": "p1"}), seat_round(f, 2, {"seat:1": "p1"}, sources={"seat:1": "timeout"}))
    replay = replay_seating(EventLog(ledger).records())
    assert (replay.tables, replay.changes, replay.findings) == (1, 2, [])
    changed = [r for r in EventLog(ledger).records() if isinstance(r, TableSeatingChanged)]
    assert len(changed) == 2

    def give_the_seat_back(state: dict) -> None:
        state["seating"]["held"] = [["seat:1", "p1", 1]]
        state["seating"]["lost"] = []

    Store(ledger).edit_state(changed[1].position, give_the_seat_back)
    findings = replay_seating(EventLog(ledger).records()).findings
    assert [(x.kind, x.position) for x in findings] == [("seating_differs", changed[1].position)]


def test_seats_live_in_the_configured_tables_aggregate_too(ledger):
    f = Feed("bj-s10")
    configure = {"type": "configure_table", "command_id": "cfg-1", "table_id": "bj-s10",
                 "studio_time": "2024-05-01T11:00:00+00:00", "game": "blackjack", "ruleset_id": LIVE,
                 "ruleset_version": 2, "currency": "EUR", "spots_count": 5}
    r0 = ingest(ledger, configure)
    assert r0[0].status == "accepted", statuses(r0)
    r1 = ingest(ledger, seat_round(f, 1, {"seat:1": "p1"}, sources={"seat:1": "timeout"}))
    assert all(r.status == "accepted" for r in r1), statuses(r1)
    r2 = ingest(ledger, seat_round(f, 2, {"seat:2": "p2"}, tried=(("x", "p1", "seat:1"), ("y", "p3", "seat:6"))))
    assert [s for s in statuses(r2) if s[0] == "refused"] == [("refused", "seat_lost"), ("refused", "unknown_spot")]
    table = ledger.get_table("bj-s10")
    assert table.current is not None and table.current.config_version == 1  # the configuration stays
    assert {h.spot: h.player_id for h in table.seating.held} == {"seat:2": "p2"}
    replays_clean(ledger)

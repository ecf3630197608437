"""`LedgerApp.ingest` overlaps batches: batch N+1 is checked while N is written.

These tests pin what that must never change: a retry of a command still in
flight is a duplicate (or a conflict), a conflict on the batch in flight redoes
the batch checked on top of it, a failed write loses nothing and leaves no
half-applied state in the cache, and results arrive in feed order as batches
commit. On SQLite and PostgreSQL.
"""
from __future__ import annotations

import json
import time

import pytest

from ledger.app import LedgerApp, UnitOfWork
from tests.ledger.feed import Feed, lines, teen_patti_round


def flat_round(f: Feed) -> list[dict]:
    return [json.loads(line) for line in lines(*teen_patti_round(f))]


def test_retry_of_a_command_in_flight_is_a_duplicate(ledger, monkeypatch):
    # A slow writer: batch 2 is surely checked before batch 1 commits. The retry must be
    # answered from batch 1's decisions, not discovered later as a key clash that sends
    # batch 2 down the conflict path (rerun command by command).
    original = UnitOfWork.record
    monkeypatch.setattr(UnitOfWork, "record", lambda unit, event: (time.sleep(0.2), original(unit, event))[1])
    reruns: list[object] = []
    original_run = LedgerApp.run_batch
    monkeypatch.setattr(LedgerApp, "run_batch", lambda app, raws: reruns.append(raws) or original_run(app, raws))
    f = Feed("P")
    open_, bet = f.open("teen-patti/20-20"), f.bet("b1", "p1", "table", "player_a", 100)
    changed = dict(bet, stake_minor=200)
    feed = lines(open_, bet, bet, changed)  # batch 1: open, bet | batch 2: the same bet again, then altered
    results = ledger.ingest(feed, batch_size=2)
    assert [(r.status, r.code) for r in results] == [
        ("accepted", None), ("accepted", None), ("duplicate", None), ("refused", "command_id_conflict"),
    ]
    assert ledger.find_round("P", 1).bets["b1"].stake_minor == 100
    assert reruns == []


def test_progress_is_reported_per_batch_in_feed_order(ledger):
    f = Feed("Q")
    cmds = flat_round(f)
    seen: list[list[str]] = []
    results = ledger.ingest(lines(*cmds), batch_size=3, on_batch=lambda rs: seen.append([r.command_id for r in rs]))
    assert [len(batch) for batch in seen[:-1]] == [3] * (len(seen) - 1)
    assert [cid for batch in seen for cid in batch] == [c["command_id"] for c in cmds]
    assert [r.command_id for r in results] == [c["command_id"] for c in cmds]
    assert all(r.status == "accepted" for r in results)
    assert ledger.find_round("Q", 1).phase == "settled"


def test_conflict_on_the_batch_in_flight_redoes_the_batch_on_top(open_ledger, monkeypatch):
    a, b = open_ledger(), open_ledger()
    f = Feed("R")
    a.ingest(lines(f.open("teen-patti/20-20")))
    b.find_round("R", 1)  # b has the round cached: it will not see a's next bet
    original = UnitOfWork.record
    raced: list[object] = []

    def racing_record(unit, event):  # type: ignore[no-untyped-def]
        if unit.app is b and not raced:  # a writes between b's check of batch 1 and its commit
            raced.append(a.ingest(lines(f.bet("ra", "pa", "table", "tie", 100)))[0])
        return original(unit, event)

    monkeypatch.setattr(UnitOfWork, "record", racing_record)
    feed = lines(
        f.bet("b1", "p1", "table", "player_a", 100), f.bet("b2", "p2", "table", "player_b", 100),  # batch 1
        f.bet("b3", "p3", "table", "player_a", 100), f.bet("b3", "p3", "table", "player_b", 100),  # batch 2
    )
    results = b.ingest(feed, batch_size=2)
    assert raced and raced[0].status == "accepted"
    assert [(r.status, r.code) for r in results] == [
        ("accepted", None), ("accepted", None), ("accepted", None), ("refused", "duplicate_bet_id"),
    ]
    bets = b.find_round("R", 1).bets
    assert set(bets) == {"ra", "b1", "b2", "b3"} and bets["b3"].bet_type == "player_a"
    again = open_ledger()  # what the store holds, not what b's cache says
    assert set(again.find_round("R", 1).bets) == {"ra", "b1", "b2", "b3"}


def test_a_batch_checked_on_top_of_a_lost_write_is_checked_again(open_ledger, monkeypatch):
    # b's bet b1 loses the race against a's close_betting. The bet b2, checked on top of
    # b1 while b1 was in flight, saw betting still open: it must be checked again and be
    # refused, not written after the close just because its version number is free.
    a, b = open_ledger(), open_ledger()
    f = Feed("U")
    a.ingest(lines(f.open("teen-patti/20-20")))
    b.find_round("U", 1)
    original = UnitOfWork.record
    raced: list[object] = []

    def racing_record(unit, event):  # type: ignore[no-untyped-def]
        if unit.app is b and not raced:
            raced.append(a.ingest(lines(f.close()))[0])
        return original(unit, event)

    monkeypatch.setattr(UnitOfWork, "record", racing_record)
    results = b.ingest(lines(f.bet("b1", "p1", "table", "player_a", 100), f.bet("b2", "p2", "table", "player_b", 100)),
                       batch_size=1)
    assert raced[0].status == "accepted"
    assert [(r.status, r.code) for r in results] == [("conflict", "concurrency_conflict"), ("refused", "betting_closed")]
    assert open_ledger().find_round("U", 1).bets == {}


def test_a_failed_write_loses_nothing_and_leaves_no_cached_state(ledger, monkeypatch):
    s_, t_ = Feed("S"), Feed("T")
    feed = lines(
        s_.open("teen-patti/20-20"), s_.bet("s1", "p1", "table", "player_a", 100),  # batch 1: lands
        s_.bet("s2", "p2", "table", "player_b", 100), s_.bet("s3", "p3", "table", "tie", 100),  # batch 2: write fails
        t_.open("teen-patti/20-20"), t_.bet("t1", "p1", "table", "player_a", 100),  # batch 3: checked on top
    )
    original = UnitOfWork.record
    calls: list[int] = []

    def failing_record(unit, event):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return original(unit, event)

    monkeypatch.setattr(UnitOfWork, "record", failing_record)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ledger.ingest(feed, batch_size=2)
    monkeypatch.setattr(UnitOfWork, "record", original)
    assert set(ledger.find_round("S", 1).bets) == {"s1"}  # batch 1 landed, nothing after it
    retried = ledger.ingest(feed, batch_size=2)  # the sender retries the whole feed
    assert [(r.status, r.code) for r in retried] == [("duplicate", None)] * 2 + [("accepted", None)] * 4
    assert set(ledger.find_round("S", 1).bets) == {"s1", "s2", "s3"}
    assert set(ledger.find_round("T", 1).bets) == {"t1"}

"""`LedgerApp.ingest` in batches: a retry in a later batch is a duplicate (or a
conflict), progress is reported per batch in feed order, and a failed write loses
nothing and leaves no half-applied state in the cache. On SQLite and PostgreSQL."""
from __future__ import annotations

import gc
import json

import pytest

from tests.support.feed import Feed, lines, teen_patti_round


def flat_round(f: Feed) -> list[dict]:
    return [json.loads(line) for line in lines(*teen_patti_round(f))]


def test_retry_in_a_later_batch_is_a_duplicate_and_an_altered_retry_a_conflict(ledger):
    f = Feed("P")
    open_, bet = f.open("teen-patti/20-20"), f.bet("b1", "p1", "table", "player_a", 100)
    changed = dict(bet, stake_minor=200)
    feed = lines(open_, bet, bet, changed)  # batch 1: open, bet | batch 2: the same bet again, then altered
    results = ledger.ingest(feed, batch_size=2)
    assert [(r.status, r.code) for r in results] == [
        ("accepted", None), ("accepted", None), ("duplicate", None), ("refused", "command_id_conflict"),
    ]
    assert ledger.find_round("P", 1).bets["b1"].stake_minor == 100


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


def test_a_failed_write_loses_nothing_and_leaves_no_cached_state(ledger, monkeypatch):
    s_, t_ = Feed("S"), Feed("T")
    feed = lines(
        s_.open("teen-patti/20-20"), s_.bet("s1", "p1", "table", "player_a", 100),  # batch 1: lands
        s_.bet("s2", "p2", "table", "player_b", 100), s_.bet("s3", "p3", "table", "tie", 100),  # batch 2: write fails
        t_.open("teen-patti/20-20"), t_.bet("t1", "p1", "table", "player_a", 100),  # batch 3: never reached
    )
    recorder_class = type(ledger.recorder)
    original = recorder_class.insert_events
    calls: list[int] = []

    def failing_insert(recorder, stored_events, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return original(recorder, stored_events, **kwargs)

    monkeypatch.setattr(recorder_class, "insert_events", failing_insert)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ledger.ingest(feed, batch_size=2)
    monkeypatch.setattr(recorder_class, "insert_events", original)
    assert set(ledger.find_round("S", 1).bets) == {"s1"}  # batch 1 landed, nothing after it
    retried = ledger.ingest(feed, batch_size=2)  # the sender retries the whole feed
    assert [(r.status, r.code) for r in retried] == [("duplicate", None)] * 2 + [("accepted", None)] * 4
    assert set(ledger.find_round("S", 1).bets) == {"s1", "s2", "s3"}
    assert set(ledger.find_round("T", 1).bets) == {"t1"}


def test_ingest_hands_every_object_back_to_the_collector(ledger, monkeypatch):
    """`ingest` freezes what survives each batch (fewer collector passes) and always unfreezes."""
    f = Feed("G")
    assert gc.get_freeze_count() == 0
    ledger.ingest(lines(*teen_patti_round(f)), batch_size=2)
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(type(ledger.recorder), "insert_events", lambda *a, **k: (_ for _ in ()).throw(OSError("full")))
    with pytest.raises(OSError):
        ledger.ingest(lines(*teen_patti_round(Feed("H"))), batch_size=2)
    assert gc.get_freeze_count() == 0


def test_ingest_leaves_a_callers_frozen_objects_frozen(ledger):
    mine = [["a tracked object of the caller's"]]
    gc.freeze()  # as a server does before forking workers
    try:
        ledger.ingest(lines(*teen_patti_round(Feed("F"))), batch_size=2)
        assert gc.get_freeze_count() > 0
        assert not any(o is mine for o in gc.get_objects())  # still frozen (in no generation)
    finally:
        gc.unfreeze()
    assert any(o is mine for o in gc.get_objects())


def test_a_command_the_store_cannot_hold_is_refused_alone_and_the_batch_lands(ledger, monkeypatch):
    """The last resort behind the parser's checks: a value the database refuses (DataError,
    a >64-bit int, an unencodable string) costs its own command only, refused and logged."""
    from eventsourcing.persistence import DataError

    good, bad = Feed("GOOD"), Feed("POISON")
    feed = lines(good.open("teen-patti/20-20"), bad.open("teen-patti/20-20"),
                 good.bet("g1", "p1", "table", "player_a", 100))
    recorder_class = type(ledger.recorder)
    original = recorder_class.insert_events

    def refusing_insert(recorder, stored_events, **kwargs):  # type: ignore[no-untyped-def]
        if any(b'"POISON"' in e.state for e in stored_events):
            raise DataError("value out of range")
        return original(recorder, stored_events, **kwargs)

    monkeypatch.setattr(recorder_class, "insert_events", refusing_insert)
    results = ledger.ingest(feed, batch_size=10)
    assert [(r.status, r.code) for r in results] == [("accepted", None), ("refused", "bad_command"),
                                                     ("accepted", None)]
    assert "cannot hold" in results[1].message and results[1].command_id == "POISON/1/1"
    assert set(ledger.find_round("GOOD", 1).bets) == {"g1"}
    (logged,) = ledger.rejections()
    assert (logged["code"], logged["table_id"]) == ("bad_command", "POISON")


def test_only_live_rounds_stay_cached_and_a_late_command_reads_the_store(ledger):
    done, live = Feed("DONE"), Feed("LIVE")
    ledger.ingest(lines(*teen_patti_round(done), live.open("teen-patti/20-20")))
    cached = set(ledger.repository.cache.cache)
    assert ledger.find_round("LIVE", 1).id in cached
    from ledger.ids import round_id_for

    assert round_id_for("DONE", 1) not in cached  # settled: memory does not grow with finished rounds
    late = ledger.handle(lines(done.void())[0])
    assert (late.status, late.code) == ("refused", "round_settled")


def _statements(ledger, monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The recorder reads and writes a batch makes, by name."""
    seen: list[str] = []
    recorder_class = type(ledger.recorder)
    for name in ("lookup", "insert_events"):
        original = getattr(recorder_class, name)

        def counted(recorder, *args, _name=name, _original=original, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(_name)
            return _original(recorder, *args, **kwargs)

        monkeypatch.setattr(recorder_class, name, counted)
    return seen


def test_assume_new_skips_the_lookup_and_a_retry_still_gets_its_first_answer(ledger, monkeypatch):
    """The live writer's `assume_new`: a batch of new commands on cached rounds is written
    with no lookup; a batch holding a retry (stored before, or repeated in the batch) fails
    that first write and is run again the usual way: the same results as without it."""
    f = Feed("N")
    open_, bet, bet2 = f.open("teen-patti/20-20"), f.bet("b1", "p1", "table", "player_a", 100), \
        f.bet("b2", "p2", "table", "player_b", 100)
    changed = dict(bet, stake_minor=200)
    assert [r.status for r in ledger.run_batch(lines(open_), assume_new=True)] == ["accepted"]
    seen = _statements(ledger, monkeypatch)
    assert [r.status for r in ledger.run_batch(lines(bet), assume_new=True)] == ["accepted"]
    assert seen == ["insert_events"]  # the round is cached: no lookup
    seen.clear()
    results = ledger.run_batch(lines(bet2, bet, changed, bet2), assume_new=True)
    assert [(r.status, r.code) for r in results] == [
        ("accepted", None), ("duplicate", None), ("refused", "command_id_conflict"), ("duplicate", None)]
    assert seen == ["insert_events", "lookup", "insert_events"]  # the first write failed whole
    round_ = ledger.find_round("N", 1)
    assert round_.bets["b1"].stake_minor == 100 and round_.bets["b2"].stake_minor == 100
    assert {r["command_id"] for r in ledger.rejections()} == {changed["command_id"]}  # logged once



def test_assume_new_takes_what_is_not_cached_as_new_and_what_was_stored_after_all_gets_the_usual_answer(
        ledger, monkeypatch):
    """The live writer's `assume_new` and the aggregates a batch names that are not cached: a
    round being opened, its shoe, a table never configured are taken as new without a lookup;
    one stored after all (uncached as after a restart or an eviction) fails the write whole on
    its version read at 0, and the batch runs again the usual way: the answers a lookup would
    have given, nothing written twice."""
    from ledger.ids import round_id_for

    f = Feed("O")
    seen = _statements(ledger, monkeypatch)
    assert [r.status for r in ledger.run_batch(lines(f.open("teen-patti/20-20")), assume_new=True)] == ["accepted"]
    assert [r.status for r in ledger.run_batch(lines(f.at(2).open("teen-patti/20-20")), assume_new=True)] == [
        "accepted"]
    assert seen == ["insert_events", "insert_events"]  # new rounds, a new shoe, an unconfigured table: no lookup
    again = dict(f.at(2).open("teen-patti/20-20"), command_id="O/2/again")  # opening a stored round
    ledger.repository.cache.get(round_id_for("O", 2), evict=True)
    expected = ledger.run_batch(lines(again))  # the usual way (a refusal, kept in the log)
    assert (expected[0].status, expected[0].code) == ("refused", "round_exists")
    ledger.repository.cache.get(round_id_for("O", 2), evict=True)
    seen.clear()
    results = ledger.run_batch(lines(dict(again, command_id="O/2/again2")), assume_new=True)
    assert [(r.status, r.code) for r in results] == [("refused", "round_exists")]  # the usual answer
    assert seen == ["insert_events", "lookup", "insert_events"]  # the first write failed whole (round 2 read at 0)
    ledger.forget_cached()  # a restart: round 2 is open in the store, nothing is cached
    seen.clear()
    bet = f.at(2).bet("b1", "p1", "table", "player_a", 100)
    assert [r.status for r in ledger.run_batch(lines(bet), assume_new=True)] == ["accepted"]
    assert seen == ["insert_events", "lookup", "insert_events"]
    assert ledger.find_round("O", 2).bets["b1"].stake_minor == 100
    assert [r["command_id"] for r in ledger.rejections()] == ["O/2/again", "O/2/again2"]  # each logged once

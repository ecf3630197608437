"""Every ledger refusal code, idempotency, tombstones, the rejections log and concurrent writers."""
from __future__ import annotations

import json
from collections import Counter

import pytest

from domain.cards import parse_card
from ledger.commands import parse_command
from ledger.library.aggregate import Stamp
from tests.support.feed import Feed, baccarat_round, lines, teen_patti_round


def one(app, cmd):  # type: ignore[no-untyped-def]
    return app.handle(lines(cmd)[0])


def opened_tp(ledger, table="T"):  # type: ignore[no-untyped-def]
    f = Feed(table)
    ledger.ingest(lines(*teen_patti_round(f)[:5]))  # open, three bets, close
    f.seq.clear()  # the unsent cards of the ready-made round counted seq_nos
    return f


@pytest.mark.parametrize(
    "code, build",
    [
        ("round_not_open", lambda led, f: f.at(9).close()),
        ("round_exists", lambda led, f: f.open("teen-patti/20-20")),
        ("duplicate_bet_id", None),
        ("card_out_of_sequence", lambda led, f: f.card("KS", "A", seq_no=4)),
        ("round_not_paused", lambda led, f: f.resume()),
        ("round_not_settled", lambda led, f: f.reverse()),
        ("unknown_rule_set", lambda led, f: f.at(2).open("poker/none")),
    ],
)
def test_refusal_codes(ledger, code, build):
    f = opened_tp(ledger)
    if code == "duplicate_bet_id":
        f2 = Feed("T2")
        ledger.ingest(lines(f2.open("teen-patti/20-20"), f2.bet("x", "p", "table", "player_a", 100)))
        cmd = f2.bet("x", "p", "table", "player_b", 100)
    else:
        cmd = build(ledger, f)
    result = one(ledger, cmd)
    assert (result.status, result.code) == ("refused", code), result
    assert result.message
    log = ledger.rejections()
    assert log[-1]["code"] == code and log[-1]["command_id"] == cmd["command_id"]
    assert json.loads(log[-1]["payload"])["command_id"] == cmd["command_id"]


def test_refused_command_changes_no_aggregate(ledger):
    f = opened_tp(ledger)
    before = ledger.find_round("T", 1).version
    result = one(ledger, f.card("KS", "B"))  # first card must go to A: a human error -> flagged pause
    assert (result.status, result.code, result.events) == ("refused", "wrong_target", ("Paused",))
    rnd = ledger.find_round("T", 1)
    assert rnd.version == before + 1 and rnd.cards == [] and rnd.paused["flag_code"] == "wrong_target"
    # other commands wait; the correct card resumes the round
    assert one(ledger, f.pause("other")).code == "round_paused"
    fixed = one(ledger, f.card("KS", "A", seq_no=1))
    assert fixed.status == "accepted" and fixed.events == ("Resumed", "CardDealt")


def test_flagged_round_voided_by_supervisor(ledger):
    f = opened_tp(ledger)
    one(ledger, f.card("KS", "B"))
    again = one(ledger, f.card("QS", "B", seq_no=1))  # still wrong: refused, no second pause
    assert (again.code, again.events) == ("wrong_target", ())
    assert one(ledger, f.void("human_error")).events == ("Voided",)
    later = one(ledger, f.card("KS", "A", seq_no=1))
    assert later.code == "round_voided"


def test_round_settled_and_paused_refusals(ledger):
    f = Feed("T3")
    ledger.ingest(lines(*teen_patti_round(f)))
    assert one(ledger, f.void()).code == "round_settled"
    assert one(ledger, f.bet("late", "p", "table", "player_a", 100)).code == "round_settled"
    f4 = opened_tp(ledger, "T4")
    one(ledger, f4.pause("system_error"))
    assert one(ledger, f4.bet("y", "p", "table", "player_a", 100)).code == "round_paused"


def test_impossible_card_counts_the_shoe_across_rounds(ledger):
    f = Feed("B1")
    ledger.ingest(lines(*baccarat_round(f)[:4]))
    rnd = ledger.find_round("B1", 1)
    cmd = parse_command(json.dumps(f.card("KS", "burn", seq_no=1)))
    stamp = Stamp(cmd.command_id, cmd.studio_time.isoformat())
    refusal = rnd.deal_card(parse_card("KS"), "burn", 1, Counter({"KS": 8}), stamp)  # eight kings of spades already out
    assert refusal is not None and refusal.code == "impossible_card"
    assert rnd.paused["flag_code"] == "impossible_card" and rnd.cards == []


def test_shoe_game_mismatch(ledger):
    f = Feed("B2")
    ledger.ingest(lines(*baccarat_round(f)))
    result = one(ledger, f.at(2).open("teen-patti/20-20", shoe_id="S1"))
    assert result.code == "shoe_game_mismatch"


def test_bad_command_names_the_field(ledger):
    bad = Feed("W").bet("b", "p", "table", "player_a", 100)
    bad["stake_minor"] = "100"
    result = ledger.handle(json.dumps(bad).encode())
    assert (result.status, result.code) == ("refused", "bad_command")
    assert "stake_minor" in result.message
    not_json = ledger.handle(b"{not json")
    assert not_json.code == "bad_command" and "JSON" in not_json.message
    log = ledger.rejections()
    assert [r["code"] for r in log[-2:]] == ["bad_command", "bad_command"]
    assert log[-2]["command_id"] == bad["command_id"] and log[-1]["payload"] == "{not json"


def test_idempotency_duplicate_and_command_id_conflict(ledger):
    f = Feed("I")
    open_cmd = f.open("teen-patti/20-20")
    first = one(ledger, open_cmd)
    again = one(ledger, open_cmd)
    assert again.status == "duplicate" and again.original_status == "accepted" and again.events == ()
    assert ledger.find_round("I", 1).version == 1
    changed = dict(open_cmd, dealer_id="D2")
    clash = one(ledger, changed)
    assert (clash.status, clash.code) == ("refused", "command_id_conflict")
    # unique across the store, not per round: the same id on another round clashes too
    other = dict(Feed("J").open("teen-patti/20-20"), command_id=open_cmd["command_id"])
    assert one(ledger, other).code == "command_id_conflict"
    # a duplicate inside one batch
    bet = f.bet("b1", "p", "table", "player_a", 100)
    results = ledger.ingest(lines(bet, bet))
    assert [r.status for r in results] == ["accepted", "duplicate"]
    assert first.round_id == again.round_id


def test_refused_command_retried_gets_its_original_refusal(ledger):
    f = Feed("K")
    cmd = f.close()
    assert one(ledger, cmd).code == "round_not_open"
    retry = one(ledger, cmd)
    assert (retry.status, retry.code, retry.original_status) == ("duplicate", "round_not_open", "refused")
    assert len(ledger.rejections()) == 1  # the retry recorded nothing


def test_tombstone_void_before_open(ledger):
    f = Feed("V")
    void = one(ledger, f.void("host_interruption"))
    assert void.status == "accepted" and void.events == ("Voided",)
    late = one(ledger, f.open("teen-patti/20-20"))
    assert (late.status, late.code) == ("refused", "round_voided")
    assert late.message == "round V#1 was voided before it opened"  # TABLE#NO, not the round's UUID
    assert one(ledger, f.bet("b", "p", "table", "player_a", 100)).code == "round_voided"
    ledger.forget_cached()  # read again from the store: named the same
    assert one(ledger, f.bet("b2", "p", "table", "player_a", 100)).message == "round V#1 is voided"
    assert one(ledger, f.void()).code == "round_voided"
    events = list(ledger.repository.event_store.get(ledger.find_round("V", 1).id))
    assert [type(e).__name__ for e in events] == ["Voided"] and events[0].refunds == []


def test_two_writers_one_wins_other_conflicts_then_retries(open_ledger, monkeypatch):
    a, b = open_ledger(), open_ledger()
    f = Feed("C")
    one(a, f.open("teen-patti/20-20"))
    bet_a = f.bet("ba", "pa", "table", "player_a", 100)
    bet_b = f.bet("bb", "pb", "table", "player_b", 100)
    b.find_round("C", 1)  # b has the round cached
    recorder_class = type(b.recorder)
    original_insert = recorder_class.insert_events
    raced = []

    def racing_insert(recorder, stored_events, **kwargs):  # type: ignore[no-untyped-def]
        if recorder is b.recorder and not raced:
            raced.append(one(a, bet_a))  # a commits between b's check and b's write
        return original_insert(recorder, stored_events, **kwargs)

    monkeypatch.setattr(recorder_class, "insert_events", racing_insert)
    lost = one(b, bet_b)
    assert raced[0].status == "accepted"
    assert (lost.status, lost.code) == ("conflict", "concurrency_conflict")
    assert "ba" in a.find_round("C", 1).bets and "bb" not in a.find_round("C", 1).bets
    retry = one(b, bet_b)
    assert retry.status == "accepted"
    assert set(b.find_round("C", 1).bets) >= {"ba", "bb"}


def test_batch_conflict_falls_back_to_single_commands(open_ledger, monkeypatch):
    a, b = open_ledger(), open_ledger()
    f = Feed("D")
    one(a, f.open("teen-patti/20-20"))
    raced = []
    recorder_class = type(b.recorder)
    original_insert = recorder_class.insert_events

    def racing_insert(recorder, stored_events, **kwargs):  # type: ignore[no-untyped-def]
        if recorder is b.recorder and not raced:
            raced.append(one(a, f.bet("ba", "pa", "table", "player_a", 100)))
        return original_insert(recorder, stored_events, **kwargs)

    monkeypatch.setattr(recorder_class, "insert_events", racing_insert)
    results = b.ingest(lines(f.bet("b1", "p1", "table", "player_b", 100), f.bet("b2", "p2", "table", "tie", 100)))
    assert [r.status for r in results] == ["accepted", "accepted"]
    assert set(a.find_round("D", 1).bets) >= {"ba", "b1", "b2"}

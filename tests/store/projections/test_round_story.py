"""What is in force in a corrected round (projections/round_story.py), as the replay
document carries it (projections/document.py: `ledger replay --json`, the dispute page,
the bundle): each settlement in force or reversed, refunds beside their bets, each player's
final net equal to the money the round moved on the player's account, the phase after a
void, and a tombstone's fields."""
from __future__ import annotations

from typing import Any

import pytest

from domain.money import player_account
from ledger.eventlog import EventLog
from ledger.records import postings_of
from ledger.store import open_app
from projections.audit_store import parse_round_ref
from projections.document import round_document
from tests.support.dispute_rounds import RESETTLED, REVERSED_VOIDED, TOMBSTONE, ingest_corrections


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> EventLog:
    url = f"sqlite:///{tmp_path_factory.mktemp('story') / 'ledger.db'}"
    app = open_app(url)
    ingest_corrections(app)
    app.close()
    return EventLog.open(url)


def doc(log: EventLog, ref: str) -> dict[str, Any]:
    d = round_document(log, parse_round_ref(ref), ref=ref)
    assert d is not None
    return d


def moved(log: EventLog, ref: str) -> dict[str, int]:
    """Money moved on each player's account by the round's events (the postings themselves)."""
    out: dict[str, int] = {}
    for e in log.round_records(parse_round_ref(ref)):
        for account, amount in postings_of(e):
            if account.startswith(player_account("")):
                out[account.removeprefix(player_account(""))] = out.get(account.removeprefix(player_account("")), 0) + amount
    return out


def test_reversed_then_voided_round_has_no_result_in_force(log: EventLog) -> None:
    d = doc(log, REVERSED_VOIDED)
    assert d["status"] == "voided" and d["phase"] == "voided" and d["in_force"] == "void"
    [s] = d["settlements"]
    assert s["status"] == "reversed"
    assert s["reversal"]["by"] == "supervisor-1" and s["reversal"]["reason"] == "wrong card keyed"
    assert s["reversal"]["then"] == "voided" and s["reversal"]["command_id"] and s["reversal"]["server_time"]
    assert {r["status"] for r in d["results"]} == {"reversed"}  # alice's recorded win is not the result
    alice = next(b for b in d["bets"] if b["bet_id"] == "tp-a")
    assert alice["in_force"]["how"] == "refunded" and alice["in_force"]["amount_minor"] == 1000
    assert alice["reversed"] == [{"settlement_no": 1, "outcome": "win", "staked_minor": 1000, "returned_minor": 1950,
                                  "by": "supervisor-1", "reason": "wrong card keyed"}]
    assert alice["net_minor"] == 0
    assert d["headline"]["in_force"] is False and d["headline"]["winner"] is None
    assert d["headline"]["text"].startswith("VOIDED after settlement 1 was reversed")
    assert "A: Pair of kings, kicker 2 (pair)" in d["headline"]["hands"]  # the Teen Patti rank
    assert d["outcome"]["winner"] == "A"  # what the cards said, kept apart from what is in force


def test_voided_phase_on_the_last_steps(log: EventLog) -> None:
    d = doc(log, REVERSED_VOIDED)
    phases = [(s["event"], s["state"]["phase"]) for s in d["steps"][-3:]]
    assert phases == [("Settled", "complete"), ("SettlementReversed", "reversed"), ("Voided", "voided")]


def test_reversed_then_resettled_round_names_the_settlement_in_force(log: EventLog) -> None:
    d = doc(log, RESETTLED)
    assert d["status"] == "settled" and d["in_force"] == "settlement 2"
    assert [(s["settlement_no"], s["status"]) for s in d["settlements"]] == [(1, "reversed"), (2, "in_force")]
    assert d["settlements"][0]["reversal"]["then"] == "settled again (settlement 2)"
    assert [(r["settlement_no"], r["status"]) for r in d["results"]] == [
        (1, "reversed"), (1, "reversed"), (2, "in_force"), (2, "in_force")]
    assert d["headline"]["in_force"] is True and d["headline"]["winner"] == "player"
    assert d["headline"]["text"] == "Player wins 8–5 (settlement 2 in force after settlement 1 was reversed)"
    assert "player: Natural 8, win" in d["headline"]["hands"]


@pytest.mark.parametrize("ref", [REVERSED_VOIDED, RESETTLED, TOMBSTONE])
def test_final_net_per_player_is_the_money_moved(log: EventLog, ref: str) -> None:
    d = doc(log, ref)
    assert {p["player_id"]: p["net_minor"] for p in d["players"]} == moved(log, ref)
    assert sum(p["net_minor"] for p in d["players"]) == sum(moved(log, ref).values())
    assert all(p["agrees"] for p in d["players"])
    for p in d["players"]:  # the parts add up: in-force returns and refunds less what was put in
        assert p["net_minor"] == p["returned_minor"] + p["refunded_minor"] - p["put_in_minor"]


def test_resettled_final_net_counts_only_the_settlement_in_force(log: EventLog) -> None:
    d = doc(log, RESETTLED)
    assert {p["player_id"]: p["net_minor"] for p in d["players"]} == {"alice": 1000, "bob": -2000}


def test_tombstone_document_names_table_round_cause_who_and_when(log: EventLog) -> None:
    d = doc(log, TOMBSTONE)
    assert d["round"] == TOMBSTONE and d["table_id"] == "dispute-tomb" and d["round_no"] == 7
    t = d["tombstone"]
    assert (t["table_id"], t["round_no"], t["cause"], t["by"]) == ("dispute-tomb", 7, "system_error", "supervisor-1")
    assert t["studio_time"] == "2024-05-01T12:00:01+00:00" and t["server_time"] and t["command_id"]
    assert d["status"] == "voided" and d["phase"] == "voided"
    assert d["steps"][0]["state"] == {"phase": "voided"}
    assert d["headline"]["text"].startswith("VOIDED before it opened: system_error by supervisor-1")
    # Asked by its UUID, nothing names the table: the document says so rather than guessing.
    by_uuid = round_document(log, parse_round_ref(TOMBSTONE))
    assert by_uuid is not None and by_uuid["tombstone"]["table_id"] is None and by_uuid["round"] is None


def test_each_correction_says_what_it_changed(log: EventLog) -> None:
    resettled = doc(log, RESETTLED)["settlements"][0]["reversal"]  # settlement 2 is settlement 1 again
    assert resettled["changes"] == []
    assert resettled["changed"].startswith("changed nothing: settlement 2 settles every bet as settlement 1 did")
    voided = doc(log, REVERSED_VOIDED)["settlements"][0]["reversal"]
    assert [(c["bet_id"], c["before"]["returned_minor"], c["after"]) for c in voided["changes"]] == [
        ("tp-a", 1950, {"how": "refunded", "player_id": "alice", "amount_minor": 1000}),
        ("tp-b", 0, {"how": "refunded", "player_id": "bob", "amount_minor": 500}),
        ("tp-t", 0, {"how": "refunded", "player_id": "bob", "amount_minor": 100})]

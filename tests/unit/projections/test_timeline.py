"""The round timelines (view `timeline`): stored as compact facts, expanded at
query time to exactly the entries recall showed before; folded a page at a
time with the same result as event by event; JSON text as json.dumps wrote it."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.records import Opened, fields_of, short_name
from projections.folding import MemoryRows, _dump, iso
from projections.recall import TIMELINE_VIEW, expand_timeline, fold_timelines
from tests.support.synthetic import RoundScript, number, random_history
from tests.unit.projections.test_folds import fold_all

# The entry recall stored per event before timelines became compact facts
# (copied here as the reference: the expanded timeline must equal it).
_OLD_FIELDS = {
    "Opened": ("table_id", "round_no", "game", "ruleset_id", "ruleset_version", "shoe_id", "dealer_id"),
    "BetPlaced": ("bet_id", "player_id", "bet_type", "spot", "stake_minor", "mode"),
    "BettingClosed": (),
    "CardDealt": ("seq_no", "card", "target"),
    "DecisionTaken": ("hand", "action", "source", "amount_minor", "stake_moves"),
    "FollowDecided": ("bet_id", "kind", "accept", "stake_moves"),
    "Paused": ("cause", "by", "note", "flag_code"),
    "Resumed": ("by", "note"),
    "Voided": ("cause", "by", "note"),
    "Settled": ("settlement_no", "ruleset_id", "ruleset_version"),
    "SettlementReversed": ("settlement_no", "by", "reason"),
}


def old_timelines(events) -> dict[str, list[dict[str, Any]]]:
    opened: set[str] = set()
    out: dict[str, list[dict[str, Any]]] = {}
    for ev in events:
        name, fields = short_name(ev), fields_of(ev)  # the stored form, as the old entries read it
        if isinstance(ev, Opened):
            opened.add(ev.originator_id)
        if ev.originator_id not in opened or name not in _OLD_FIELDS:
            continue  # tombstone void: no timeline
        entry = {"version": ev.originator_version, "event": name, "at": iso(ev.timestamp)}
        entry.update((k, fields.get(k)) for k in _OLD_FIELDS[name])
        out.setdefault(ev.originator_id, []).append(entry)
    return out


def timelines(rows: MemoryRows) -> dict[str, list[dict[str, Any]]]:
    return {r["round_id"]: expand_timeline(r["timeline"]) for r in rows.rows("proj_recall_rounds")}


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_expanded_timeline_equals_the_old_entries(seed: int) -> None:
    events = random_history(seed)
    expected = old_timelines(events)
    assert expected  # the history has rounds with timelines
    assert timelines(fold_all(events)) == expected


def test_timeline_status_follows_the_round_and_a_tombstone_has_none() -> None:
    s = RoundScript("t1", 1).open().bet("b1", "alice", 100).pause().resume().void()
    t = RoundScript("t1", 2).tombstone()
    rows = fold_all(number(s.events + t.events))
    (row,) = rows.rows("proj_recall_rounds")
    assert (row["round_id"], row["status"]) == (s.id, "voided")
    assert [e["event"] for e in expand_timeline(row["timeline"])] == [
        "Opened", "BetPlaced", "Paused", "Resumed", "Voided"]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), chunk=st.integers(1, 200))
def test_a_page_at_a_time_equals_event_by_event(seed: int, chunk: int) -> None:
    events = [e for e in random_history(seed) if type(e) in TIMELINE_VIEW.handles]
    one_by_one = MemoryRows(TIMELINE_VIEW.tables)
    for ev in events:
        TIMELINE_VIEW.fold(one_by_one, ev)
    paged = MemoryRows(TIMELINE_VIEW.tables)
    for i in range(0, len(events), chunk):
        fold_timelines(paged, events[i:i + chunk])
        paged.seal()
    assert paged.rows("proj_recall_rounds") == one_by_one.rows("proj_recall_rounds")


def test_a_page_fold_never_mutates_the_rows_of_an_earlier_page() -> None:
    s = RoundScript("t1", 1).open().bet("b1", "alice", 100)
    rows = MemoryRows(TIMELINE_VIEW.tables)
    fold_timelines(rows, number(s.events))
    rows.seal()
    (before,) = rows.rows("proj_recall_rounds")
    kept = json.dumps(before)
    s.close().card("AS", "seat:1")
    fold_timelines(rows, number(s.events)[2:])
    assert json.dumps(before) == kept
    (after,) = rows.rows("proj_recall_rounds")
    assert len(after["timeline"]) == 4


@pytest.mark.parametrize("value", [
    [], [{"bet_id": "b1", "explanation": "Banker wins 7–1 → 0.95"}], {"player:a": 100},
    [[1, "CardDealt", "2024-03-01T23:00:00+00:00", 3, "AS", "seat:1"]], [None, True, 1.5], "x",
    # where orjson's bytes (the fast path) would differ or it refuses: the json encoder writes them
    ["del\x7f", 'a "quoted" note\\', "tab\tand\x1f"], {1: "int key"}, [2**70, -(2**64)], {"note": "caf\u00e9 \U0001f600"},
])
def test_json_columns_are_written_as_json_dumps_writes_them(value: Any) -> None:
    assert _dump(value) == json.dumps(value, separators=(",", ":"))
    assert _dump(None) is None
    with pytest.raises(TypeError):
        _dump([object()])

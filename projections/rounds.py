"""View `rounds`: one row per round with its facts and where it stands.

The other views read a round's table, game and currency from here (the
Opened facts never change), so it folds every event first.

status: open | paused | settled | reversed (settlement reversed, awaiting
void or resettlement) | voided. A void that arrived before the round opened
(tombstone) gives a row with NULL table and game.
"""
from __future__ import annotations

from typing import Any

from projections.reader import RecordedEvent
from projections.sql import Table
from projections.state import Change, Put, Rows, View, iso

ROUNDS = Table(
    "proj_rounds",
    key=("round_id",),
    columns=(
        ("round_id", "text"), ("table_id", "text"), ("round_no", "int"), ("game", "text"),
        ("ruleset_id", "text"), ("ruleset_version", "int"), ("currency", "text"), ("shoe_id", "text"),
        ("dealer_id", "text"), ("status", "text"), ("settlement_no", "int"), ("opened_at", "text"),
        ("closed_at", "text"), ("opened_position", "int"),
    ),
    indexes=(("table_id", "round_no"),),
)

_STATUS_BY_EVENT = {
    "Round.Paused": "paused",
    "Round.Resumed": "open",
    "Round.Voided": "voided",
    "Round.Settled": "settled",
    "Round.SettlementReversed": "reversed",
}


def round_row(rows: Rows, round_id: str) -> dict[str, Any] | None:
    """The round's facts, for the other views (None if never seen)."""
    return rows.get(ROUNDS.name, (round_id,))


def fold(rows: Rows, ev: RecordedEvent) -> list[Change]:
    f = ev.fields
    if ev.name == "Round.Opened":
        return [Put(ROUNDS.name, {
            "round_id": ev.originator_id, "table_id": f["table_id"], "round_no": f["round_no"],
            "game": f["game"], "ruleset_id": f["ruleset_id"], "ruleset_version": f["ruleset_version"],
            "currency": f["currency"], "shoe_id": f["shoe_id"], "dealer_id": f["dealer_id"],
            "status": "open", "settlement_no": 0, "opened_at": iso(ev.timestamp), "closed_at": None,
            "opened_position": ev.position,
        })]
    row = round_row(rows, ev.originator_id)
    if row is None:  # tombstone void: the round never opened
        row = {c: None for c in ROUNDS.column_names} | {"round_id": ev.originator_id, "settlement_no": 0}
    row = dict(row, status=_STATUS_BY_EVENT[ev.name])
    if ev.name in ("Round.Voided", "Round.Settled"):
        row["closed_at"] = iso(ev.timestamp)
    if ev.name == "Round.Settled":
        row["settlement_no"] = f["settlement_no"]
    if ev.name == "Round.SettlementReversed":
        row["closed_at"] = None
    return [Put(ROUNDS.name, row)]


VIEW = View(
    name="rounds",
    version=1,
    tables=(ROUNDS,),
    handles=frozenset({"Round.Opened", *_STATUS_BY_EVENT}),
    fold=fold,
)

"""View `rounds`: one row per round with its facts and where it stands.

The other views read a round's table, game and currency from here (the
Opened facts never change), so it folds every event first.

status: open | paused | settled | reversed (settlement reversed, awaiting
void or resettlement) | voided. A void that arrived before the round opened
(tombstone) gives a row with NULL table and game.
"""
from __future__ import annotations

from typing import Any

from ledger.records import Opened, Paused, Record, Resumed, Settled, SettlementReversed, Voided
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

_STATUS_BY_EVENT: dict[type, str] = {
    Paused: "paused",
    Resumed: "open",
    Voided: "voided",
    Settled: "settled",
    SettlementReversed: "reversed",
}


def round_row(rows: Rows, round_id: str) -> dict[str, Any] | None:
    """The round's facts, for the other views (None if never seen)."""
    return rows.get(ROUNDS.name, (round_id,))


def fold(rows: Rows, ev: Record) -> list[Change]:
    if isinstance(ev, Opened):
        return [Put(ROUNDS.name, {
            "round_id": ev.aggregate_id, "table_id": ev.table_id, "round_no": ev.round_no,
            "game": ev.game, "ruleset_id": ev.ruleset_id, "ruleset_version": ev.ruleset_version,
            "currency": ev.currency, "shoe_id": ev.shoe_id, "dealer_id": ev.dealer_id,
            "status": "open", "settlement_no": 0, "opened_at": iso(ev.server_time), "closed_at": None,
            "opened_position": ev.position,
        })]
    row = round_row(rows, ev.aggregate_id)
    if row is None:  # tombstone void: the round never opened
        row = {c: None for c in ROUNDS.column_names} | {"round_id": ev.aggregate_id, "settlement_no": 0}
    row = dict(row, status=_STATUS_BY_EVENT[type(ev)])
    match ev:
        case Voided():
            row["closed_at"] = iso(ev.server_time)
        case Settled():
            row["closed_at"] = iso(ev.server_time)
            row["settlement_no"] = ev.settlement_no
        case SettlementReversed():
            row["closed_at"] = None
    return [Put(ROUNDS.name, row)]


VIEW = View(
    name="rounds",
    version=1,
    tables=(ROUNDS,),
    handles=frozenset({Opened, *_STATUS_BY_EVENT}),
    fold=fold,
)

"""View `refunds`: one row per refund line of every void.

A void refunds every amount put into the round (docs/events.md: `Voided.refunds`
is a list of `{bet_id, player_id, amount_minor}`). A row says which round,
table and game, why (cause), who voided it, when (server time and its UTC
day) and what went back to whom. Totals by cause and day are a GROUP BY over
this table (`refund_totals`).
"""
from __future__ import annotations

from typing import Any

from ledger.records import Record, Voided
from projections.rounds import round_row
from projections.sql import Db, Table
from projections.state import Change, Put, Rows, View, day_of, iso

REFUNDS = Table(
    "proj_refunds",
    key=("position", "line_no"),
    columns=(
        ("position", "int"), ("line_no", "int"), ("round_id", "text"), ("table_id", "text"),
        ("round_no", "int"), ("game", "text"), ("currency", "text"), ("bet_id", "text"),
        ("player_id", "text"), ("amount_minor", "int"), ("cause", "text"), ("voided_by", "text"),
        ("note", "text"), ("voided_at", "text"), ("day", "text"),
    ),
    indexes=(("day",), ("player_id",), ("round_id",)),
)


def fold(rows: Rows, ev: Record) -> list[Change]:
    if not isinstance(ev, Voided):
        return []
    info = round_row(rows, ev.aggregate_id) or {}
    common = {
        "position": ev.position, "round_id": ev.aggregate_id, "table_id": info.get("table_id"),
        "round_no": info.get("round_no"), "game": info.get("game"), "currency": info.get("currency"),
        "cause": ev.cause, "voided_by": ev.by, "note": ev.note or "",
        "voided_at": iso(ev.server_time), "day": day_of(ev.server_time),
    }
    return [
        Put(REFUNDS.name, common | {"line_no": i, "bet_id": r.bet_id, "player_id": r.player_id,
                                    "amount_minor": r.amount_minor})
        for i, r in enumerate(ev.refunds)
    ]


def refund_lines(db: Db, day_from: str | None = None, day_to: str | None = None) -> list[dict[str, Any]]:
    where, params = _between(day_from, day_to)
    cols = REFUNDS.column_names
    found = db.query(f"SELECT {', '.join(cols)} FROM {REFUNDS.name}{where} ORDER BY position, line_no", params)
    return [dict(zip(cols, r)) for r in found]


def refund_totals(db: Db, day_from: str | None = None, day_to: str | None = None) -> list[dict[str, Any]]:
    """Count and amount per day, cause and currency."""
    where, params = _between(day_from, day_to)
    found = db.query(
        f"SELECT day, cause, currency, COUNT(*), SUM(amount_minor) FROM {REFUNDS.name}{where} "
        "GROUP BY day, cause, currency ORDER BY day, cause, currency", params)
    return [{"day": d, "cause": c, "currency": cur, "refunds": int(n), "amount_minor": int(a)}
            for d, c, cur, n, a in found]


def _between(day_from: str | None, day_to: str | None) -> tuple[str, list[str]]:
    clauses, params = [], []
    if day_from:
        clauses.append("day >= ?")
        params.append(day_from)
    if day_to:
        clauses.append("day <= ?")
        params.append(day_to)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


VIEW = View(
    name="refunds",
    version=1,
    tables=(REFUNDS,),
    handles=frozenset({Voided}),
    fold=fold,
    reads=("rounds",),
)

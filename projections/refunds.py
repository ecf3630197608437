"""View `refunds`: one row per refund line of every void.

A void refunds every amount put into the round (docs/events.md: `Voided.refunds`
is a list of `{bet_id, player_id, amount_minor}`). A row says which round,
table and game, why (cause), who voided it, when (server time, and the studio
time as a UTC instant, `studio_at`) and what went back to whom. Days are gaming
days: the studio time's day in the studio's zone, chosen when asked (UTC by
default); totals by cause and day are summed per asked zone (`refund_totals`).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any

from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.records import Record, Voided
from projections.folding import (
    Rows,
    View,
    Zones,
    as_zones,
    day_bounds,
    gaming_day,
    iso,
    studio_utc_text,
)
from projections.operators import key_clause
from projections.rounds import round_row
from projections.sql import Db, Table, columns_of


@dataclass(frozen=True)
class RefundRow:
    """A row of `proj_refunds` (the table's columns are its fields); `queries.refunds` answers
    each with its gaming day (`RefundLine`, projections/queries.py)."""

    position: int
    line_no: int
    round_id: str
    table_id: str | None
    round_no: int | None
    game: str | None
    currency: str
    bet_id: str
    player_id: str
    amount_minor: int
    cause: str
    voided_by: str
    note: str | None
    voided_at: str
    studio_at: str
    timezone: str | None


REFUNDS = Table("proj_refunds", key=("position", "line_no"), columns=columns_of(RefundRow),
                indexes=(("studio_at",), ("player_id",), ("round_id",)))


def fold(rows: Rows, ev: Record) -> None:
    if not isinstance(ev, Voided):
        return
    info = round_row(rows, ev.originator_id) or {}
    common = {
        "position": ev.position, "round_id": ev.originator_id, "table_id": info.get("table_id"),
        "round_no": info.get("round_no"), "game": info.get("game"), "currency": info.get("currency"),
        "cause": ev.cause, "voided_by": ev.by, "note": ev.note or "",
        "voided_at": iso(ev.timestamp), "studio_at": studio_utc_text(ev.studio_time, ev.timestamp),
        "timezone": info.get("timezone"),
    }
    for i, r in enumerate(ev.refunds):
        rows.put(REFUNDS.name, common | {"line_no": i, "bet_id": r.bet_id, "player_id": r.player_id,
                                         "amount_minor": r.amount_minor})


def refund_lines(db: Db, day_from: str | None = None, day_to: str | None = None,
                 zone: tzinfo | Zones = UTC, scope: OperatorScope = EVERY_OPERATOR) -> list[dict[str, Any]]:
    """Every refund line of the gaming days asked for, each with its `day` in `zone`
    (or its table's own zone); of the scope's operators' players only."""
    zones = as_zones(zone)
    where, params = _between(day_from, day_to, zones, scope)
    cols = REFUNDS.column_names
    found = db.query(f"SELECT {', '.join(cols)} FROM {REFUNDS.name}{where} ORDER BY position, line_no", params)
    rows = (row | {"day": gaming_day(row["studio_at"], zones.of(row["timezone"]))}
            for row in (dict(zip(cols, r)) for r in found))
    return [row for row in rows if _within(row["day"], day_from, day_to)]


def refund_totals(db: Db, day_from: str | None = None, day_to: str | None = None,
                  zone: tzinfo | Zones = UTC, scope: OperatorScope = EVERY_OPERATOR) -> list[dict[str, Any]]:
    """Count and amount per gaming day (in `zone`, or each table's own zone), cause and currency."""
    zones = as_zones(zone)
    where, params = _between(day_from, day_to, zones, scope)
    found = db.query(
        f"SELECT studio_at, timezone, cause, currency, COUNT(*), SUM(amount_minor) FROM {REFUNDS.name}{where} "
        "GROUP BY studio_at, timezone, cause, currency", params)
    totals: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for at, timezone, cause, currency, n, amount in found:
        day = gaming_day(at, zones.of(timezone))
        if not _within(day, day_from, day_to):
            continue
        t = totals[(day, cause, currency)]
        t[0] += int(n)
        t[1] += int(amount)
    return [{"day": d, "cause": c, "currency": cur, "refunds": n, "amount_minor": a}
            for (d, c, cur), (n, a) in sorted(totals.items())]


def _within(day: str, day_from: str | None, day_to: str | None) -> bool:
    return (day_from is None or day >= day_from) and (day_to is None or day <= day_to)


def _between(day_from: str | None, day_to: str | None, zones: Zones,
             scope: OperatorScope = EVERY_OPERATOR) -> tuple[str, list[str]]:
    """The studio-time bounds of the days asked for, a day wider on each side: a round at a
    configured table has its table's zone (every zone is within a day of the fallback's
    day); the exact days are then kept per row by `_within`. And the scope's players."""
    low, high = day_bounds(day_from, day_to, zones.fallback, margin_days=1)
    clause, params = key_clause("player_id", scope)
    clauses = [clause] if clause else []
    if low:
        clauses.append("studio_at >= ?")
        params.append(low)
    if high:
        clauses.append("studio_at < ?")
        params.append(high)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


VIEW = View(
    name="refunds",
    version=3,  # 2: studio time kept, days are gaming days of the asked zone; 3: timezone of the round's table
    tables=(REFUNDS,),
    handles=frozenset({Voided}),
    fold=fold,
    reads=("rounds",),
)

"""View `ggr`: gross gaming revenue per table, game, UTC day and currency.

Everything is booked on the day of the event that closes (or reopens) a
round, never back-dated (corrections are new records):
- a settlement adds its lines' `staked_minor` and `returned_minor` (paid)
  and its rounding remainders (kept by the house, exact fraction);
- a void adds the refunded amounts to both staked and refunded (GGR 0);
- a settlement reversal subtracts what that settlement added.

ggr_minor = staked - paid - refunded, which per table equals the change of
the `house:<table>` account. `rounding_kept` is TEXT `n/d` (sum with
fractions.Fraction). `proj_ggr_settlements` keeps each settlement's figures
so a reversal can subtract them exactly.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from domain.errors import require
from projections.reader import RecordedEvent
from projections.rounds import round_row
from projections.sql import Db, Table
from projections.state import Change, Put, Rows, View, day_of, fraction_text, parse_fraction

GGR = Table(
    "proj_ggr",
    key=("table_id", "game", "day", "currency"),
    columns=(
        ("table_id", "text"), ("game", "text"), ("day", "text"), ("currency", "text"),
        ("rounds_closed", "int"), ("staked_minor", "int"), ("paid_minor", "int"), ("refunded_minor", "int"),
        ("ggr_minor", "int"), ("rounding_kept", "text"),
    ),
)
SETTLEMENTS = Table(
    "proj_ggr_settlements",
    key=("round_id", "settlement_no"),
    columns=(
        ("round_id", "text"), ("settlement_no", "int"), ("table_id", "text"), ("game", "text"),
        ("currency", "text"), ("day", "text"), ("staked_minor", "int"), ("paid_minor", "int"),
        ("rounding_kept", "text"), ("reversed_day", "text"),
    ),
)


def _add(rows: Rows, info: dict[str, Any], day: str, *, rounds: int, staked: int, paid: int,
         refunded: int, kept: Fraction) -> Put:
    key = (info["table_id"], info["game"], day, info["currency"])
    old = rows.get(GGR.name, key) or {"rounds_closed": 0, "staked_minor": 0, "paid_minor": 0,
                                      "refunded_minor": 0, "ggr_minor": 0, "rounding_kept": "0/1"}
    return Put(GGR.name, {
        "table_id": key[0], "game": key[1], "day": day, "currency": key[3],
        "rounds_closed": old["rounds_closed"] + rounds,
        "staked_minor": old["staked_minor"] + staked,
        "paid_minor": old["paid_minor"] + paid,
        "refunded_minor": old["refunded_minor"] + refunded,
        "ggr_minor": old["ggr_minor"] + staked - paid - refunded,
        "rounding_kept": fraction_text(parse_fraction(old["rounding_kept"]) + kept) if kept else old["rounding_kept"],
    })


def fold(rows: Rows, ev: RecordedEvent) -> list[Change]:
    info = round_row(rows, ev.originator_id)
    if info is None or info["table_id"] is None:  # tombstone void: no money, no table
        return []
    f, day = ev.fields, day_of(ev.timestamp)
    if ev.name == "Round.Settled":
        results = f["results"]
        staked = sum(r["staked_minor"] for r in results)
        paid = sum(r["returned_minor"] for r in results)
        kept = sum((Fraction(r["remainder_num"], r["remainder_den"]) for r in results if r["remainder_num"]),
                   Fraction(0))
        settlement = {"round_id": ev.originator_id, "settlement_no": f["settlement_no"],
                      "table_id": info["table_id"], "game": info["game"], "currency": info["currency"],
                      "day": day, "staked_minor": staked, "paid_minor": paid,
                      "rounding_kept": fraction_text(kept), "reversed_day": None}
        return [Put(SETTLEMENTS.name, settlement),
                _add(rows, info, day, rounds=1, staked=staked, paid=paid, refunded=0, kept=kept)]
    if ev.name == "Round.SettlementReversed":
        old = rows.get(SETTLEMENTS.name, (ev.originator_id, f["settlement_no"]))
        require(old is not None and old["reversed_day"] is None,
                f"reversal of unknown or already reversed settlement {f['settlement_no']} of {ev.originator_id}")
        return [Put(SETTLEMENTS.name, dict(old, reversed_day=day)),
                _add(rows, info, day, rounds=-1, staked=-old["staked_minor"], paid=-old["paid_minor"],
                     refunded=0, kept=-parse_fraction(old["rounding_kept"]))]
    refunded = sum(r["amount_minor"] for r in f.get("refunds") or [])  # Round.Voided
    return [_add(rows, info, day, rounds=1, staked=refunded, paid=0, refunded=refunded, kept=Fraction(0))]


def ggr_rows(db: Db) -> list[dict[str, Any]]:
    cols = GGR.column_names
    found = db.query(f"SELECT {', '.join(cols)} FROM {GGR.name} ORDER BY day, table_id, game, currency")
    return [dict(zip(cols, r)) for r in found]


VIEW = View(
    name="ggr",
    version=1,
    tables=(GGR, SETTLEMENTS),
    handles=frozenset({"Round.Settled", "Round.SettlementReversed", "Round.Voided"}),
    fold=fold,
    reads=("rounds",),
)

"""View `ggr`: gross gaming revenue per table, game, gaming day and currency.

Everything is booked at the studio time of the event that closes (or reopens)
a round, never back-dated (corrections are new records). The view keeps the
figures per UTC quarter hour of that time (`period`); `ggr_rows` sums them
into gaming days of the studio's zone, asked at query time (UTC by default),
or of the `timezone` of the table configuration the round opened under (kept
per row: a table whose zone changes keeps each round's days where they were):
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

from collections import defaultdict
from dataclasses import dataclass, fields
from datetime import UTC, tzinfo
from fractions import Fraction
from typing import Any

from domain.errors import InvariantBroken
from domain.operators import EVERY_OPERATOR, OperatorScope, operator_of
from ledger.records import Record, Settled, SettlementLine, SettlementReversed, Voided
from projections.folding import (
    Rows,
    View,
    Zones,
    as_zones,
    fraction_text,
    gaming_day,
    kept_sum,
    parse_fraction,
    plus_fraction_text,
    studio_quarter_hour,
)
from projections.operators import zones_for
from projections.rounds import round_row
from projections.sql import Db, Table, columns_of


@dataclass(frozen=True)
class GgrPlace:
    """Where a row of `proj_ggr` books: table, game, UTC quarter hour (`period`), currency and the
    table configuration's time zone ('' at an unconfigured table)."""

    table_id: str
    game: str
    period: str
    currency: str
    timezone: str


@dataclass(frozen=True)
class GgrSums:
    """The figures a row of `proj_ggr` adds up, and a day of `queries.ggr` answers summed
    (`GgrRow`, projections/queries.py)."""

    rounds_closed: int
    staked_minor: int
    paid_minor: int
    refunded_minor: int
    ggr_minor: int


@dataclass(frozen=True)
class GgrStored(GgrSums, GgrPlace):
    """A row of `proj_ggr` (the table's columns are its fields: the place, the sums, then
    `rounding_kept` as stored, TEXT `n/d`; answered as an `ExactMinor`, `ExactMinor.of_text`)."""

    rounding_kept: str


@dataclass(frozen=True)
class OperatorGgrStored(GgrStored):
    """A row of `proj_ggr_operators`: a `proj_ggr` row's share of one operator's players
    (`rounds_closed`: the rounds in which the operator had a stake). The operators' rows of
    a table, period and currency add up to its `proj_ggr` row's money exactly."""

    operator_id: str


GGR = Table("proj_ggr", key=("table_id", "game", "period", "currency", "timezone"), columns=columns_of(GgrStored))
OPERATOR_GGR = Table("proj_ggr_operators", key=("operator_id", "table_id", "game", "period", "currency", "timezone"),
                     columns=columns_of(OperatorGgrStored))
SETTLEMENTS = Table(
    "proj_ggr_settlements",
    key=("round_id", "settlement_no"),
    columns=(
        ("round_id", "text"), ("settlement_no", "int"), ("table_id", "text"), ("game", "text"),
        ("currency", "text"), ("period", "text"), ("staked_minor", "int"), ("paid_minor", "int"),
        ("rounding_kept", "text"), ("reversed_period", "text"),
        ("operators", "json"),  # operator id -> [staked, paid, rounding kept n/d]: a reversal subtracts each
    ),
)


def _add(rows: Rows, info: dict[str, Any], period: str, *, rounds: int, staked: int, paid: int,
         refunded: int, kept: Fraction, operator_id: str | None = None) -> None:
    key: tuple[str, ...] = (info["table_id"], info["game"], period, info["currency"], info["timezone"] or "")
    table = GGR.name
    if operator_id is not None:
        key, table = (operator_id, *key), OPERATOR_GGR.name
    row = rows.edit(table, key)
    if row is None:
        row = {"table_id": info["table_id"], "game": info["game"], "period": period, "currency": info["currency"],
               "timezone": info["timezone"] or "", "rounds_closed": 0, "staked_minor": 0, "paid_minor": 0,
               "refunded_minor": 0, "ggr_minor": 0, "rounding_kept": "0/1"}
        if operator_id is not None:
            row["operator_id"] = operator_id
        rows.put(table, row)
    row["rounds_closed"] += rounds
    row["staked_minor"] += staked
    row["paid_minor"] += paid
    row["refunded_minor"] += refunded
    row["ggr_minor"] += staked - paid - refunded
    if kept:
        row["rounding_kept"] = plus_fraction_text(row["rounding_kept"], kept)


def fold(rows: Rows, ev: Record) -> None:
    info = round_row(rows, ev.originator_id)
    if info is None or info["table_id"] is None:  # tombstone void: no money, no table
        return
    period = studio_quarter_hour(ev.studio_time, ev.timestamp)  # summed into days when asked
    match ev:
        case Settled():
            _settled(rows, info, period, ev)
        case SettlementReversed():
            _reversed(rows, info, period, ev)
        case Voided():
            refunded = sum(r.amount_minor for r in ev.refunds)
            _add(rows, info, period, rounds=1, staked=refunded, paid=0, refunded=refunded, kept=Fraction(0))
            by_operator: dict[str, int] = {}
            for r in ev.refunds:
                by_operator[operator_of(r.player_id)] = by_operator.get(operator_of(r.player_id), 0) + r.amount_minor
            for operator_id, amount in by_operator.items():
                _add(rows, info, period, rounds=1, staked=amount, paid=0, refunded=amount, kept=Fraction(0),
                     operator_id=operator_id)


def _settled(rows: Rows, info: dict[str, Any], period: str, ev: Settled) -> None:
    results = ev.results
    staked = sum(r.staked_minor for r in results)
    paid = sum(r.returned_minor for r in results)
    kept = kept_sum(results)
    by_operator: dict[str, list[SettlementLine]] = {}
    for line in results:
        by_operator.setdefault(operator_of(line.player_id), []).append(line)
    # lists, as the stored JSON reads back (a fold's rows equal the stored rows)
    shares: dict[str, list[Any]] = {
        o: [sum(r.staked_minor for r in lines), sum(r.returned_minor for r in lines), fraction_text(kept_sum(lines))]
        for o, lines in by_operator.items()}
    rows.put(SETTLEMENTS.name, {"round_id": ev.originator_id, "settlement_no": ev.settlement_no,
                                "table_id": info["table_id"], "game": info["game"], "currency": info["currency"],
                                "period": period, "staked_minor": staked, "paid_minor": paid,
                                "rounding_kept": fraction_text(kept), "reversed_period": None, "operators": shares})
    _add(rows, info, period, rounds=1, staked=staked, paid=paid, refunded=0, kept=kept)
    for operator_id, (o_staked, o_paid, o_kept) in shares.items():
        _add(rows, info, period, rounds=1, staked=o_staked, paid=o_paid, refunded=0, kept=parse_fraction(o_kept),
             operator_id=operator_id)


def _reversed(rows: Rows, info: dict[str, Any], period: str, ev: SettlementReversed) -> None:
    old = rows.edit(SETTLEMENTS.name, (ev.originator_id, ev.settlement_no))
    if old is None or old["reversed_period"] is not None:
        raise InvariantBroken(f"reversal of unknown or already reversed settlement {ev.settlement_no} "
                              f"of {ev.originator_id}")
    old["reversed_period"] = period
    _add(rows, info, period, rounds=-1, staked=-old["staked_minor"], paid=-old["paid_minor"],
         refunded=0, kept=-parse_fraction(old["rounding_kept"]))
    for operator_id, (o_staked, o_paid, o_kept) in (old["operators"] or {}).items():
        _add(rows, info, period, rounds=-1, staked=-o_staked, paid=-o_paid, refunded=0, kept=-parse_fraction(o_kept),
             operator_id=operator_id)


SUMMED = tuple(f.name for f in fields(GgrSums))


def ggr_rows(db: Db, zone: tzinfo | Zones = UTC, scope: OperatorScope = EVERY_OPERATOR) -> list[dict[str, Any]]:
    """Per gaming day (in the time zone each round's table configuration had, else `zone`),
    table, game and currency; for a scope of operators, their players' share only (a scope of
    one configured operator: its gaming days, in its zone)."""
    zones = as_zones(zone)
    cols = GGR.column_names
    days: dict[tuple[str, str, str, str], dict[str, Any]] = defaultdict(
        lambda: dict.fromkeys(SUMMED, 0) | {"rounding_kept": Fraction(0)})
    source, where, params = GGR.name, "", []
    if not scope.everyone:
        zones = zones_for(db, scope, zones)
        chosen = sorted(scope.operators or ())
        source, where, params = (OPERATOR_GGR.name, f" WHERE operator_id IN ({', '.join('?' * len(chosen))})"
                                 if chosen else " WHERE 1 = 0", chosen)
    for found in db.query(f"SELECT {', '.join(cols)} FROM {source}{where}", params):
        row = dict(zip(cols, found))
        key = (gaming_day(row["period"], zones.of(row["timezone"])), row["table_id"], row["game"], row["currency"])
        total = days[key]
        for column in SUMMED:
            total[column] += row[column]
        total["rounding_kept"] += parse_fraction(row["rounding_kept"])
    return [{"day": d, "table_id": t, "game": g, "currency": c, **{k: v for k, v in total.items() if k in SUMMED},
             "rounding_kept": fraction_text(total["rounding_kept"])}
            for (d, t, g, c), total in sorted(days.items())]


VIEW = View(
    name="ggr",
    # 2: per quarter hour of studio time, summed into the asked zone's gaming days; 3: timezone;
    # 4: each operator's share (proj_ggr_operators)
    version=4,
    tables=(GGR, SETTLEMENTS, OPERATOR_GGR),
    handles=frozenset({Settled, SettlementReversed, Voided}),
    fold=fold,
    reads=("rounds",),
)

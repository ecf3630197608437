"""View `operators`: one row per operator configuration version (Operator.Configured), and
how every read narrows to an operator's players.

A player is the pair (operator, player id), named inside the ledger by its player key
(domain/operators.py: the bare id for the default operator, `OPERATOR~PLAYER` otherwise).
The views keep player keys as they are recorded, so they already hold each operator's
players apart; a read for one operator (`--operator ID`, `?operator=`) keeps the keys
of that operator (`key_clause`, `in_scope`) and shows the operator's own player ids
(`player_of`). The default operator needs no configuration: it is listed whether or not
it was configured (`operator_list`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from domain.operators import DEFAULT_OPERATOR_ID, KEY_SEPARATOR, OperatorScope
from ledger.records import OperatorConfigured, Record
from projections.folding import Rows, View, Zones
from projections.sql import Db, Table, columns_of


@dataclass(frozen=True)
class OperatorRow:
    """A row of `proj_operator_configs` (the table's columns are its fields), as
    `ledger operator list/show` and GET /v1/operators answer it."""

    operator_id: str
    config_version: int
    name: str
    currencies: list[str]
    timezone: str
    jurisdictions: list[str]
    config_hash: str
    position: int


OPERATOR_CONFIGS = Table("proj_operator_configs", key=("operator_id", "config_version"),
                         columns=columns_of(OperatorRow))


def fold(rows: Rows, ev: Record) -> None:
    if isinstance(ev, OperatorConfigured):
        rows.put(OPERATOR_CONFIGS.name, {
            "operator_id": ev.operator_id, "config_version": ev.config_version, "name": ev.name,
            "currencies": list(ev.currencies), "timezone": ev.timezone, "jurisdictions": list(ev.jurisdictions),
            "config_hash": ev.config_hash, "position": ev.position})


VIEW = View(
    name="operators",
    version=1,
    tables=(OPERATOR_CONFIGS,),
    handles=frozenset({OperatorConfigured}),
    fold=fold,
)


@dataclass(frozen=True)
class OperatorInfo:
    """An operator as a read shows it: its current configuration and its versions (none for
    the default operator unconfigured)."""

    operator_id: str
    configured: bool
    current: OperatorRow | None
    versions: list[OperatorRow] = field(default_factory=list)


def _rows(db: Db, operator_id: str | None = None) -> list[OperatorRow]:
    cols = OPERATOR_CONFIGS.column_names
    where, params = ("WHERE operator_id = ?", [operator_id]) if operator_id is not None else ("", [])
    found = db.query(f"SELECT {', '.join(cols)} FROM {OPERATOR_CONFIGS.name} {where} "
                     "ORDER BY operator_id, config_version", params)
    rows = [dict(zip(cols, r)) for r in found]
    for row in rows:
        for column in OPERATOR_CONFIGS.json_columns:  # stored as JSON text
            row[column] = json.loads(row[column]) if isinstance(row[column], str) else row[column]
    return [OperatorRow(**row) for row in rows]


def operator_list(db: Db) -> list[OperatorInfo]:
    """Every configured operator, and the default operator (configured or not), by id."""
    by_id: dict[str, list[OperatorRow]] = {DEFAULT_OPERATOR_ID: []}
    for row in _rows(db):
        by_id.setdefault(row.operator_id, []).append(row)
    return [OperatorInfo(i, bool(v), v[-1] if v else None, v) for i, v in sorted(by_id.items())]


def operator_info(db: Db, operator_id: str) -> OperatorInfo | None:
    """One operator (None: not configured and not the default operator)."""
    versions = _rows(db, operator_id)
    if not versions and operator_id != DEFAULT_OPERATOR_ID:
        return None
    return OperatorInfo(operator_id, bool(versions), versions[-1] if versions else None, versions)


def operator_zone(db: Db, operator_id: str) -> tzinfo | None:
    """The operator's gaming-day zone (its current configuration's), None when not configured."""
    found = operator_info(db, operator_id)
    if found is None or found.current is None:
        return None
    return ZoneInfo(found.current.timezone)


def zones_for(db: Db, scope: OperatorScope, zones: Zones) -> Zones:
    """The zones of a read for one operator: its own zone for every round when it is configured
    (its gaming days), else `zones` as they are."""
    only = scope.only()
    zone = operator_zone(db, only) if only is not None else None
    return zones if zone is None else OperatorZones(zone)


class OperatorZones(Zones):
    """Every round's gaming day in the operator's zone, whatever its table's."""

    def of(self, timezone: str | None) -> tzinfo:
        return self.fallback


def key_clause(column: str, scope: OperatorScope) -> tuple[str, list[Any]]:
    """SQL (`""` when the scope is every operator) keeping the rows whose player key in `column`
    is one of the scope's operators: the default operator's keys hold no separator, another's
    start with `OPERATOR~` (compared by substr: `_` in an id is a LIKE wildcard)."""
    if scope.operators is None:
        return "", []
    parts: list[str] = []
    params: list[Any] = []
    for operator_id in sorted(scope.operators):
        if operator_id == DEFAULT_OPERATOR_ID:
            parts.append(f"{column} NOT LIKE '%{KEY_SEPARATOR}%'")
        else:
            prefix = operator_id + KEY_SEPARATOR
            parts.append(f"substr({column}, 1, {len(prefix)}) = ?")
            params.append(prefix)
    return "(" + " OR ".join(parts or ["1 = 0"]) + ")", params

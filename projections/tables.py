"""View `tables`: one row per table configuration version (Table.Configured).

The rounds view reads it to give each round the time zone of the configuration it
opened under (Round.TableApplied), so gaming days follow the zone in force when the
round was played. `table_ids` lists the configured tables without scanning the
event store by topic (which the library does not index)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.records import Record, TableConfigured
from projections.folding import Rows, View
from projections.sql import Db, Table, columns_of


@dataclass(frozen=True)
class TableConfigRow:
    """A row of `proj_table_configs` (the table's columns are its fields): no query answers it
    whole (`ledger table list` reads the ids, `table_ids`; the rounds view the zone)."""

    table_id: str
    config_version: int
    timezone: str
    position: int


TABLE_CONFIGS = Table("proj_table_configs", key=("table_id", "config_version"), columns=columns_of(TableConfigRow))


def config_row(rows: Rows, table_id: str, config_version: int) -> dict[str, Any] | None:
    return rows.get(TABLE_CONFIGS.name, (table_id, config_version))


def fold(rows: Rows, ev: Record) -> None:
    if isinstance(ev, TableConfigured):
        rows.put(TABLE_CONFIGS.name, {"table_id": ev.table_id, "config_version": ev.config_version,
                                      "timezone": ev.timezone, "position": ev.position})


def table_ids(db: Db) -> list[str]:
    """Every configured table's id, sorted."""
    return [r[0] for r in db.query(f"SELECT DISTINCT table_id FROM {TABLE_CONFIGS.name} ORDER BY table_id")]


VIEW = View(
    name="tables",
    version=1,
    tables=(TABLE_CONFIGS,),
    handles=frozenset({TableConfigured}),
    fold=fold,
)

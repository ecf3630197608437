"""The queries only the console's pages ask, beside the read service's (queries.py): a
round's players, which rounds and tables named by refused commands have a page, a table's own
events (configurations and seats), and the refused commands filtered by table and days.
View queries take the views' `Db` (`ReadService.views()`), store queries the EventLog."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from ledger.records import TableConfigured, TableSeatingChanged
from projections.recall import RECALL
from projections.rounds import ROUNDS
from projections.sql import Db
from projections.tables import TABLE_CONFIGS


def round_players(db: Db, round_id: str) -> list[str]:
    return [r[0] for r in db.query(f"SELECT player_id FROM {RECALL.name} WHERE round_id = ? ORDER BY seq",
                                   (round_id,))]


@dataclass
class TableFacts:
    configs: list[TableConfigured]
    seating: TableSeatingChanged | None


def table_facts(log: EventLog, table_id: str) -> TableFacts:
    """The table's configuration versions and its last seating: the table aggregate's own
    events, read once by its id (EventLog.table_history reads the same rows, keeping the
    configurations only)."""
    configs: list[TableConfigured] = []
    seating = None
    for record in map(log.decode, log._rows_where("originator_id", _table_aggregate(table_id))):
        if isinstance(record, TableConfigured):
            configs.append(record)
        elif isinstance(record, TableSeatingChanged):
            seating = record
    return TableFacts(configs, seating)


def _table_aggregate(table_id: str) -> Any:
    from ledger.table import table_id_for

    return table_id_for(table_id)


def rejection_rows(log: EventLog, code: str | None, table: str | None, since: date | None, until: date | None,
                   after_id: int, limit: int, scope: OperatorScope = EVERY_OPERATOR,
                   ) -> tuple[list[dict[str, Any]], int | None]:
    """Refused commands matching the filters, oldest first, read a thousand at a time from
    `after_id`; and the id to continue after (None at the end). For a scope of some operators,
    those naming one of them, another operator's player in a message replaced, as
    /v1/rejections (projections/redaction.py)."""
    from projections.redaction import scoped_rejection

    out: list[dict[str, Any]] = []
    while len(out) < limit:
        batch = log.rejections(after_id=after_id, limit=1000)
        if not batch:
            return out, None
        for row in batch:
            after_id = row["id"]
            if _rejection_matches(row, code, table, since, until) and (shown := scoped_rejection(row, scope)) is not None:
                out.append(shown)
                if len(out) == limit:
                    return out, after_id
    return out, after_id


def _rejection_matches(row: dict[str, Any], code: str | None, table: str | None,
                       since: date | None, until: date | None) -> bool:
    if code and row.get("code") != code:
        return False
    if table and row.get("table_id") != table:
        return False
    day = str(row.get("received_at") or row.get("server_time") or "")[:10]
    return not ((since and day < since.isoformat()) or (until and day >= until.isoformat()))


def with_pages(db: Db, rows: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Which of the rounds (TABLE#NO) and tables the rejections name have a page: a refused
    command may name a round never opened or a table never seen, and a link never leads to a
    404. Two reads of the views, bounded by the page's own tables and round numbers."""
    tables = sorted({r["table_id"] for r in rows if r.get("table_id")})
    if not tables:
        return set(), set()
    numbers = sorted({r["round_no"] for r in rows if isinstance(r.get("round_no"), int)}) or [0]
    marks, nos = ", ".join("?" * len(tables)), ", ".join("?" * len(numbers))
    rounds = db.query(f"SELECT table_id, round_no FROM {ROUNDS.name} WHERE table_id IN ({marks}) "
                      f"AND round_no IN ({nos})", [*tables, *numbers])
    seen = db.query(f"SELECT table_id FROM {ROUNDS.name} WHERE table_id IN ({marks}) UNION "
                    f"SELECT table_id FROM {TABLE_CONFIGS.name} WHERE table_id IN ({marks})", [*tables, *tables])
    return {f"{t}#{n}" for t, n in rounds}, {t for (t,) in seen}


def every_rejection(log: EventLog, code: str | None, table: str | None, since: date | None,
                    until: date | None, scope: OperatorScope = EVERY_OPERATOR) -> Iterator[dict[str, Any]]:
    """Every refused command matching the filters, oldest first (the rejections page's, all pages)."""
    after: int | None = 0
    while after is not None:
        rows, after = rejection_rows(log, code, table, since, until, after, limit=1000, scope=scope)
        yield from rows

"""`Db.upsert_many` on SQLite: many rows per statement, the same rows as one by one."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from projections.recall import RECALL
from projections.sql import SQLITE_UPSERT_ROWS_MAX, SQLITE_VARIABLES_MAX, Db, Table, dump

PAIRS = Table("t_pairs", key=("k",), columns=(("k", "text"), ("v", "int")))


def _recall_row(i: int, version: int) -> tuple[Any, ...]:
    """A row of the 20-column recall table; `version` changes every value but the key."""
    values: list[Any] = [f"p{i % 7}", f"r{i}"]
    for name, kind in RECALL.columns[2:]:
        values.append(i * 10 + version if kind == "int" else f"{name}-{i}-{version}")
    return tuple(values)


@pytest.mark.parametrize("count", [0, 1, 48, 49, 50, 98, 120])
def test_upsert_many_writes_what_one_by_one_writes(tmp_path: Path, count: int) -> None:
    """Insert, then update half of them and add more: the table holds the last value of each key."""
    db = Db.sqlite(str(tmp_path / "v.db"))
    db.create(RECALL)
    first = [_recall_row(i, 1) for i in range(count)]
    second = [_recall_row(i, 2) for i in range(count // 2, count + count // 3)]
    with db.transaction():
        db.upsert_many(RECALL, first)
    with db.transaction():
        db.upsert_many(RECALL, second)
    at = [RECALL.column_names.index(name) for name in RECALL.key]

    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(row[i] for i in at)

    expected = {key(row): row for row in first} | {key(row): row for row in second}
    assert dump(db, RECALL) == [expected[key] for key in sorted(expected)]
    db.close()


def test_upsert_many_runs_whole_statements_of_many_rows(tmp_path: Path) -> None:
    """120 recall rows (19 columns: 52 fit in a statement's variables, 50 a statement) take 2
    statements and 20 single rows, not 120 runs; 1000 two-column rows, 20 statements of 50."""
    db = Db.sqlite(str(tmp_path / "v.db"))
    db.create(RECALL)
    db.create(PAIRS)
    runs: list[str] = []
    db.conn.set_trace_callback(runs.append)
    with db.transaction():
        db.upsert_many(RECALL, [_recall_row(i, 1) for i in range(120)])
        db.upsert_many(PAIRS, [(f"k{i}", i) for i in range(1000)])
    per = min(SQLITE_VARIABLES_MAX // len(RECALL.columns), SQLITE_UPSERT_ROWS_MAX)
    inserts = [text for text in runs if text.startswith("INSERT INTO proj_recall ")]
    assert len(inserts) == 120 // per + 120 % per == 22
    assert SQLITE_UPSERT_ROWS_MAX == 50
    assert len([text for text in runs if text.startswith("INSERT INTO t_pairs ")]) == 1000 // 50 == 20
    assert dump(db, PAIRS) == sorted((f"k{i}", i) for i in range(1000))
    db.close()

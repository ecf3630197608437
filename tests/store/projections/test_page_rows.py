"""The page's own rows (`CachedRows.edit` / `put`): a fold changes a row in place, the
row is copied once per page (with its JSON lists and dicts), and the cache's rows stay
as they were written until the page is sealed, so that dropping the page (`rollback`,
which `forget` runs after any failure) leaves the cache right."""
from __future__ import annotations

from projections.folding import CachedRows, MemoryRows
from projections.sql import Db, Table

T = Table("t_rows", key=("k",), columns=(("k", "text"), ("n", "int"), ("items", "json"), ("by", "json")))


def cached() -> CachedRows:
    db = Db.sqlite(":memory:")
    db.create(T)
    rows = CachedRows(db, [T])
    rows.complete = True  # fresh tables: nothing to read back
    return rows


def test_an_edit_copies_a_row_once_per_page_and_leaves_the_cache_as_written() -> None:
    rows = cached()
    rows.put(T.name, {"k": "a", "n": 1, "items": [1], "by": {"x": 1}})
    rows.seal()
    written = rows.get(T.name, ("a",))
    mine = rows.edit(T.name, ("a",))
    assert mine is not None and mine is not written
    mine["n"] += 1
    mine["items"].append(2)
    mine["by"]["y"] = 2
    assert rows.edit(T.name, ("a",)) is mine  # later events of the page change the same copy
    assert rows.get(T.name, ("a",)) is mine  # and every fold of the page reads it
    assert written == {"k": "a", "n": 1, "items": [1], "by": {"x": 1}}
    assert rows.seal() == 1
    assert rows.sealed[0][1] == [("a", 2, "[1,2]", '{"x":1,"y":2}')]
    assert rows.get(T.name, ("a",)) is mine  # sealed: the page's row is the cache's now
    assert rows.edit(T.name, ("a",)) is not mine  # ... and the next page copies it again


def test_a_dropped_page_leaves_the_cached_rows_unchanged() -> None:
    rows = cached()
    rows.put(T.name, {"k": "a", "n": 1, "items": [1], "by": None})
    rows.seal()
    mine = rows.edit(T.name, ("a",))
    assert mine is not None
    mine["items"].append(2)
    mine["by"] = {"x": 1}
    rows.rollback()
    assert rows.get(T.name, ("a",)) == {"k": "a", "n": 1, "items": [1], "by": None}
    assert rows.edit(T.name, ("b",)) is None and rows.overlay[T.name] == {}


def test_memory_rows_copy_a_row_once_a_page_too() -> None:
    rows = MemoryRows([T])
    rows.put(T.name, {"k": "a", "n": 1, "items": [1], "by": None})
    mine = rows.edit(T.name, ("a",))
    assert mine is rows.get(T.name, ("a",))  # put in this page: already its own
    rows.seal()
    before = rows.get(T.name, ("a",))
    again = rows.edit(T.name, ("a",))
    assert again is not None and again is not before
    again["items"].append(2)
    assert before == {"k": "a", "n": 1, "items": [1], "by": None}
    assert rows.rows(T.name) == [{"k": "a", "n": 1, "items": [1, 2], "by": None}]

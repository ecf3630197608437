"""The runner on SQLite and PostgreSQL: incremental equals rebuild, a crash
between or inside pages counts nothing twice, two runners never double-count."""
from __future__ import annotations

import pytest

from ledger.eventlog import EventLog
from ledger.records import Opened
from ledger.store import open_app
from projections.folding import View
from projections.runner import ALL_VIEWS, Projector
from projections.sql import dump
from tests.support.synthetic import random_history, store
from tests.unit.projections.test_folds import fold_all


def snapshot(projector: Projector) -> dict[str, list[tuple]]:
    return {t.name: dump(projector.db, t) for v in projector.views for t in v.tables}


def memory_snapshot(events) -> dict[str, list[dict]]:
    rows = fold_all(events)
    return {name: rows.rows(name) for name in rows.tables}


def as_dicts(projector: Projector) -> dict[str, list[dict]]:
    import json

    out = {}
    for view in projector.views:
        for t in view.tables:
            out[t.name] = [
                {c: (json.loads(v) if c in t.json_columns and v is not None else v) for c, v in zip(t.column_names, r)}
                for r in dump(projector.db, t)
            ]
    return out


@pytest.fixture
def app(store_url):
    a = open_app(store_url)
    yield a
    a.close()


@pytest.mark.parametrize("write_behind", [True, False])
def test_incremental_in_chunks_equals_rebuild_and_the_pure_fold(app, write_behind: bool) -> None:
    events = random_history(seed=11, rounds=60)
    p = Projector(EventLog(app), page_size=37, write_behind=write_behind)
    for i in range(0, len(events), 90):
        store(app, events[i:i + 90])
        p.catch_up()
    incremental = snapshot(p)
    assert as_dicts(p) == memory_snapshot(events)
    p.rebuild()
    result = p.catch_up()
    assert result.events == len(events)
    assert snapshot(p) == incremental
    p.close()


class Crash(Exception):
    pass


@pytest.mark.parametrize("write_behind", [True, False])
def test_crash_after_a_page_or_inside_one_counts_nothing_twice(app, write_behind: bool) -> None:
    events = random_history(seed=5, rounds=50)
    store(app, events)
    p = Projector(EventLog(app), page_size=25, write_behind=write_behind)

    def crash_after_second_page(position: int) -> None:
        if position >= 50:
            raise Crash(position)

    with pytest.raises(Crash):
        p.catch_up(after_commit=crash_after_second_page)
    p.close()

    # Restart; this time crash inside a page's transaction (after the rows were written).
    p2 = Projector(EventLog(app), page_size=25, write_behind=write_behind)
    assert p2.positions == {v.name: 50 for v in ALL_VIEWS}
    real_flush = p2.rows.flush

    def failing_flush() -> int:
        real_flush()
        raise Crash("inside the transaction")

    p2.rows.flush = failing_flush  # type: ignore[method-assign]
    with pytest.raises(Crash):
        p2.catch_up()
    p2.rows.flush = real_flush  # type: ignore[method-assign]
    assert Projector(EventLog(app)).positions["balances"] == 50  # rolled back: position unchanged
    p2.catch_up()
    assert as_dicts(p2) == memory_snapshot(events)
    p2.close()


def test_two_runners_at_once_never_double_count(app, monkeypatch) -> None:
    events = random_history(seed=8, rounds=40)
    store(app, events)
    a = Projector(EventLog(app), page_size=20)
    b = Projector(EventLog(app), page_size=20)  # both start from position 0
    b.catch_up(max_pages=2)
    monkeypatch.setattr(a, "_refresh_positions", lambda: None)  # as if a had read its positions just before b wrote
    result = a.catch_up()  # its first page conflicts with b's: rolled back, re-read, continued
    assert result.conflicts >= 1
    b.catch_up()
    assert as_dicts(a) == memory_snapshot(events)
    a.close()
    b.close()


def test_a_runner_that_waited_starts_where_the_other_stopped(app) -> None:
    events = random_history(seed=8, rounds=40)
    store(app, events)
    a = Projector(EventLog(app), page_size=20)
    b = Projector(EventLog(app), page_size=20)
    first = b.catch_up(max_pages=2)
    rest = a.catch_up()  # took its turn after b: reads its positions afresh, no conflict
    assert (rest.conflicts, first.events + rest.events) == (0, len(events))
    assert as_dicts(a) == memory_snapshot(events)
    a.close()
    b.close()


def test_a_changed_view_definition_rebuilds_every_view(app) -> None:
    events = random_history(seed=3, rounds=20)
    store(app, events)
    p = Projector(EventLog(app))
    p.catch_up()
    before = snapshot(p)
    p.close()
    bumped = [View(v.name, v.version + (v.name == "refunds"), v.tables, v.handles, v.fold, v.reads) for v in ALL_VIEWS]
    p2 = Projector(EventLog(app), bumped)
    assert set(p2.positions.values()) == {0}
    p2.catch_up()
    assert snapshot(p2) == before
    p2.close()


def test_a_failed_write_stops_the_pages_folded_on_top_of_it(app) -> None:
    """Write behind: page N+1 is folded while page N is written; when N's
    write fails (the store failing: a failure on the rows is tried again one
    event a page, test_view_stops.py), N+1 is never written and the cache is dropped."""
    import sqlite3

    events = random_history(seed=6, rounds=40)
    store(app, events)
    p = Projector(EventLog(app), page_size=30)
    real_flush = p.rows.flush
    writes = []

    def flush_then_fail_the_second() -> int:
        writes.append(p.rows.sealed)
        if len(writes) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return real_flush()

    p.rows.flush = flush_then_fail_the_second  # type: ignore[method-assign]
    with pytest.raises(sqlite3.OperationalError):
        p.catch_up()
    assert len(writes) == 2  # the third page (already folded) was never written
    assert Projector(EventLog(app)).positions == {v.name: 30 for v in ALL_VIEWS}
    assert p.rows.committed["proj_rounds"] == {} and not p.rows.complete
    p.rows.flush = real_flush  # type: ignore[method-assign]
    p.catch_up()
    assert as_dicts(p) == memory_snapshot(events)
    p.close()


def test_a_page_fold_view_is_folded_after_the_others_and_read_by_none(app) -> None:
    from domain.errors import InvariantBroken
    from projections.recall import TIMELINE_VIEW

    reader = View("reader", 1, (), frozenset({Opened}), lambda rows, ev: [], ("timeline",))
    with pytest.raises(InvariantBroken, match="page at a time"):
        Projector(EventLog(app), [TIMELINE_VIEW, reader])


def test_a_view_whose_new_version_indexes_a_new_column_upgrades_old_tables(app) -> None:
    """Upgrading a store whose views were built by an older definition (rounds v1 had no
    studio_time column): the old tables go before the new ones, with their new indexes, are made."""
    from dataclasses import replace

    from projections.rounds import ROUNDS

    events = random_history(seed=5, rounds=10)
    store(app, events)
    old_rounds = replace(ROUNDS, columns=tuple(c for c in ROUNDS.columns if c[0] != "studio_time"),
                         indexes=tuple(i for i in ROUNDS.indexes if "studio_time" not in i))
    old = [View(v.name, v.version - (v.name == "rounds"), tuple(old_rounds if t is ROUNDS else t for t in v.tables),
                v.handles, v.fold, v.reads) for v in ALL_VIEWS]
    p_old = Projector(EventLog(app), old)
    p_old.catch_up()
    p_old.close()
    p = Projector(EventLog(app))  # the current definitions on the old tables
    assert set(p.positions.values()) == {0}
    p.catch_up()
    assert as_dicts(p) == memory_snapshot(events)
    p.close()


def test_catch_up_leaves_a_callers_frozen_objects_frozen(app) -> None:
    import gc

    store(app, random_history(seed=9, rounds=5))
    p = Projector(EventLog(app))
    gc.freeze()  # e.g. a server before it forks
    try:
        frozen = gc.get_freeze_count()
        p.catch_up()
        assert 0 < gc.get_freeze_count() <= frozen  # still frozen, nothing of ours added (some may have died)
    finally:
        gc.unfreeze()
        p.close()
    p2 = Projector(EventLog(app))
    p2.catch_up()
    assert gc.get_freeze_count() == 0  # its own freeze is undone when it returns
    p2.close()


@pytest.mark.parametrize("write_behind", [True, False])
@pytest.mark.parametrize("evicted_bits", [64, 1 << 23])  # a tiny filter: false positives read the store
def test_a_row_cache_that_drops_old_rows_gives_the_same_views(app, monkeypatch, write_behind: bool,
                                                              evicted_bits: int) -> None:
    """Issue 9: the projector's cache keeps only rows folded lately (memory flat in the
    number of rounds); a dropped row read again comes back from the store, also while
    the page that wrote it is still being written behind."""
    import projections.folding as state

    monkeypatch.setattr(state, "CACHE_ROWS_YOUNG", 5)
    monkeypatch.setattr(state, "EVICTED_BITS", evicted_bits)
    events = random_history(seed=23, rounds=60)
    half = len(events) // 2
    store(app, events[:half])
    p = Projector(EventLog(app), page_size=19, write_behind=write_behind)
    # fresh views: the cache is complete, dropped keys go to the filter, and every event folds
    assert p.catch_up().events == half
    assert p.rows.complete and p.rows._any_evicted
    assert as_dicts(p) == memory_snapshot(events[:half])
    store(app, events[half:])
    assert p.catch_up().events == len(events) - half
    assert as_dicts(p) == memory_snapshot(events)
    p.close()


def test_the_row_cache_stays_bounded_inside_a_page(app, monkeypatch) -> None:
    """Issue 9: the cache rotates as rows are read, not only when a page is sealed, so that
    while a page is folded it holds the last sealed page's rows and at most about twice
    CACHE_ROWS_YOUNG more, however many rows the page reads; nor does it keep the sealed
    rows once they are written."""
    import projections.folding as state

    young_max = 5
    monkeypatch.setattr(state, "CACHE_ROWS_YOUNG", young_max)
    events = random_history(seed=29, rounds=60)
    store(app, events)
    p = Projector(EventLog(app), page_size=200)
    rows, get, seal = p.rows, p.rows.get, p.rows.seal
    cached_max, sealed_max = 0, 0

    def counting_get(table, key):
        nonlocal cached_max
        cached_max = max(cached_max, sum(map(len, rows.committed.values())) + sum(map(len, rows.older.values())))
        return get(table, key)

    def counting_seal() -> int:
        nonlocal sealed_max
        sealed = seal()
        sealed_max = max(sealed_max, sealed)
        return sealed

    monkeypatch.setattr(rows, "get", counting_get)
    monkeypatch.setattr(rows, "seal", counting_seal)
    assert p.catch_up().events == len(events)
    assert sealed_max > 10 * young_max  # pages large enough for the bound to mean something
    assert cached_max <= sealed_max + 2 * (young_max + 1)
    assert rows.sealed == []
    assert as_dicts(p) == memory_snapshot(events)
    p.close()


@pytest.mark.parametrize("write_behind", [True, False])
def test_no_cyclic_collection_runs_while_pages_are_folded_and_written(app, write_behind: bool) -> None:
    """Each collection re-walked every row of the page in flight (several a page); a page's
    records and rows hold no cycles, so catch-up keeps the collector off until it returns,
    and leaves it as it found it."""
    import gc

    events = random_history(seed=31, rounds=40)
    store(app, events)
    p = Projector(EventLog(app), page_size=50, write_behind=write_behind)
    collections: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        result = p.catch_up()
    finally:
        gc.callbacks.remove(count)
    assert result.pages > 5 and collections == []
    assert gc.isenabled()
    assert as_dicts(p) == memory_snapshot(events)
    gc.disable()  # a caller that keeps the collector off finds it off afterwards
    try:
        p.rebuild()
        p.catch_up()
        assert not gc.isenabled()
    finally:
        gc.enable()
        p.close()


@pytest.mark.parametrize("gc_off_per_run", [True, False])
def test_a_service_catch_up_leaves_the_collector_on_between_pages(app, gc_off_per_run: bool) -> None:
    """gc.disable is process-wide: `ledger serve`'s reads (gc_off_per_run=False) keep the
    collector on between pages for the event loop and the writer; a batch catch-up keeps it off."""
    import gc

    events = random_history(seed=31, rounds=40)
    store(app, events)
    p = Projector(EventLog(app), page_size=50, gc_off_per_run=gc_off_per_run)
    seen: list[bool] = []
    p.catch_up(after_commit=lambda _: seen.append(gc.isenabled()))
    assert len(seen) > 5 and set(seen) == {not gc_off_per_run}
    assert gc.isenabled()
    assert as_dicts(p) == memory_snapshot(events)
    p.close()

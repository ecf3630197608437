"""A stuck view is impossible, and loud if it happens (issue 27), on SQLite and PostgreSQL.

Text no store can hold (a NUL: PostgreSQL's text refuses it; a lone surrogate: not UTF-8)
recorded below the feed's checks is stored escaped and every view catches up. A view whose
fold or write still fails on an event stops at that event, named with its position, aggregate
and type, kept in the store; the other views catch up, and a rebuild tries it again."""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import StoredEvent

from domain.text import storable
from ledger import round as ledger_round
from ledger.eventlog import EventLog
from ledger.records import Record, Voided, fields_of, short_name
from ledger.store import open_app
from ops.cli import main
from projections import balances, refunds, rounds
from projections.folding import View
from projections.runner import ALL_VIEWS, STOPS, Projector
from projections.sql import Table, dump
from tests.support.synthetic import RoundScript, number, random_history, store
from tests.unit.projections.test_folds import fold_all

LONE = "<lone surrogate>"  # written into the stored JSON as the escape \ud800 (the mapper cannot encode one)
HOSTILE = ("a\x00b", f"c{LONE}d", f"\x00{LONE}")


@pytest.fixture
def app(store_url):
    a = open_app(store_url)
    yield a
    a.close()


def store_raw(app, events: list[Record]) -> None:
    """Record events as `store` does, a lone surrogate escape put in the stored JSON by hand."""
    stored = []
    for e in events:
        obj = object.__new__(getattr(ledger_round.Round, short_name(e)))
        object.__setattr__(obj, "__dict__", {"originator_id": UUID(e.originator_id), "timestamp": e.timestamp,
                                             "originator_version": e.originator_version, **fields_of(e)})
        s = app.mapper.to_stored_event(obj)
        stored.append(StoredEvent(s.originator_id, s.originator_version, s.topic,
                                  s.state.replace(LONE.encode(), b"\\ud800")))
    app.recorder.insert_events(stored)


def hostile_history() -> list[Record]:
    """Rounds voided with hostile text in every free-text field of the void, and a player id
    holding a NUL (a key of balances and recall), around a random history."""
    events = random_history(seed=3, rounds=12)
    for n, text in enumerate(HOSTILE, start=100):
        script = RoundScript("t9", n).open().bet(f"h{n}", f"p\x00{n}", 250).bet(f"i{n}", "p1", 100).void()
        void = script.events[-1]
        assert isinstance(void, Voided)
        script.events[-1] = void._replace(note=text, by=text, cause=text)
        events += script.events
    return number(events)


def real(text: Any) -> Any:
    return text.replace(LONE, "\ud800") if isinstance(text, str) else text


def expected_views(events: list[Record]) -> dict[str, list[dict[str, Any]]]:
    """The pure fold of the events as read back, each text column as the store keeps it."""
    rows = fold_all(events_read(events))
    tables: dict[str, Table] = {t.name: t for v in ALL_VIEWS for t in v.tables}
    out = {}
    for name in rows.tables:
        texts = {c for c, kind in tables[name].columns if kind == "text"}
        kept = [{c: storable(v) if c in texts and isinstance(v, str) else v for c, v in row.items()}
                for row in rows.rows(name)]
        out[name] = sorted(kept, key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=True))
    return out


def events_read(events: list[Record]) -> list[Record]:
    return [e._replace(**{f: real(getattr(e, f)) for f in ("note", "by", "cause") if hasattr(e, f)}) for e in events]


def stored_views(projector: Projector) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for view in projector.views:
        for t in view.tables:
            rows = [{c: (json.loads(v) if c in t.json_columns and v is not None else v)
                     for c, v in zip(t.column_names, r)} for r in dump(projector.db, t)]
            out[t.name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=True))
    return out


def test_text_no_store_holds_is_stored_escaped_and_every_view_catches_up(app, store_url) -> None:
    events = hostile_history()
    store_raw(app, events)
    assert main(["project", "--db", store_url, "--quiet"]) == 0
    p = Projector(EventLog(app))
    assert not p.stops and set(p.positions.values()) == {len(events)}
    assert stored_views(p) == expected_views(events)
    assert "player:p\\x00101" in {r[0] for r in dump(p.db, balances.BALANCES)}
    notes = {r["note"] for r in stored_views(p)[refunds.REFUNDS.name]}
    assert {"a\\x00b", "c\\ud800d", "\\x00\\ud800"} <= notes
    p.close()


def test_an_incremental_run_finds_rows_keyed_by_escaped_text(app) -> None:
    """A fresh runner reads rows back by key (no cache): a key holding a NUL is looked up as stored."""
    events = hostile_history()
    for i in range(0, len(events), 25):
        store_raw(app, events[i:i + 25])
        p = Projector(EventLog(app), page_size=10)
        p.catch_up()
        p.close()
    p = Projector(EventLog(app))
    assert stored_views(p) == expected_views(events)
    p.close()


class Boom(Exception):
    pass


def failing_at(view: View, position: int) -> View:
    """`view` (same name, version and tables: no rebuild) whose fold raises on the event at `position`."""
    def fold(rows, ev) -> None:
        if ev.position == position:
            raise Boom(f"cannot fold event {position}")
        view.fold(rows, ev)
    return replace(view, fold=fold, fold_page=None)


def views_with(failing: View) -> tuple[View, ...]:
    return tuple(failing if v.name == failing.name else v for v in ALL_VIEWS)


def stopping_store(app, view: View = balances.VIEW) -> tuple[list[Record], Record]:
    """A history stored, and the views caught up by a runner whose `view` fails on one bet."""
    events = number(random_history(seed=5, rounds=30))
    store(app, events)
    bad = next(e for e in events[len(events) // 2:] if type(e) in view.handles)
    p = Projector(EventLog(app), views_with(failing_at(view, bad.position)), page_size=40)
    p.catch_up()
    p.close()
    return events, bad


@pytest.mark.parametrize("write_behind", [True, False])
def test_a_fold_that_fails_stops_that_view_and_its_readers_at_the_event_and_the_others_go_on(
        app, write_behind: bool) -> None:
    events = number(random_history(seed=5, rounds=30))
    store(app, events)
    bad = next(e for e in events[len(events) // 2:] if type(e) in balances.VIEW.handles)
    p = Projector(EventLog(app), views_with(failing_at(balances.VIEW, bad.position)), page_size=40,
                  write_behind=write_behind)
    result = p.catch_up()
    assert result.finding is None
    assert {s.view for s in result.stopped} == {"balances"}  # no view reads balances
    stop = p.stops["balances"]
    assert (stop.position, stop.aggregate_id, stop.event_type) == (bad.position, bad.originator_id, type(bad).__name__)
    assert "Boom: cannot fold event" in stop.error
    assert p.positions["balances"] == bad.position - 1
    assert all(p.positions[v.name] == len(events) for v in ALL_VIEWS if v.name != "balances")
    # Each view holds exactly the events it folded: the stopped ones up to the event before.
    before = fold_all(events[:bad.position - 1])
    after = fold_all(events)
    got = stored_views(p)
    for view in ALL_VIEWS:
        pure = before if view.name == "balances" else after
        for t in view.tables:
            assert got[t.name] == sorted(pure.rows(t.name), key=lambda r: json.dumps(r, sort_keys=True)), t.name
    p.close()
    # The stop is the store's: another runner (the real folds) sees it, and keeps it.
    more = number(RoundScript("t8", 1).open().bet("m1", "p1", 300).void().events, first=len(events) + 1)
    store(app, more)
    again = Projector(EventLog(app))
    assert set(again.stops) == {"balances"}
    assert {s.view for s in again.catch_up().stopped} == {"balances"}
    assert again.positions["balances"] == bad.position - 1 and again.positions["ggr"] == len(events) + len(more)
    # A rebuild clears it: the view folds again from the start.
    again.rebuild()
    assert not again.catch_up().stopped and not again.stops and not dump(again.db, STOPS)
    assert set(again.positions.values()) == {len(events) + len(more)}
    again.close()


def test_the_views_that_read_a_stopped_view_stop_with_it(app) -> None:
    """A view folds reading the views listed before it (View.reads): when `rounds` stops, every
    view that reads it stops at the same event, named as its reader; the others go on."""
    events = number(random_history(seed=5, rounds=30))
    store(app, events)
    bad = next(e for e in events[len(events) // 2:] if type(e) in rounds.VIEW.handles)
    p = Projector(EventLog(app), views_with(failing_at(rounds.VIEW, bad.position)), page_size=40)
    result = p.catch_up()
    readers = {v.name for v in ALL_VIEWS if "rounds" in v.reads}
    assert readers and {s.view for s in result.stopped} == {"rounds", *readers}
    assert all("reads view rounds" in p.stops[name].error for name in readers)
    assert all(p.positions[name] == bad.position - 1 for name in {"rounds", *readers})
    assert all(p.positions[v.name] == len(events) for v in ALL_VIEWS if v.name not in {"rounds", *readers})
    p.close()


def test_a_write_the_store_refuses_stops_that_view_at_the_event(app, monkeypatch) -> None:
    """Rows a store refuses (here: refunds of one void) are found one event a page: that view
    stops at the event, kept in the store; the other views' rows of the same page are written."""
    from projections.sql import Db

    events = number(random_history(seed=5, rounds=30))
    store(app, events)
    bad = next(e for e in events[len(events) // 3:] if isinstance(e, Voided) and e.refunds)
    real_upsert = Db.upsert_many

    def refuse(self, table, rows):
        if table.name == refunds.REFUNDS.name and any(row[0] == bad.position for row in rows):
            raise ValueError("the store refuses this row")
        return real_upsert(self, table, rows)

    monkeypatch.setattr(Db, "upsert_many", refuse)
    p = Projector(EventLog(app), page_size=50)
    result = p.catch_up()
    assert [s.view for s in result.stopped] == ["refunds"]
    stop = p.stops["refunds"]
    assert (stop.position, stop.event_type, stop.aggregate_id) == (bad.position, "Voided", bad.originator_id)
    assert "ValueError: the store refuses this row" in stop.error
    assert p.positions["refunds"] == bad.position - 1
    assert all(p.positions[v.name] == len(events) for v in ALL_VIEWS if v.name != "refunds")
    assert stored_views(p)[refunds.REFUNDS.name] == sorted(
        fold_all(events[:bad.position - 1]).rows(refunds.REFUNDS.name), key=lambda r: json.dumps(r, sort_keys=True))
    p.close()


def test_a_store_failing_is_no_stop(app, monkeypatch) -> None:
    """The store not answering ends the catch-up as before: nothing stops."""
    import sqlite3

    from projections.sql import Db

    store(app, number(random_history(seed=5, rounds=5)))

    def down(self, table, rows):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Db, "upsert_many", down)
    p = Projector(EventLog(app))
    with pytest.raises(sqlite3.OperationalError):
        p.catch_up()
    monkeypatch.undo()
    assert not Projector(EventLog(app)).stops
    p.close()


def test_the_cli_names_the_stopped_view_and_exits_1(app, store_url, capsys) -> None:
    events, bad = stopping_store(app)
    capsys.readouterr()
    assert main(["project", "--db", store_url, "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ledger project: stopped: view balances stopped at event "
                                               f"{bad.position} ({type(bad).__name__} of {bad.originator_id}): Boom")
    assert "the other views go on" in err[0]
    # A read of the views answers (exit 0), and says on stderr which views stand still.
    assert main(["ggr", "--db", store_url, "--json"]) == 0
    out = capsys.readouterr()
    assert out.out and out.err.count("\n") == 1 and "view balances stopped at event" in out.err

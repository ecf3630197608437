"""A stuck view is impossible (issue 27), on SQLite and PostgreSQL: text no store can hold
(a NUL: PostgreSQL's text refuses it; a lone surrogate: not UTF-8) recorded below the feed's
checks is stored escaped and every view catches up."""
from __future__ import annotations

import json
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
from projections import balances, refunds
from projections.runner import ALL_VIEWS, Projector
from projections.sql import Table, dump
from tests.support.synthetic import RoundScript, number, random_history
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


"""The store side on the library's public extension points, pinned.

`Application.save(*aggregates, ledger_rows=...)` hands its keyword arguments to
`recorder.insert_events(stored_events, **kwargs)`, which writes the events, the
command index rows and the rejection rows in one transaction, and returns the
events' notification ids. The recorders override the library's insert (the
library's own pattern); what they rely on from eventsourcing 9.5.6 is pinned
here, so an upgrade that moves it fails a test instead of the ledger.
"""
from __future__ import annotations

import inspect
import struct
from collections.abc import Iterator
from datetime import datetime
from importlib.metadata import version
from typing import Any

import pytest
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import (
    DatetimeAsISO,
    EventStore,
    InfrastructureFactory,
    IntegrityError,
    JSONTranscoder,
    RecordConflictError,
    StoredEvent,
)
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteApplicationRecorder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.library.arrays import ELEMENT_OIDS, ByteaArray, Int8Array, TextArray, UuidArray, encode_array
from ledger.library.postgres_recorder import LedgerPostgresRecorder
from ledger.library.recorders import CommandRow, KnownCommand, LedgerRows, RejectionRow
from ledger.library.sqlite_recorder import LedgerSQLiteRecorder
from ledger.library.transcoder import OrjsonTranscoder
from ledger.store import open_app


class Thing(Aggregate):
    """A stand-in aggregate: the recorders do not care what they store."""

    class Noted(Aggregate.Event):
        text: str

    def note(self, text: str) -> None:
        self.trigger_event(self.Noted, text=text)


def things(n: int, notes: int = 0) -> list[Thing]:
    out = []
    for i in range(n):
        thing = Thing()
        for j in range(notes):
            thing.note(f"{i}/{j} é")
        out.append(thing)
    return out


def rows(*command_ids: str, rejected: int = 0) -> LedgerRows:
    return LedgerRows(
        commands=[CommandRow(cid, None, "open_round", f"hash-{cid}", "accepted", None) for cid in command_ids],
        rejections=[RejectionRow(f"r{i}", "t-1", i, "deal_card", "bad_card", "no such card", "{}", "2026-11-23")
                    for i in range(rejected)],
    )


def all_ids(app: Any) -> list[int]:
    ids: list[int] = []
    while notes := app.recorder.select_notifications(ids[-1] + 1 if ids else 1, 500):
        ids.extend(n.id for n in notes)
    return ids


# ------------------------------------------------------------------ behaviour, both stores

@pytest.fixture(params=["one_statement", "copy"])
def app_on(request: pytest.FixtureRequest, store_url: str) -> Iterator[Any]:
    """The app on each store, and on PostgreSQL on each write path: small batches by one
    call of the write function, large ones by COPY (forced here for these small saves)."""
    app = open_app(store_url)
    if request.param == "copy":
        assert isinstance(app.recorder, LedgerPostgresRecorder)
        app.recorder.one_statement_rows_max = 0
    try:
        yield app
    finally:
        app.close()


def test_save_writes_events_and_rows_in_one_transaction_and_returns_their_ids(app_on: Any) -> None:
    app = app_on
    first = app.save(*things(3, notes=2), ledger_rows=rows("c1", "c2", rejected=2))
    second = app.save(*things(1), ledger_rows=rows("c3"))
    assert [r.notification.id for r in first + second] == all_ids(app)
    assert len(first) == 9 and len(second) == 1
    assert app.recorder.select_commands(["c1", "c3", "nope"]) == {  # type: ignore[attr-defined]
        "c1": KnownCommand("hash-c1", "accepted", None, None), "c3": KnownCommand("hash-c3", "accepted", None, None),
    }
    rejections = app.recorder.select_rejections()  # type: ignore[attr-defined]
    assert [(r["command_id"], r["round_no"], r["code"]) for r in rejections] == [("r0", 0, "bad_card"),
                                                                                 ("r1", 1, "bad_card")]
    # the stored rows decode to the events saved
    stored = app.recorder.select_notifications(1, 100)
    assert [app.mapper.to_domain_event(n).text for n in stored if n.topic.endswith("Noted")] == [  # type: ignore[attr-defined]
        f"{i}/{j} é" for i in range(3) for j in range(2)
    ]


def test_a_reused_command_id_rolls_back_the_events_too(app_on: Any) -> None:
    app = app_on
    app.save(*things(2), ledger_rows=rows("c1"))
    before = all_ids(app)
    with pytest.raises(IntegrityError) as caught:
        app.save(*things(2), ledger_rows=rows("c2", "c1", rejected=1))
    assert isinstance(caught.value, RecordConflictError)  # what LedgerApp catches to rerun a batch
    assert all_ids(app) == before
    assert set(app.recorder.select_commands(["c1", "c2"])) == {"c1"}  # type: ignore[attr-defined]
    assert app.recorder.select_rejections() == []  # type: ignore[attr-defined]


def test_ids_stay_right_after_a_failed_insert_burnt_some(app_on: Any) -> None:
    """A PostgreSQL insert that fails still uses up sequence values: the next batch's
    returned ids must be the stored ones, not a count from an earlier position."""
    app = app_on
    kept = things(1)[0]
    app.save(kept)
    clash = StoredEvent(kept.id, 1, "tests.store.ledger.test_recorders:Thing.Noted", b'{"text":"clash"}')
    fresh = [app.mapper.to_stored_event(e) for e in things(1, notes=3)[0].collect_events()]
    with pytest.raises(IntegrityError):
        app.recorder.insert_events([*fresh[:2], clash])  # version 1 of `kept` exists
    got = app.recorder.insert_events(fresh)
    assert got is not None and list(got) == all_ids(app)[1:]


def test_an_empty_save_writes_the_rows_and_no_events(app_on: Any) -> None:
    app = app_on
    assert not app.recorder.insert_events([], ledger_rows=rows("c1", rejected=1))
    assert all_ids(app) == []
    assert set(app.recorder.select_commands(["c1"])) == {"c1"}  # type: ignore[attr-defined]


def test_the_store_url_selects_the_ledger_recorder_and_transcoder(store_url: str) -> None:
    app = open_app(store_url)
    try:
        kind = LedgerSQLiteRecorder if store_url.startswith("sqlite") else LedgerPostgresRecorder
        assert type(app.recorder) is kind
        transcoder = app.mapper.transcoder
        assert type(transcoder) is OrjsonTranscoder
        # Application.construct_transcoder registered the library's transcodings on it
        assert set(transcoder.names) == {"uuid_hex", "decimal_str", "datetime_iso"}  # type: ignore[attr-defined]
    finally:
        app.close()


# ------------------------------------------------------------------ what is relied on from the library

def _params(func: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(func).parameters.values()]


POS, VAR_POS, KW = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD


def test_the_library_version_these_pins_were_checked_against() -> None:
    assert version("eventsourcing") == "9.5.6", "a new eventsourcing: re-check ledger/library/recorders.py and this file"


def test_save_hands_its_kwargs_down_to_the_recorders_insert() -> None:
    assert _params(Application.save) == [("self", POS), ("objs", VAR_POS), ("kwargs", KW)]
    assert _params(EventStore.put) == [("self", POS), ("domain_events", POS), ("kwargs", KW)]
    src = inspect.getsource(Application.save) + inspect.getsource(Application._record)
    assert "processing_event.collect_events(*objs, **kwargs)" in src
    assert "self.events.put(" in src and "**processing_event.saved_kwargs" in src
    assert "self.recorder.insert_events(stored_events, **kwargs)" in inspect.getsource(EventStore.put)


def test_the_sqlite_insert_we_replace() -> None:
    # the library's insert_events is one write transaction of its datastore; ours is the same
    assert "with self.datastore.transaction(commit=True) as c:" in inspect.getsource(SQLiteAggregateRecorder.insert_events)
    assert _params(SQLiteApplicationRecorder.insert_events) == [("self", POS), ("stored_events", POS), ("kwargs", KW)]
    assert "insert_events_statement" in inspect.getsource(SQLiteAggregateRecorder.__init__)
    assert LedgerSQLiteRecorder.insert_events is not SQLiteAggregateRecorder.insert_events


def test_the_postgres_insert_we_replace() -> None:
    assert _params(PostgresApplicationRecorder.insert_events) == [
        ("self", POS), ("stored_events", POS), ("kwargs", KW)]
    init = inspect.getsource(PostgresApplicationRecorder.__init__)
    # the lock that keeps notification ids in commit order, and the channel listeners wait on
    assert "self.lock_table_statements = [" in init and "IN EXCLUSIVE MODE" in init
    assert "self.channel_name =" in init
    assert "notification_id bigserial" in init
    datastore = inspect.signature(PostgresDatastore.__init__).parameters
    assert {"schema", "originator_id_type", "lock_timeout"} <= set(datastore)
    assert "def get_connection(self)" in inspect.getsource(PostgresDatastore)
    # our insert is the one used
    assert LedgerPostgresRecorder.insert_events is not PostgresApplicationRecorder.insert_events


def test_the_transcoder_hooks_we_use() -> None:
    assert InfrastructureFactory.TRANSCODER_TOPIC == "TRANSCODER_TOPIC"
    assert InfrastructureFactory.APPLICATION_RECORDER_TOPIC == "APPLICATION_RECORDER_TOPIC"
    assert "if isinstance(transcoder, JSONTranscoder):" in inspect.getsource(Application.construct_transcoder)
    transcoder = JSONTranscoder()  # the registry the subclass reads: type -> and name -> transcoding
    assert transcoder.types == {} and transcoder.names == {}
    transcoder.register(DatetimeAsISO())
    assert transcoder.types[datetime].name == "datetime_iso" and type(transcoder.names["datetime_iso"]) is DatetimeAsISO
    assert issubclass(OrjsonTranscoder, JSONTranscoder)


def test_stored_event_fields() -> None:
    assert list(StoredEvent.__dataclass_fields__) == ["originator_id", "originator_version", "topic", "state"]


# ------------------------------------------------------------------ PostgreSQL's binary arrays

ARRAY_CASES = [
    (TextArray, "text", st.lists(st.none() | st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))),
    (Int8Array, "int8", st.lists(st.none() | st.integers(-(2**63), 2**63 - 1))),
    (ByteaArray, "bytea", st.lists(st.none() | st.binary())),
    (UuidArray, "uuid", st.lists(st.none() | st.uuids())),
]


@pytest.mark.postgres
@pytest.mark.parametrize(("kind", "sql_type", "values"), ARRAY_CASES, ids=[c[1] for c in ARRAY_CASES])
def test_encoded_arrays_read_back_as_the_values(pg_schema_url: str, kind: Any, sql_type: str, values: Any) -> None:
    """The one-statement path sends its rows as hand-encoded binary arrays (unnest's arguments):
    every value, NULLs and empty arrays included, reads back as it was."""
    app = open_app(pg_schema_url)
    try:
        with app.recorder.datastore.get_connection() as conn:  # type: ignore[attr-defined]

            @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
            @given(values)
            def check(got: list[Any]) -> None:
                row = conn.execute(f"SELECT %b::{sql_type}[] AS a", (encode_array(kind, got),)).fetchone()
                assert row is not None and row["a"] == got

            check()
    finally:
        app.close()


def _reference_array(oid: int, items: list[bytes | None]) -> bytes:
    """PostgreSQL's binary array format written out plainly: one dimension, lower bound 1,
    each element as its length (-1: NULL) and bytes."""
    body = b"".join(struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b for b in items)
    return struct.pack(">iiIii", 1, int(None in items), oid, len(items), 1) + body


@settings(max_examples=300, deadline=None)
@given(st.lists(st.none() | st.integers(-(2**63), 2**63 - 1)), st.lists(st.none() | st.text() | st.integers()))
def test_encoded_arrays_are_the_binary_format_byte_for_byte(ints: list[int | None], texts: list[Any]) -> None:
    """The live writer and the view writes send these bytes: int8 and text arrays (the fast
    paths: every int8 packed at once, text in one pass) equal the format written out plainly,
    with and without NULLs, non-str values as their str()."""
    if ints:
        want = [None if v is None else struct.pack(">q", v) for v in ints]
        assert bytes(encode_array(Int8Array, ints)) == _reference_array(ELEMENT_OIDS[Int8Array], want)
        assert bytes(encode_array(Int8Array, tuple(ints))) == _reference_array(ELEMENT_OIDS[Int8Array], want)
    if texts:
        want = [None if v is None else str(v).encode("utf-8", "surrogatepass") for v in texts]
        try:
            got = bytes(encode_array(TextArray, texts))
        except UnicodeEncodeError:  # a lone surrogate: not UTF-8, refused as before
            assert any(isinstance(v, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in v) for v in texts)
            return
        assert got == _reference_array(ELEMENT_OIDS[TextArray], want)


def test_lookup_is_both_reads_of_a_batch(app_on: Any) -> None:
    """`lookup` (one statement on PostgreSQL) answers what `select_commands` and
    `existing_ids` answer, whichever of the two lists is empty."""
    app = app_on
    kept = things(2, notes=1)
    app.save(*kept, ledger_rows=rows("c1", "c2"))
    fresh = things(1)[0]
    commands, aggregates = ["c1", "nope", "c2"], [kept[0].id, fresh.id, kept[1].id]
    expected = (app.recorder.select_commands(commands), app.recorder.existing_ids(aggregates))
    assert expected == ({"c1": KnownCommand("hash-c1", "accepted", None, None),
                         "c2": KnownCommand("hash-c2", "accepted", None, None)}, {kept[0].id, kept[1].id})
    assert app.recorder.lookup(commands, aggregates) == expected
    assert app.recorder.lookup(commands, []) == (expected[0], set())
    assert app.recorder.lookup([], aggregates) == ({}, expected[1])
    assert app.recorder.lookup(["nope"], [fresh.id]) == ({}, set())

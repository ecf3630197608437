"""The orjson transcoder writes the library's exact bytes and reads back the library's
exact values; rows the library wrote (the old golden store) read the same both ways."""
from __future__ import annotations

import gzip
import math
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import (
    DatetimeAsISO,
    DecimalAsStr,
    JSONTranscoder,
    TranscodingNotRegisteredError,
    UUIDAsHex,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.library.transcoder import OrjsonTranscoder
from tests.store.golden.make_golden import STORE


def _registered(transcoder: JSONTranscoder) -> JSONTranscoder:
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):  # as Application.register_transcodings
        transcoder.register(transcoding)
    return transcoder


LIBRARY = _registered(JSONTranscoder())
FAST = _registered(OrjsonTranscoder())

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)  # no lone surrogates: UTF-8 cannot hold them
integers = st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.integers()  # also beyond 64 bits
plain = st.recursive(
    st.none() | st.booleans() | integers | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=20,
)
stamps = st.datetimes(timezones=st.just(UTC))
typed = st.uuids() | stamps | st.decimals(allow_nan=False, places=2, max_value=10**9, min_value=-(10**9))
values = plain | typed | st.lists(typed, max_size=2) | st.dictionaries(text, typed, max_size=2)
states = st.dictionaries(text, values, max_size=8)


@settings(max_examples=400, deadline=None)
@given(states)
def test_same_bytes_and_same_values_as_the_library(state: dict[str, Any]) -> None:
    data = LIBRARY.encode(state)
    assert FAST.encode(state) == data
    assert _same(FAST.decode(data), LIBRARY.decode(data))
    assert _same(FAST.decode_state(data), LIBRARY.decode(data))



@settings(max_examples=100, deadline=None)
@given(st.lists(stamps, min_size=1, max_size=4), st.lists(states, min_size=1, max_size=4))
def test_a_timestamp_shared_by_many_events_is_written_as_the_library_writes_it(
    stamps_: list[datetime], rest: list[dict[str, Any]]
) -> None:
    """A batch's events share one timestamp object, written once and reused: each event
    still gets the library's bytes, also when the timestamp changes between events."""
    fast = _registered(OrjsonTranscoder())
    for stamp in stamps_:
        for state in rest:
            event = {"timestamp": stamp, **{k: v for k, v in state.items() if k != "timestamp"}}
            assert fast.encode(event) == LIBRARY.encode(event)



@settings(max_examples=300, deadline=None)
@given(st.lists(states, min_size=1, max_size=3), stamps)
def test_encode_state_writes_what_encode_writes(rest: list[dict[str, Any]], stamp: datetime) -> None:
    """The mapper's path (the dict is the caller's own copy, changed in place): the same bytes."""
    fast = _registered(OrjsonTranscoder())
    for state in rest:
        for event in (state, {**state, "timestamp": stamp}):
            assert fast.encode_state(dict(event)) == LIBRARY.encode(event)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 == 1.0 == True would hide a change)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


ODD_ROWS = [
    b'{"a":NaN}',  # orjson refuses it
    b'{"a":18446744073709551616,"b":-9223372036854775809}',  # orjson would read floats
    b'{"a":"\\ud800"}',  # a lone surrogate
    b'{"\\u005ftype_":"uuid_hex","_data_":"5d43d6d3caa15c32881f06ad2de7beeb"}',  # an escaped key
    b'{"a":{"b":{"_type_":"decimal_str","_data_":"1.50"}}}',  # nested
    b'{"_type_":"decimal_str","_data_":"1.50"}',  # the whole object
    b'{"a":"_type_","b":{"_type_":"x"}}',  # the word as a value, a one-key object
    b'{"a":{"_type_":"decimal_str","_data_":"2","c":1}}',  # three keys: stays a dict
    b'{"a":1.5e300,"b":-0.0,"c":[1,2.25]}',
    b'{"a":1,"a":2}',
    b'[{"_type_":"uuid_hex","_data_":"5d43d6d3caa15c32881f06ad2de7beeb"}]',
]


@pytest.mark.parametrize("data", ODD_ROWS)
def test_odd_rows_read_as_the_library_reads_them(data: bytes) -> None:
    assert _same(FAST.decode(data), LIBRARY.decode(data))
    assert _same(FAST.decode_state(data), LIBRARY.decode(data))


@pytest.mark.parametrize("data", [b'{"a":{"_type_":"nope","_data_":"1"}}', b"{nope", b'{"a":"\xff"}'])
def test_unreadable_rows_fail_as_in_the_library(data: bytes) -> None:
    with pytest.raises(Exception) as library:
        LIBRARY.decode(data)
    with pytest.raises(type(library.value)):
        FAST.decode(data)
    with pytest.raises(type(library.value)):
        FAST.decode_state(data)


class Unknown:
    pass


@pytest.mark.parametrize("state", [
    {"a": math.nan, "b": math.inf, "c": 0.1},
    {"a": 2**70, "b": -(2**70)},
    {"a": [datetime(2026, 1, 1, tzinfo=UTC)], "b": {"c": UUID(int=7)}, "d": (Decimal("1.10"),)},
    {"a": datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))},
    {1: "int key", "b": None},
    {"a": "é\u2028\x7f\x00\n\"\\"},
    # floats and typed values inside lists of flat dicts (the postings shape, checked in bulk)
    {"p": [{"account": "a", "amount_minor": 1}, {"account": "b", "amount_minor": 1e16}]},
    {"p": [{"a": 1}, {"b": math.nan}], "q": ({"a": [0.5]},)},
    {"p": [{"at": datetime(2026, 1, 1, tzinfo=UTC)}], "q": [[{"u": UUID(int=7)}]]},
    # an event's timestamp (written by orjson when UTC): with and without microseconds, other zones
    {"a": 1, "timestamp": datetime(2026, 11, 23, 20, 1, 2, 345678, tzinfo=UTC), "b": [{"c": 1}]},
    {"timestamp": datetime(1, 1, 1, tzinfo=UTC), "t": datetime(2026, 1, 1, tzinfo=UTC)},
    {"timestamp": datetime(2026, 1, 1, 12, 0, 0, 1, tzinfo=timezone(timedelta(hours=-3, minutes=-30)))},
    {"timestamp": datetime(2026, 1, 1, 12, 0), "a": None},
    {"timestamp": "2026-01-01T00:00:00+00:00"},
])
def test_odd_values_write_as_the_library_writes_them(state: dict[Any, Any]) -> None:
    data = LIBRARY.encode(state)
    assert FAST.encode(state) == data
    assert _same(FAST.decode(data), LIBRARY.decode(data))
    assert _same(FAST.decode_state(data), LIBRARY.decode(data))


@pytest.mark.parametrize("state", [{"a": Unknown()}, {"a": [Unknown()]}, {"a": "\ud800"}])
def test_unwritable_values_fail_as_in_the_library(state: dict[str, Any]) -> None:
    with pytest.raises(Exception) as library:
        LIBRARY.encode(state)
    assert isinstance(library.value, (TranscodingNotRegisteredError, UnicodeEncodeError))
    with pytest.raises(type(library.value)):
        FAST.encode(state)


def test_every_row_of_the_old_store_reads_the_same_and_writes_back_the_same_bytes(tmp_path: Path) -> None:
    db = tmp_path / "v0.db"
    db.write_bytes(gzip.decompress(STORE.read_bytes()))
    conn = sqlite3.connect(db)
    try:
        rows = [row[0] for row in conn.execute("SELECT state FROM stored_events ORDER BY rowid")]
    finally:
        conn.close()
    assert len(rows) > 1000
    for data in rows:
        value = LIBRARY.decode(data)
        assert _same(FAST.decode(data), value)
        assert _same(FAST.decode_state(data), value)
        assert FAST.encode(value) == data


@pytest.mark.parametrize("state", [
    {"timestamp": {"_type_": "uuid_hex", "_data_": "0" * 32}, "a": 1},  # another registered type under the name
    {"timestamp": {"_type_": "datetime_iso", "_data_": 7}},  # not a text: fails as the library fails
    {"timestamp": {"_type_": "datetime_iso", "_data_": "2026-01-01T00:00:00+00:00", "x": 1}},  # not the wrapper
    {"a": 'x\\"_type_', "timestamp": {"_type_": "datetime_iso", "_data_": "2026-01-01T00:00:00+00:00"}},
])
def test_a_state_that_only_looks_usual_reads_as_the_library_reads_it(state: dict[str, Any]) -> None:
    """decode_state's shortcut (one typed value, the timestamp) is taken only when it is that."""
    import json

    data = json.dumps(state, separators=(",", ":")).encode()
    try:
        want = LIBRARY.decode(data)
    except Exception as exc:  # the same failure is expected
        with pytest.raises(type(exc)):
            FAST.decode_state(data)
        return
    assert _same(FAST.decode_state(data), want)


def test_events_sharing_a_timestamp_text_share_its_value() -> None:
    first, second = (FAST.decode_state(b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-01-01T00:00:00+00:00"},'
                                      b'"n":%d}' % i) for i in (1, 2))
    assert first["timestamp"] is second["timestamp"] == datetime(2026, 1, 1, tzinfo=UTC)
    other = FAST.decode_state(b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-01-01T00:00:01+00:00"}}')
    assert other["timestamp"] == datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)

"""The library's JSON transcoder, with orjson doing the byte work.

Stored events keep the library's exact form: compact JSON, keys in insertion order,
non-ASCII unescaped, registered types as {"_type_": name, "_data_": ...}. For the
plain values events hold (str, int, bool, None, lists, string-keyed dicts, and the
registered types) orjson writes the same bytes as the library's `JSONTranscoder`
and reads back the same values, in less time both ways (docs/architecture-library.md). Anything outside that
(floats, which orjson would write differently for NaN; big integers; other types)
goes through the library's own code, so old rows and odd values read and write
exactly as before. Selected with the library's TRANSCODER_TOPIC (ledger/store.py).

Overrides `eventsourcing.persistence.JSONTranscoder` (`encode`, `decode`, and adds
`encode_state`/`decode_state`); kept by `python -m ops.bench.library_bench`
(docs/architecture-library.md): encode 6.80 against 9.53 µs per event (1.40x), decode
8.07 against 10.44 (1.29x), decode_state 7.48 against 10.85 (1.45x).
"""
from __future__ import annotations

from datetime import UTC, datetime
from itertools import chain
from typing import Any

import orjson
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, TranscodingNotRegisteredError

_PLAIN = frozenset({str, int, bool, type(None)})
_DICT = frozenset({dict})
_PLAIN_TOP = _PLAIN | {datetime}  # at the top of an event's state: its timestamp, when datetime is registered
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
_TYPE_KEY = b'"_type_"'
_ESCAPE = b"\\u"  # an escaped key could spell "_type_" unseen by the byte count below
# orjson reads an integer beyond 64 bits as a float: a run of 19+ digits goes to the stdlib.
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


class OrjsonTranscoder(JSONTranscoder):
    _stamp_prefix: bytes | None = None  # the datetime wrapper's opening, once the library registered it
    _last_stamp: tuple[datetime | None, orjson.Fragment | None] = (None, None)  # the last timestamp, written
    _last_read: tuple[str | None, datetime | None] = (None, None)  # the last timestamp text read, and its value

    def encode(self, obj: Any) -> bytes:
        if type(obj) is dict and self._plain_fields(obj):
            try:
                return orjson.dumps(self._stamp_written(obj), default=self._typed, option=_OPTIONS)
            except TypeError:  # a key that is not a str, an integer beyond 64 bits: the stdlib decides
                pass
        return super().encode(obj)

    def encode_state(self, state: dict[str, Any]) -> bytes:
        """`encode` of an event's state dict that the caller made for this call alone (the
        mapper's copy of the event's fields): its timestamp is replaced in place by the
        written form, where `encode` copies the dict first. The same bytes as `encode`."""
        if self._plain_fields(state):
            stamp = state.get("timestamp")
            last = self._last_stamp
            if last[0] is stamp and stamp is not None:
                state["timestamp"] = last[1]
            else:
                state = self._stamp_written(state)
            try:
                return orjson.dumps(state, default=self._typed, option=_OPTIONS)
            except TypeError:
                if stamp is not None:
                    state["timestamp"] = stamp  # the stdlib writes the datetime itself
        return super().encode(state)

    def decode(self, data: bytes) -> Any:
        loaded = _fast_load(data)
        if loaded is not None:
            obj, typed = loaded
            if typed == 0 or self._decode_top_level(obj, typed):
                return obj
        return super().decode(data)

    def decode_state(self, data: bytes) -> Any:
        """`decode` of a stored event's state: the same value, cheaper for the usual state,
        whose one registered value is its `timestamp`: decoded here, not by the loop over
        the top level, and its text parsed once for a run of events sharing it (a ledger
        batch's; those events then share one datetime object). The readers' path
        (ledger/eventlog.py); `decode`, which the library's mapper calls, is unchanged."""
        loaded = _fast_load(data)
        if loaded is not None:
            obj, typed = loaded
            if typed == 0 or (typed == 1 and type(obj) is dict and self._stamp_read(obj)):
                return obj
            if self._decode_top_level(obj, typed):
                return obj
        return super().decode(data)

    def _stamp_read(self, obj: dict[str, Any]) -> bool:
        """Decode in place a top-level `timestamp` written as the library's datetime (the one
        typed value of the state: `decode_state`); False if it is not that."""
        stamp = obj.get("timestamp")
        if type(stamp) is not dict or len(stamp) != 2 or "_type_" not in stamp or "_data_" not in stamp:
            return False
        text = stamp["_data_"]
        if type(text) is not str or type(self.names.get(stamp["_type_"])) is not DatetimeAsISO:
            return False
        last = self._last_read  # one read: another thread may replace the pair meanwhile
        if last[0] != text:
            last = self._last_read = (text, datetime.fromisoformat(text))  # DatetimeAsISO.decode
        obj["timestamp"] = last[1]
        return True

    def _stamp_written(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The event's UTC `timestamp` in the library's wrapper, its text written by orjson:
        the same as `isoformat()` for UTC at a tenth of its cost (isoformat was 60% of
        encoding a small event)."""
        stamp = obj.get("timestamp")
        if type(stamp) is not datetime or stamp.tzinfo is not UTC:
            return obj
        last = self._last_stamp  # one read: another thread may replace the pair meanwhile
        if last[0] is stamp:  # a batch's events share one timestamp (ledger/app.py): formatted once
            return {**obj, "timestamp": last[1]}
        prefix = self._stamp_prefix
        if prefix is None:
            transcoding = self.types.get(datetime)
            if type(transcoding) is not DatetimeAsISO:  # someone else's datetime form: theirs decides
                return obj
            prefix = self._stamp_prefix = b'{"_type_":' + orjson.dumps(transcoding.name) + b',"_data_":'
        fragment = orjson.Fragment(prefix + orjson.dumps(stamp) + b"}")
        self._last_stamp = (stamp, fragment)
        return {**obj, "timestamp": fragment}

    def _typed(self, value: Any) -> dict[str, Any]:
        """A registered type as the library writes it (orjson's `default`)."""
        transcoding = self.types.get(type(value))
        if transcoding is None:  # orjson raises a TypeError from it: the stdlib then decides
            raise TranscodingNotRegisteredError(f"no transcoding for {type(value)}")
        return {"_type_": transcoding.name, "_data_": transcoding.encode(value)}

    def _plain_fields(self, obj: dict[str, Any]) -> bool:
        """Every value plain, or a registered type at the top (orjson hands it to
        `_typed`, as the stdlib hands it to its `default`); orjson checks the keys.
        The top level's types checked in C at once (`issuperset` of their `map(type)`):
        most events hold only plain values beside their timestamp."""
        top = _PLAIN_TOP if datetime in self.types else _PLAIN
        if top.issuperset(map(type, obj.values())):
            return True
        for value in obj.values():
            if type(value) not in top and not _plain(value):
                return False
        return True

    def _decode_top_level(self, obj: Any, typed: int) -> bool:
        """Decode in place the registered-type objects among the top-level values, and
        tell whether they account for all `typed` `"_type_"` keys in the bytes (any other,
        nested one sends the row to the stdlib decoder)."""
        if type(obj) is not dict:
            return False
        for key, value in obj.items():
            if type(value) is dict and len(value) == 2 and "_type_" in value and "_data_" in value:
                transcoding = self.names.get(value["_type_"])
                if transcoding is None:
                    return False
                obj[key] = transcoding.decode(value["_data_"])
                typed -= 1
                if typed == 0:
                    return True
        return False


def _plain(value: Any) -> bool:
    """Only str, int, bool, None, lists, tuples and dicts of them: what orjson writes
    byte for byte as the stdlib does (not floats: NaN would differ). A container's item
    types are checked in C first (`issuperset`), and a list's small dicts (an event's
    postings and results) without a call each: ~0.7 µs an event in Python loops before."""
    kind = type(value)
    if kind is list or kind is tuple:
        items = value
    elif kind is dict:
        items = value.values()
    else:
        return kind in _PLAIN
    if _PLAIN.issuperset(map(type, items)):
        return True
    if _DICT.issuperset(map(type, items)) and _PLAIN.issuperset(map(type, chain.from_iterable(map(dict.values, items)))):
        return True  # flat dicts (an event's postings, results), every value checked in C
    for item in items:
        item_kind = type(item)
        if item_kind in _PLAIN or (item_kind is dict and _PLAIN.issuperset(map(type, item.values()))):
            continue
        if not _plain(item):
            return False
    return True


def _fast_load(data: bytes) -> tuple[Any, int] | None:
    """orjson's reading of `data` and its count of registered-type markers, or None where
    orjson would read it differently from the stdlib (escapes, integers past 64 bits, NaN,
    lone surrogates): the stdlib decides those."""
    if _ESCAPE in data or _LONG_NUMBER in data.translate(_DIGITS_TO_ZERO):
        return None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return obj, data.count(_TYPE_KEY)

"""One-dimensional PostgreSQL arrays encoded in their binary form (array_send's), sent as
they are, and psycopg's dumpers for them: they stand in for psycopg's own array dumpers
(text and bytea 1.15x at 5 values, int8 3.65x at 1,000 values; uuid is slower, 0.60-0.86x,
and the next to hand back; `python -m ops.bench.library_bench`, docs/architecture-library.md).
The PostgreSQL recorder (ledger/library/postgres_recorder.py) and the views' writes
(projections/sql.py) send them.
"""
from __future__ import annotations

from collections.abc import Sequence
from struct import Struct, pack
from typing import Any
from uuid import UUID

from psycopg import adapters
from psycopg.adapt import Dumper
from psycopg.pq import Format


class EncodedArray(bytes):
    """A one-dimensional array already in PostgreSQL's binary form (array_send's), sent as
    it is: psycopg's generic list dumper finds the element type and sizes the dimensions
    of every array again, a large share of a small batch's client CPU (docs/architecture-library.md)."""

    oid = 0


class TextArray(EncodedArray):
    oid = 1009


class Int8Array(EncodedArray):
    oid = 1016


class ByteaArray(EncodedArray):
    oid = 1001


class UuidArray(EncodedArray):
    oid = 2951


ELEMENT_OIDS: dict[type[EncodedArray], int] = {TextArray: 25, Int8Array: 20, ByteaArray: 17, UuidArray: 2950}
_LENGTH = Struct(">i")
_INT8 = Struct(">iq")  # length 8, value
_NULL = _LENGTH.pack(-1)


def encode_array(kind: type[EncodedArray], values: Sequence[Any]) -> EncodedArray:
    """`values` (None for NULL) as a binary array of `kind`'s element type."""
    if not values:  # most of a live batch's arrays (no rejections): made once
        return _EMPTY_ARRAYS[kind]
    if kind is Int8Array:
        if None not in values:
            return kind(_header(kind, values, False) + _int8_items(values))
        items = [_NULL if v is None else _INT8.pack(8, v) for v in values]
    else:
        if kind is TextArray:
            return kind(_header(kind, values, None in values) + _text_items(values))
        if kind is UuidArray:
            encoded = [None if v is None else (v if isinstance(v, UUID) else UUID(str(v))).bytes for v in values]
        else:
            encoded = [None if v is None else bytes(v) for v in values]
        items = [_NULL if b is None else _LENGTH.pack(len(b)) + b for b in encoded]
    return kind(_header(kind, values, None in values) + b"".join(items))


def _header(kind: type[EncodedArray], values: Sequence[Any], nulls: bool) -> bytes:
    """One dimension, its flags, element type, length and lower bound 1."""
    return pack(">iiIii", 1, int(nulls), ELEMENT_OIDS[kind], len(values), 1)


def _int8_items(values: Sequence[int]) -> bytearray:
    """Each value as length 8 and the value, big-endian (`_INT8`), without NULLs: every value
    packed in one call, then moved into place a byte column at a time (strided slice copies
    in C: half the time of a pack per value; the view writes send an int8 array per column)."""
    n = len(values)
    packed = pack(f">{n}q", *values)
    out = bytearray(12 * n)
    out[3::12] = b"\x08" * n
    for byte in range(8):
        out[4 + byte::12] = packed[byte::8]
    return out


def _text_items(values: Sequence[Any]) -> bytes:
    """Each value as its UTF-8 length and bytes (str() of a non-str first), -1 for NULL: one
    pass, no bytes concatenated per value (a tenth faster than two comprehensions)."""
    length = _LENGTH.pack
    items: list[bytes] = []
    add = items.append
    for v in values:
        if v is None:
            add(_NULL)
        else:
            b = (v if type(v) is str else str(v)).encode("utf-8")
            add(length(len(b)))
            add(b)
    return b"".join(items)


_EMPTY_ARRAYS = {kind: kind(pack(">iiI", 0, 0, oid)) for kind, oid in ELEMENT_OIDS.items()}


class _EncodedArrayDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> bytes:
        return bytes(obj)


for _kind in ELEMENT_OIDS:
    adapters.register_dumper(_kind, type(f"{_kind.__name__}Dumper", (_EncodedArrayDumper,), {"oid": _kind.oid}))

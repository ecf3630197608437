"""Seeded mutations of feed lines: every line made here is NOT a valid command.

`malformed(rng, valid_line)` picks one class of damage (wrong types, missing and extra
fields, huge, negative and float numbers, NaN, unicode, long strings, deep nesting,
truncation, invalid UTF-8, NUL, BOM, lone surrogates, not JSON at all) and applies it to a
valid line; a mutation that happens to leave a valid command is drawn again, so the
ledger must refuse every line this module returns.
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ledger.commands import parse_command

Obj = dict[str, Any]
WEIRD_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 2**63, -(2**63) - 1, 2**64 + 7, 10**40, -(10**40), 1.5, 1e308, -0.0, "", "x" * 5000,
    "ünïcødé", "😀" * 40, "\u0000", "\u202e", [], {}, [1, [2, [3]]], {"a": {"b": None}}, "1", "-5", "NaN",
)
FIELDS = ("command_id", "table_id", "round_no", "studio_time", "type", "stake_minor", "card", "seq_no", "bet_id",
          "ruleset_version", "currency", "cause", "note", "amount_minor", "accept", "mode", "seat_no",
          # configure_table
          "game", "ruleset_id", "timezone", "limits", "stake_divisible_by_min", "spots_count", "stakes_per_box_max",
          "boxes_per_player_max", "difference_max_minor")


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8", errors="surrogatepass")


def _wrong_value(rng: random.Random, obj: Obj) -> bytes:
    key = rng.choice([k for k in obj if k in FIELDS] or list(obj))
    obj[key] = rng.choice(WEIRD_VALUES)
    return _dump(obj)


def _missing(rng: random.Random, obj: Obj) -> bytes:
    required = [k for k in ("command_id", "table_id", "round_no", "studio_time", "type", "game", "ruleset_id", "currency")
                if k in obj]
    del obj[rng.choice(required)]
    return _dump(obj)


def _extra(rng: random.Random, obj: Obj) -> bytes:
    obj[rng.choice(["extra", "\u0000", "\udc80x", "ключ", "type2", "x" * 300])] = rng.choice(WEIRD_VALUES)
    return _dump(obj)


def _number(rng: random.Random, obj: Obj) -> bytes:
    key = rng.choice([k for k in ("round_no", "stake_minor", "seq_no", "ruleset_version", "amount_minor", "spots_count",
                                  "stakes_per_box_max", "boxes_per_player_max", "difference_max_minor") if k in obj])
    text = rng.choice(["NaN", "Infinity", "-Infinity", "1e999", "-1", "0", "1.0", "99999999999999999999999999999999",
                       "-99999999999999999999999999999999", "0x10", "1_000", "+1", "01"])
    return _dump({**obj, key: "@@N@@"}).replace(b'"@@N@@"', text.encode())


def _string(rng: random.Random, obj: Obj) -> bytes:
    key = rng.choice([k for k in ("command_id", "table_id", "bet_id", "card", "currency", "type", "timezone") if k in obj])
    obj[key] = rng.choice(["\u0000", "a\u0000b", "\ud800", "a\udfff", "\u00e9" * 200, "x" * 200_000, "\n", " ",
                           "\u2028", "tab\tbed", "DROP TABLE x;--", "\U0001f600", "\ufeff"])
    return _dump(obj)


def _deep(rng: random.Random, obj: Obj) -> bytes:
    depth = rng.choice([200, 1000, 5000, 50_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    nested = opener * depth + b"1" + closer * depth
    return rng.choice([nested, _dump({**obj, "note": "@@D@@"}).replace(b'"@@D@@"', nested)])


def _truncated(rng: random.Random, obj: Obj) -> bytes:
    data = _dump(obj)
    return data[: rng.randrange(0, len(data) - 1)]


def _bad_bytes(rng: random.Random, obj: Obj) -> bytes:
    data = bytearray(_dump(obj))
    junk = rng.choice([b"\xed\xa0\x80", b"\xff", b"\xc3", b"\x80\x80", b"\x00", b"\xef\xbb\xbf", b"\xfe\xff", b"\r"])
    at = rng.randrange(0, len(data))
    if rng.random() < 0.3:
        at = 0
    data[at:at] = junk
    return bytes(data)


def _escaped(rng: random.Random, obj: Obj) -> bytes:
    key = rng.choice([k for k in ("command_id", "table_id", "bet_id") if k in obj])
    escape = rng.choice(["\\u0000", "\\ud800", "\\udc00", "\\ud800\\ud800", "\\uZZZZ", "\\x41", "\\"])
    return _dump({**obj, key: "@@E@@"}).replace(b"@@E@@", escape.encode())


def _not_json(rng: random.Random, obj: Obj) -> bytes:
    return rng.choice([
        b"null", b"true", b"42", b'"open_round"', b"[]", b"{}", b"[" + _dump(obj) + b"]", _dump(obj) + _dump(obj),
        b"{'type': 'void'}", b"<xml/>", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))),
        _dump(obj).replace(b":", b"=", 1), b"\x00" * 10, b"\xef\xbb\xbf", _dump(obj) + b",",
    ])


def _limits(rng: random.Random, obj: Obj) -> bytes:
    """A configure_table's limits damaged: a bound of the wrong type or size, a field missing or extra."""
    bound = rng.choice(["min_minor", "max_minor"])
    obj["limits"] = rng.choice([
        {"main": {bound: rng.choice(WEIRD_VALUES)}}, {"main": {"min_minor": 100}}, {"main": []}, [], "main",
        {"main": {"min_minor": 1, "max_minor": 2, "extra": 1}}, {"": {"min_minor": 1, "max_minor": 2}},
        {f"b{i}": {"min_minor": 1, "max_minor": 2} for i in range(65)},
    ])
    return _dump(obj)


def _type_swap(rng: random.Random, obj: Obj) -> bytes:
    obj["type"] = rng.choice(["open_round", "place_bet", "deal_card", "decide", "follow", "pause", "resume", "void",
                              "reverse_settlement", "close_betting", "OPEN_ROUND", "settle", "",
                              "configure_table", "CONFIGURE_TABLE"])
    return _dump(obj)


MUTATIONS: tuple[Callable[[random.Random, Obj], bytes], ...] = (
    _wrong_value, _missing, _extra, _number, _string, _deep, _truncated, _bad_bytes, _escaped, _not_json, _type_swap,
    _limits,
)


def is_valid(line: bytes) -> bool:
    try:
        parse_command(line)
    except (ValidationError, ValueError, RecursionError):
        return False
    return True


def malformed(rng: random.Random, valid_line: bytes) -> bytes:
    """One line the ledger must refuse, made from `valid_line` (drawn again until invalid)."""
    while True:
        mutate = rng.choice(MUTATIONS)
        line = mutate(rng, json.loads(valid_line)).replace(b"\n", b" ")  # one feed line: no raw newline
        if not is_valid(line):
            return line

"""The body of POST /v1/commands, split into commands that no client can break.

Each command leaves here as the exact bytes the client sent for it (an NDJSON line, or
the slice of a JSON array that is one element), so the ledger judges it as it judges a
feed line: its own parser's depth limit, its own schema, a `bad_command` refusal kept
in the rejections log with the bytes as received (docs/feed.md). What is refused here
is the envelope only, as a 4xx problem (ops/service/problems.py) with a stable `code`:

- 415 `unsupported_media_type`: a content type other than JSON or NDJSON (no content
  type at all is read as JSON, as it always was);
- 413 `body_too_large` (more than `max_body_bytes`), `too_many_commands`;
- 422 `body_not_json` (the array's envelope is not JSON, or not UTF-8), `body_not_array`.

Nothing here recurses on the input: a JSON array's elements are found by the json
module's C scanner, which stops at the interpreter's recursion limit; an element deeper
than that is skipped by an iterative bracket count, and the ledger refuses it. The scan
stops at the command limit, so a million-element array costs what 10,001 elements do.
"""
from __future__ import annotations

import json
import re
from typing import Any

from domain.errorcodes import ErrorCode
from ops.service.problems import ServiceError

COMMANDS_PER_REQUEST_MAX = 10_000
# 10,000 commands of a few hundred bytes are a few MB; the largest legal command (a table
# configuration with 64 limits, a 2,000-character note) is under 10 KB.
BODY_BYTES_MAX_DEFAULT = 16 * 1024 * 1024
# A body up to this size is split on the event loop (a thread hop costs more than that);
# a larger one in a worker thread, so the loop keeps answering the other clients.
INLINE_SPLIT_BYTES_MAX = 64 * 1024
NDJSON = "application/x-ndjson"
JSON_TYPES = frozenset({"application/json", ""})  # "": no Content-Type, read as JSON as before
NDJSON_TYPES = frozenset({NDJSON, "application/ndjson", "application/jsonl"})
BOM = "\ufeff"

_WS = re.compile(r"[ \t\n\r]*")
# White space and blank lines, skipped in one step (a body of 16 million blank lines costs
# one pass of the regex engine, not a Python step per line: `line.strip()`'s white space).
_BLANK = re.compile(rb"[ \t\n\r\x0b\x0c]*+")
_SCAN: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # public in practice, untyped in typeshed; the C scanner: one value's parsed form and where it ends
# What a bracket count needs to see: strings (whose brackets do not count) and brackets. A
# string that never ends runs to the end of the text (possessive, no backtracking): else each
# of its escaped quotes would start a new scan to the end, quadratic in a hostile body.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


IntakeError = ServiceError  # a refused request envelope: the code's status, rendered as a problem

def media_type(content_type: str) -> str:
    """`application/json; charset=utf-8` -> `application/json`; raises 415 for anything not JSON or NDJSON."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind not in JSON_TYPES and kind not in NDJSON_TYPES:
        raise IntakeError(ErrorCode.UNSUPPORTED_MEDIA_TYPE,
                          f"Content-Type {kind!r}: send application/json (an array of commands) or {NDJSON}")
    return kind


def too_many() -> IntakeError:
    return IntakeError(ErrorCode.TOO_MANY_COMMANDS, f"at most {COMMANDS_PER_REQUEST_MAX} commands per request")


def split_body(body: bytes, content_type: str) -> list[tuple[bytes, Any]]:
    """The commands of a request: (the bytes as sent, the parsed value when it was cheap to
    have, else None). NDJSON: one command a non-blank line; JSON: the array's elements."""
    if media_type(content_type) in NDJSON_TYPES:
        return split_lines(body)
    return split_array(body)


def split_lines(body: bytes) -> list[tuple[bytes, Any]]:
    """The non-blank lines, each whole (its own leading white space and trailing CR kept)."""
    commands: list[tuple[bytes, Any]] = []
    pos, size = 0, len(body)
    while True:
        text_at = _BLANK.match(body, pos).end()  # type: ignore[union-attr]
        if text_at == size:
            return commands
        if len(commands) == COMMANDS_PER_REQUEST_MAX:
            raise too_many()
        start = body.rfind(b"\n", pos, text_at) + 1  # 0 when the first line is the body's start
        end = body.find(b"\n", text_at)
        end = size if end < 0 else end
        commands.append((body[start:end], None))
        pos = end


def split_array(body: bytes) -> list[tuple[bytes, Any]]:
    # surrogateescape: bytes that are not UTF-8 inside an element survive the round trip
    # exactly, and the ledger refuses that element as it refuses such a feed line.
    text = body.decode("utf-8", "surrogateescape")
    i = _WS.match(text, 1 if text.startswith(BOM) else 0).end()  # type: ignore[union-attr]
    if not text.startswith("[", i):
        try:
            _SCAN(text, i)
        except (StopIteration, ValueError, RecursionError):
            raise IntakeError(ErrorCode.BODY_NOT_JSON, f"the body is not JSON (at character {i})") from None
        raise IntakeError(ErrorCode.BODY_NOT_ARRAY, "the body must be a JSON array of commands (or NDJSON lines)")
    i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
    commands: list[tuple[bytes, Any]] = []
    if text.startswith("]", i):
        end = i + 1
    else:
        while True:
            if len(commands) == COMMANDS_PER_REQUEST_MAX:
                raise too_many()
            try:
                value, end = _SCAN(text, i)
            except RecursionError:  # nested deeper than the interpreter's limit: the ledger refuses it
                value, end = None, _skip_value(text, i)
            except (StopIteration, ValueError) as exc:
                raise IntakeError(ErrorCode.BODY_NOT_JSON, f"the body is not JSON (at character {i}: {exc})") from None
            commands.append((text[i:end].encode("utf-8", "surrogateescape"), value))
            i = _WS.match(text, end).end()  # type: ignore[union-attr]
            if text.startswith(",", i):
                i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
                continue
            if text.startswith("]", i):
                end = i + 1
                break
            raise IntakeError(ErrorCode.BODY_NOT_JSON, f"the body is not JSON (at character {i}: ',' or ']' expected)")
    if _WS.match(text, end).end() != len(text):  # type: ignore[union-attr]
        raise IntakeError(ErrorCode.BODY_NOT_JSON, f"the body is not JSON (extra data at character {end})")
    return commands


def _skip_value(text: str, start: int) -> int:
    """Where the array or object at `start` ends, by counting brackets (no recursion)."""
    depth = 0
    for match in _TOKENS.finditer(text, start):
        token = match.group()
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return match.end()
    raise IntakeError(ErrorCode.BODY_NOT_JSON, f"the body is not JSON (the value at character {start} never ends)")

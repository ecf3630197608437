"""Intake: a feed line taken in, from its text to its result.

`parse` reads a line (a refused line that holds hostile text is refused as `text_invalid`);
`Intake.take` answers a repeated command id (a duplicate, or a conflict when the payload
differs), hands a new command to its handler (ledger/handlers.py `HANDLERS`), and writes
its command-index row, and a rejection row for each refusal, to the batch's rows.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import orjson
from pydantic import ValidationError
from pydantic_core import TzInfo

from domain.errors import Refusal, refuse, require
from domain.refusals import RefusalCode
from domain.text import char_name, escaped, hostile_at, storable
from ledger import logging as ledger_logging
from ledger.batching import Raw, Result
from ledger.commands import (
    COMMAND_ADAPTER,
    CONFIG_COMMANDS,
    Command,
    ConfigureOperator,
    hostile_text,
    is_command,
    parse_command,
)
from ledger.handlers import HANDLERS
from ledger.ids import round_text_for
from ledger.library.aggregate import Stamp
from ledger.library.recorders import CommandRow, KnownCommand, LedgerRows, RejectionRow
from ledger.unit import UnitOfWork

PAYLOAD_STORED_MAX = 65_536  # characters of a refused line kept in the rejections log
INT64_MAX = 2**63 - 1
CONFLICT_MESSAGE = RefusalCode.CONCURRENCY_CONFLICT.message()


def payload_hash(cmd: Command) -> str:
    # pydantic-core's serializer emits fields in declaration order, so the same
    # payload always gives the same bytes (whatever the key order on the wire). The
    # model's serializer straight to bytes: what `model_dump_json().encode()` gives,
    # without its keyword plumbing and the str round trip (half the time per command).
    # A field added after hashes were stored (`operator_id`) is left out when absent: a command
    # that does not use it hashes as it always did, so a retry after an upgrade is a duplicate.
    # Read from the instance's dict: `getattr` on a command without the field goes through
    # pydantic's `__getattr__` and a raised AttributeError (~10 µs, most commands).
    if cmd.__dict__.get("operator_id", "") is None:
        return hashlib.sha256(cmd.__pydantic_serializer__.to_json(cmd, exclude=ADDED_FIELDS)).hexdigest()
    return hashlib.sha256(cmd.__pydantic_serializer__.to_json(cmd)).hexdigest()


ADDED_FIELDS = {"operator_id"}  # optional fields newer than the stored payload hashes


def studio_text(when: datetime) -> str:
    """`when.isoformat()`, the events' `studio_time`. A parsed command's time has pydantic's
    TzInfo, which `isoformat` asks for its offset through Python (0.63 µs a command, timeit
    in docs/benchmarks.md); orjson writes the same text in 0.42 for any offset of whole minutes (the
    only ones the feed's parser makes; an offset with seconds, which orjson would round, is
    left to `isoformat`). tests/unit/ledger/test_intake.py compares the two."""
    tz = when.tzinfo
    if type(when) is datetime and type(tz) is TzInfo and (offset := tz.utcoffset(when)) is not None \
            and not offset.seconds % 60:
        return orjson.dumps(when)[1:-1].decode()
    return when.isoformat()


def parse_all(raws: Sequence[Raw]) -> list[Command | Refusal]:
    """`parse` of each line; a line of JSON straight to the schema's validator (no two calls
    a line), the rest, and every line it refuses, through `parse`."""
    validate = COMMAND_ADAPTER.validate_json
    parsed: list[Command | Refusal] = []
    append = parsed.append
    for raw in raws:
        if isinstance(raw, (bytes, str)):
            try:
                append(validate(raw))
                continue
            except (ValidationError, ValueError, RecursionError, UnicodeError):
                pass
        append(parse(raw))
    return parsed


def parse(raw: Raw) -> Command | Refusal:
    kind = type(raw)
    if kind is not bytes and kind is not str and is_command(raw):  # a raw line: no 11-class isinstance
        return raw
    try:
        return parse_command(raw if isinstance(raw, (bytes, str)) else raw.model_dump_json())
    except ValidationError as err:
        hostile = _hostile_refusal(raw)
        if hostile is not None:
            return hostile
        if err.errors() and err.errors()[0]["type"] == "json_invalid":
            return refuse(RefusalCode.BAD_COMMAND, "json", error=err.errors()[0]['ctx'].get('error', 'invalid'))
        return refuse(RefusalCode.BAD_COMMAND, problems=escaped(describe_validation_error(err)))
    except (ValueError, RecursionError, UnicodeError) as err:  # a str the parser cannot take (e.g. surrogates)
        return _hostile_refusal(raw) or refuse(RefusalCode.BAD_COMMAND, "json", error=type(err).__name__)


def describe_validation_error(err: ValidationError) -> str:
    """`place_bet.stake_minor: Input should be a valid integer` — one clause per problem."""
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"]) or "command"
        parts.append(f"{loc}: {e['msg']}")
    more = err.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _hostile_refusal(raw: Raw) -> Refusal | None:
    """A refused line that holds hostile text anywhere (an id, a note, a key, the type; lone
    surrogates, which the schema's JSON parser refuses as JSON) is refused as `text_invalid`
    naming the field, whatever else is wrong with it: the standard library's parser, which
    takes lone surrogates, reads it again (refusals are rare; the accepted path never comes here)."""
    try:
        value = json.loads(raw) if isinstance(raw, (bytes, str)) else None
    except (ValueError, RecursionError):
        return None
    found = hostile_text(value, _type_of(value))
    if found is None:
        return None
    field, text, at = found
    return refuse(RefusalCode.TEXT_INVALID, field=escaped(field), char=char_name(text[at]), position=at + 1)


def _type_of(value: object) -> tuple[str, ...]:
    """A field is named as the schema names it, `void.note`, when the command's type is readable."""
    kind = value.get("type") if isinstance(value, dict) else None
    return (kind,) if isinstance(kind, str) and hostile_at(kind) is None else ()


def round_text(cmd: Command) -> str | None:
    """The round a command is about, as text (None for a command about the table as a whole)."""
    return None if type(cmd) in CONFIG_COMMANDS else round_text_for(cmd.table_id, cmd.round_no)  # type: ignore[union-attr]


def where_of(cmd: Command) -> str:
    """What a command is about, for its log lines: `table#round`, a table, an operator."""
    if type(cmd) is ConfigureOperator:
        return f"operator:{cmd.operator_id}"
    round_no = getattr(cmd, "round_no", None)
    return cmd.table_id if round_no is None else f"{cmd.table_id}#{round_no}"


def conflict(cmd: Command | Refusal) -> Result:
    """A command that met another writer's change however often it was tried."""
    if isinstance(cmd, Refusal):
        return Result(status="conflict", command_id=None, code="concurrency_conflict", message=CONFLICT_MESSAGE)
    return Result(
        status="conflict", command_id=cmd.command_id, code="concurrency_conflict", message=CONFLICT_MESSAGE,
        round_id=round_text(cmd),
    )


@dataclass
class Intake:
    """One batch's commands, taken in order: the rows they write, the ids they used."""

    unit: UnitOfWork
    known: dict[str, KnownCommand]  # command ids already in the store
    debug: bool = True  # bind command ids for log lines only when per-command lines are logged
    rows: LedgerRows = field(default_factory=LedgerRows)
    seen: dict[str, tuple[str, Result]] = field(default_factory=dict)  # command ids handled in this batch

    def take(self, cmd: Command | Refusal, raw: Raw) -> Result:
        # The handler first: a command's class finds it in C, where `isinstance(cmd, Refusal)`
        # fails only after looking `__class__` up on the pydantic model (~0.1 µs a command).
        kind = type(cmd)
        handler = HANDLERS.get(kind)
        if handler is None:
            if isinstance(cmd, Refusal):
                return self.refuse(None, raw, cmd, None)
            handler = HANDLERS[kind]  # no handler for this class: a KeyError, as ever
        if TYPE_CHECKING:  # a Refusal has no handler (no check at run time: the lookup was it)
            assert not isinstance(cmd, Refusal)
        cid = cmd.command_id
        digest = payload_hash(cmd)
        prior = self.seen.get(cid)
        if prior is None and cid in self.known:
            k = self.known[cid]
            prior = (k.payload_hash, Result(status=k.status, command_id=cid, code=k.code, round_id=k.round_id))
        if prior is not None:
            return self._repeat(cmd, raw, digest, prior)
        rtext = None if kind in CONFIG_COMMANDS else round_text_for(cmd.table_id, cmd.round_no)  # type: ignore[union-attr]
        recorded: list[str] = []  # the names of the events the command records (Stamp.recorded)
        # The per-command tuples made by tuple.__new__: a NamedTuple's own __new__ is a Python
        # function (three a command, ~0.12 µs each more).
        stamp = _new(Stamp, (cid, studio_text(cmd.studio_time), self.unit.recorded_at, recorded))
        try:
            if self.debug:
                where = where_of(cmd)
                with ledger_logging.bound(command_id=cid, round=where):
                    consequence = handler(cmd, self.unit, stamp)
            else:
                consequence = handler(cmd, self.unit, stamp)
        except Refusal as refusal:
            require(not recorded, f"command {cid} was refused after recording events: {refusal}")
            result = self.refuse(cmd, raw, refusal, rtext)
        else:
            events = tuple(recorded) if len(recorded) < 2 else event_names(recorded)
            if consequence is not None:  # a human error: refused, but the round got its consequence
                result = self.refuse(cmd, raw, consequence, rtext, events)
            else:
                result = _new(Result, ("accepted", cid, None, "", rtext, events, None))
        self.rows.commands.append(_new(CommandRow, (cid, result[4], cmd.type, digest, result[0], result[2])))
        self.seen[cid] = (digest, result)
        return result

    def _repeat(self, cmd: Command, raw: Raw, digest: str, prior: tuple[str, Result]) -> Result:
        """A command id seen before: the same payload is a duplicate, another one a conflict."""
        cid, first = cmd.command_id, prior[1]
        if prior[0] != digest:
            refusal = refuse(RefusalCode.COMMAND_ID_CONFLICT, command_id=cid, status=first.status)
            return self.refuse(cmd, raw, refusal, first.round_id)
        return Result(
            status="duplicate", command_id=cid, code=first.code,
            message=f"command {cid} was already handled ({first.status}); nothing recorded",
            round_id=first.round_id, original_status=first.status,
        )

    def refuse(self, cmd: Command | None, raw: Raw, refusal: Refusal, round_id: str | None,
               events: tuple[str, ...] = ()) -> Result:
        """The refusal's result, and its row in the rejections log."""
        ids: Ids = _peek(raw)
        if cmd is not None:
            ids = (cmd.command_id, getattr(cmd, "table_id", None), getattr(cmd, "round_no", None), cmd.type)
        self.rows.rejections.append(
            RejectionRow(*ids, code=refusal.code, message=storable(refusal.message), payload=_raw_text(raw),
                         received_at=_now())
        )
        return Result(
            status="refused", command_id=ids[0], code=refusal.code, message=refusal.message,
            round_id=round_id, events=events,
        )


_new = tuple.__new__

# The aggregates' prefixes (EVENT_NAME_PREFIX) in the order a command's handler loads them.
_LOAD_ORDER = {"Shoe": 1, "Table": 2}


def event_names(recorded: list[str]) -> tuple[str, ...]:
    """A command's events as its result names them: its round's first, then its shoe's, then its
    table's (the order its handler loads them), each aggregate's in the order recorded."""
    if len(recorded) < 2:
        return tuple(recorded)
    return tuple(sorted(recorded, key=_aggregate_rank))


def _aggregate_rank(name: str) -> int:
    prefix, dot, _ = name.partition(".")
    return _LOAD_ORDER.get(prefix, 0) if dot else 0


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _raw_text(raw: Raw) -> str:
    """A refused line as text for the rejections log: bytes that are not UTF-8 kept as
    escapes (the evidence stays readable), a very long line cut with a note of its length."""
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", errors="backslashreplace")
    else:
        text = raw if isinstance(raw, str) else raw.model_dump_json()
    if len(text) > PAYLOAD_STORED_MAX:
        text = text[:PAYLOAD_STORED_MAX] + f"... [cut: {len(text)} characters in all]"
    return storable(text)


Ids = tuple[str | None, str | None, int | None, str | None]  # command_id, table_id, round_no, type


def _peek(raw: Raw) -> Ids:
    """Best-effort ids from a command that failed validation, for the rejections log.
    Any input at all: too deep, not JSON, ids the store cannot hold give no id."""
    try:
        data = json.loads(raw) if isinstance(raw, (bytes, str)) else None
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        data = None
    if not isinstance(data, dict):
        return (None, None, None, None)
    return (_field(data, "command_id"), _field(data, "table_id"), _number(data, "round_no"), _field(data, "type"))


def _field(data: dict[str, object], key: str) -> str | None:
    value = data.get(key)
    return storable(value[:128]) if isinstance(value, str) else None


def _number(data: dict[str, object], key: str) -> int | None:
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and -INT64_MAX <= value <= INT64_MAX:
        return value
    return None  # beyond a 64-bit column: the payload keeps it

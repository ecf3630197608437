"""The read side's vocabulary: every stored event as a frozen, typed record.

This is the ONE place that knows the stored event names (topics) and field
names (docs/events.md). A stored event is decoded once, by `decode`, into a
record of its own type; readers dispatch on that type (`match` / isinstance)
and read attributes, never strings. `fields_of` gives back the stored fields
as plain data (the audit chain hashes them exactly as stored).

The record types are derived from the ledger's event classes (one declaration
per event: the write side's; see "derivation" below), with the write side's
field names, one module per aggregate (ledger/records_round.py, records_shoe.py,
records_table.py; the lines inside events in ledger/records_lines.py), and read
from here: this module re-exports them. Every record starts with the same envelope:
`position` (global, 1-based), `originator_id` (the round, shoe or table UUID as
text), `originator_version` (1-based within the aggregate), `timestamp` (the aware
datetime the ledger recorded), `command_id` and `studio_time` (ISO 8601 text).
Records are NamedTuples: cheap to build, immutable, and nested lines
(`Posting`, `StakeMove`, `SettlementLine`, `Refund`) are tuples of NamedTuples.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from operator import itemgetter
from typing import Any, NamedTuple, TypeAlias, TypeVar

from domain.errors import require
from domain.model import StakeMove
from ledger import records_operator, records_round, records_shoe, records_table
from ledger.records_lines import Posting as Posting
from ledger.records_lines import Postings as Postings
from ledger.records_lines import Refund as Refund
from ledger.records_lines import SettlementLine as SettlementLine
from ledger.records_operator import OperatorConfigured as OperatorConfigured
from ledger.records_round import BetPlaced as BetPlaced
from ledger.records_round import BettingClosed as BettingClosed
from ledger.records_round import CardDealt as CardDealt
from ledger.records_round import DecisionTaken as DecisionTaken
from ledger.records_round import FollowDecided as FollowDecided
from ledger.records_round import Interrupted as Interrupted
from ledger.records_round import Opened as Opened
from ledger.records_round import Paused as Paused
from ledger.records_round import Resumed as Resumed
from ledger.records_round import Settled as Settled
from ledger.records_round import SettlementReversed as SettlementReversed
from ledger.records_round import TableApplied as TableApplied
from ledger.records_round import Voided as Voided
from ledger.records_shoe import ShoeCardsRecorded as ShoeCardsRecorded
from ledger.records_shoe import ShoeRetired as ShoeRetired
from ledger.records_shoe import ShoeRoundStarted as ShoeRoundStarted
from ledger.records_shoe import ShoeStarted as ShoeStarted
from ledger.records_table import TableConfigured as TableConfigured
from ledger.records_table import TableSeatingChanged as TableSeatingChanged

ROUND_TOPIC_PREFIX = "ledger.round:Round."
SHOE_TOPIC_PREFIX = "ledger.shoe:Shoe."
TABLE_TOPIC_PREFIX = "ledger.table:Table."
TABLE_CONFIGURED_TOPIC = TABLE_TOPIC_PREFIX + "Configured"
OPERATOR_TOPIC_PREFIX = "ledger.operator:Operator."
ENVELOPE = ("position", "originator_id", "originator_version", "timestamp", "command_id", "studio_time")
LIBRARY_KEYS = frozenset({"originator_id", "originator_version", "timestamp"})  # the library's envelope
# Record type -> its stored event name (the topic after the module), as audit files
# and timelines show it.
EVENT_NAMES: dict[type, str] = {**records_round.EVENT_NAMES, **records_shoe.EVENT_NAMES, **records_table.EVENT_NAMES,
                                **records_operator.EVENT_NAMES}



class Unknown(NamedTuple):
    """A stored event outside this vocabulary (a replay reports it; views skip it)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str | None
    studio_time: str | None
    topic: str
    fields: dict[str, Any]


RoundRecord: TypeAlias = (Opened | TableApplied | BetPlaced | BettingClosed | CardDealt | DecisionTaken
                          | FollowDecided | Paused | Interrupted | Resumed | Voided | Settled | SettlementReversed)
ShoeRecord: TypeAlias = ShoeStarted | ShoeRoundStarted | ShoeCardsRecorded | ShoeRetired
TableRecord: TypeAlias = TableConfigured | TableSeatingChanged
OperatorRecord: TypeAlias = OperatorConfigured
Record: TypeAlias = RoundRecord | ShoeRecord | TableRecord | OperatorRecord | Unknown
RecordType: TypeAlias = type[Record]

ROUND_TYPES: tuple[type[RoundRecord], ...] = (
    Opened, BetPlaced, BettingClosed, CardDealt, DecisionTaken, FollowDecided, Paused, Resumed, Voided, Settled,
    SettlementReversed, Interrupted)
# Round events only a round at a configured table records (kept apart: a feed without
# table configurations records exactly ROUND_TYPES, as it always did).
TABLE_ROUND_TYPES: tuple[type[RoundRecord], ...] = (TableApplied,)
SHOE_TYPES: tuple[type[ShoeRecord], ...] = (ShoeStarted, ShoeRoundStarted, ShoeCardsRecorded, ShoeRetired)
TABLE_TYPES: tuple[type[TableRecord], ...] = (TableConfigured, TableSeatingChanged)
OPERATOR_TYPES: tuple[type[OperatorRecord], ...] = (OperatorConfigured,)
SHORT_NAMES: dict[type, str] = {t: n.partition(".")[2] for t, n in EVENT_NAMES.items()}
_TYPES_BY_NAME = {n: t for t, n in EVENT_NAMES.items()}


def event_name(record: Record) -> str:
    """`"Round.Settled"`, `"Shoe.Started"`; an unknown event's stored name."""
    if type(record) is Unknown:
        return record.topic.rpartition(":")[2]
    return EVENT_NAMES[type(record)]


def short_name(record: Record) -> str:
    """`"Settled"` (the name inside its aggregate)."""
    return event_name(record).partition(".")[2]


def is_round(record: Record) -> bool:
    return type(record) in _IS_ROUND


_IS_ROUND = frozenset((*ROUND_TYPES, *TABLE_ROUND_TYPES))


def type_of_topic(topic: str) -> RecordType:
    """The record type a stored topic decodes to (`Unknown` outside the vocabulary)."""
    name = topic.rpartition(":")[2]
    if not (topic.startswith(ROUND_TOPIC_PREFIX) or topic.startswith(SHOE_TOPIC_PREFIX)
            or topic.startswith(TABLE_TOPIC_PREFIX) or topic.startswith(OPERATOR_TOPIC_PREFIX)):
        return Unknown
    return _TYPES_BY_NAME.get(name, Unknown)


def is_round_topic(topic: str) -> bool:
    return topic.startswith(ROUND_TOPIC_PREFIX)


# ------------------------------------------------------------------ decode
# Decoding is on every reader's hot path: values are picked by C-level itemgetters
# and tuples built with tuple.__new__ (no per-field Python call). Every stored field
# must be present: a change of an event's shape is upcast by the ledger
# (`class_version` + `upcast_vN_vM`) before it reaches here.
L = TypeVar("L", bound=tuple[Any, ...])
_new = tuple.__new__


def _picker(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """mapping -> the values of `names`, as a tuple (itemgetter returns a bare value for one name)."""
    if not names:
        return lambda d: ()
    if len(names) == 1:
        name = names[0]
        return lambda d: (d[name],)
    return itemgetter(*names)


def _lines(cls: type[L]) -> Callable[[Any], tuple[L, ...]]:
    """A stored list of line dicts -> a tuple of `cls` (fields in `cls` order)."""
    pick = _picker(cls._fields)  # type: ignore[attr-defined]

    def convert(items: Any) -> tuple[L, ...]:
        if not items:
            return ()
        return tuple([_new(cls, pick(item)) for item in items])

    return convert


def _cards(items: Any) -> tuple[str, ...]:
    return tuple(items or ())


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "postings": _lines(Posting), "stake_moves": _lines(StakeMove), "results": _lines(SettlementLine),
    "refunds": _lines(Refund), "cards": _cards, "currencies": _cards, "jurisdictions": _cards,
}
Decoder = Callable[[int, str, Mapping[str, Any]], Record]
_ENVELOPE_NAMES = ENVELOPE[2:]  # as stored (the id is read from the row)


def _decoder(cls: type[Record]) -> Decoder:
    """The decoder of one record type: its stored fields picked by name, nested lines typed.
    One itemgetter picks the envelope and the event's own fields at once."""
    own = cls._fields[len(ENVELOPE):]
    defaults: dict[str, Any] = cls._field_defaults
    if defaults:  # fields an event stores only when they differ from their default (the last ones)
        own = own[:len(own) - len(defaults)]
    pick = _picker((*_ENVELOPE_NAMES, *own))
    if defaults:
        plain = pick
        filled = tuple(defaults.items())

        def pick(d: Any) -> tuple[Any, ...]:
            if len(filled) == 1:  # BetPlaced.operator_id: one lookup, no loop
                return (*plain(d), d.get(filled[0][0], filled[0][1]))
            return (*plain(d), *[d.get(name, value) for name, value in filled])
    first = len(_ENVELOPE_NAMES)
    nested = [(first + i, _CONVERT[name]) for i, name in enumerate(own) if name in _CONVERT]

    if not nested:
        def decode(position: int, originator_id: str, d: Mapping[str, Any]) -> Record:
            return _new(cls, (position, originator_id, *pick(d)))
        return decode

    def decode_nested(position: int, originator_id: str, d: Mapping[str, Any]) -> Record:
        values = list(pick(d))
        for i, convert in nested:
            values[i] = convert(values[i])
        return _new(cls, (position, originator_id, *values))

    return decode_nested


def _unknown(topic: str) -> Decoder:
    def decode(position: int, originator_id: str, d: Mapping[str, Any]) -> Record:
        fields = stored_fields(d)
        return Unknown(position, originator_id, d["originator_version"], d["timestamp"], fields.get("command_id"),
                       fields.get("studio_time"), topic, fields)
    return decode


_DECODERS: dict[type, Decoder] = {
    t: _decoder(t) for t in (*ROUND_TYPES, *TABLE_ROUND_TYPES, *SHOE_TYPES, *TABLE_TYPES, *OPERATOR_TYPES)}


def stored_fields(state: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded event state without the library's envelope: the fields exactly as stored."""
    return {k: v for k, v in state.items() if k not in LIBRARY_KEYS}


def decoder_for(topic: str) -> Decoder:
    """The decoder of a stored topic: `(position, originator id text, event state) -> Record`,
    where the state is the library's decoded event dict (with originator_version, timestamp)."""
    kind = type_of_topic(topic)
    return _unknown(topic) if kind is Unknown else _DECODERS[kind]


def decode(position: int, topic: str, state: Mapping[str, Any]) -> Record:
    """One decoded stored event -> its record (`state` as the library decodes it)."""
    return decoder_for(topic)(position, str(state["originator_id"]), state)


# ------------------------------------------------------------------ back to stored form
def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        if hasattr(value, "_asdict"):
            return {k: _plain(v) for k, v in value._asdict().items()}
        return [_plain(v) for v in value]
    return value


def fields_of(record: Record) -> dict[str, Any]:
    """The stored fields of a record (all but the library's envelope), as plain
    data: lines as dicts, tuples as lists. The audit chain hashes exactly this."""
    if type(record) is Unknown:
        return dict(record.fields)
    out = {"command_id": record.command_id, "studio_time": record.studio_time}
    defaults = record._field_defaults
    for name in record._fields[len(ENVELOPE):]:
        value = getattr(record, name)
        if name not in defaults or value != defaults[name]:  # a default is not stored (STORED_DEFAULTS)
            out[name] = _plain(value)
    return out


def without_defaults(kind: RecordType, fields: dict[str, Any]) -> dict[str, Any]:
    """Stored fields as stored: without the fields an upcast added at their default (an event
    holding its default is stored without it, ledger/library/eventstore.py)."""
    defaults = kind._field_defaults if kind is not Unknown else {}
    for name, value in defaults.items():
        if name in fields and fields[name] == value:
            del fields[name]
    return fields


def postings_of(record: Record) -> Postings:
    """The record's postings (none for events that move no money)."""
    postings: Postings = getattr(record, "postings", ())
    return postings


def record_of(kind: type[Record], position: int, originator_id: str, originator_version: int, timestamp: datetime,
              fields: Mapping[str, Any]) -> Record:
    """A record built from stored-form fields (tests and tools that make events by hand);
    a field not given reads as None."""
    require(kind is not Unknown, "an unknown event has no fields to build from")
    blank = dict.fromkeys(("command_id", "studio_time", *kind._fields[len(ENVELOPE):]))
    state = {**blank, "originator_version": originator_version, "timestamp": timestamp, **fields}
    return _DECODERS[kind](position, originator_id, state)


# ------------------------------------------------------------------ derivation
# The record types are derived from the event classes the ledger writes (ledger/round.py,
# shoe.py, table.py), one module per aggregate (DERIVED_MODULES): the same names, the same
# fields in the same order, lines typed (LINE_FIELDS). Written by
# `python -m ledger.records --write`; tests/unit/ledger/test_records_derived.py fails when a
# write-side declaration changes and a module was not rewritten. A new event's record is
# imported above by hand, and joins its aggregate's union and types.
DERIVED_MODULES: dict[str, str] = {
    "ledger.round": "records_round.py", "ledger.shoe": "records_shoe.py", "ledger.table": "records_table.py",
    "ledger.operator": "records_operator.py"}
# A stored field holding lines (a list of dicts) -> its type as read. Every other field reads
# as it is declared on the write side.
LINE_FIELDS: dict[str, str] = {
    "postings": "Postings", "stake_moves": "tuple[StakeMove, ...]", "results": "tuple[SettlementLine, ...]",
    "refunds": "tuple[Refund, ...]", "cards": "tuple[str, ...]", "currencies": "tuple[str, ...]",
    "jurisdictions": "tuple[str, ...]",
}
# The names a derived module imports when its fields use them, and from where.
DERIVED_IMPORTS = (("domain.model", "StakeMove"), ("ledger.records_lines", "Postings"),
                   ("ledger.records_lines", "Refund"), ("ledger.records_lines", "SettlementLine"))


def written_events() -> list[tuple[str, type]]:
    """(record name, event class) for every event class the ledger writes, in declaration
    order: a round's events by their own name, a shoe's and a table's prefixed."""
    from ledger.operator import Operator  # the write side; imported only to derive from it
    from ledger.round import Round
    from ledger.shoe import Shoe
    from ledger.table import Table

    found: list[tuple[str, type]] = []
    for aggregate, prefix in ((Round, ""), (Shoe, "Shoe"), (Table, "Table"), (Operator, "Operator")):
        base = vars(aggregate)["Event"]
        found += [(prefix + name, cls) for name, cls in vars(aggregate).items()
                  if isinstance(cls, type) and issubclass(cls, base) and cls is not base]
    return found


def derived_sources() -> dict[str, str]:
    """Each derived module's file name (in ledger/) -> its text: the record classes of its
    aggregate's `written_events`, and their stored names."""
    by_module: dict[str, list[tuple[str, type]]] = {module: [] for module in DERIVED_MODULES}
    for name, cls in written_events():
        by_module[cls.__module__].append((name, cls))
    return {DERIVED_MODULES[module]: _derived_module(module, events) for module, events in by_module.items()}


def _derived_module(module: str, events: list[tuple[str, type]]) -> str:
    envelope = ("    position: int\n    originator_id: str\n    originator_version: int\n"
                "    timestamp: datetime\n    command_id: str\n    studio_time: str\n")
    parts: list[str] = []
    for name, cls in events:
        lines = []
        defaults = getattr(cls, "STORED_DEFAULTS", {})
        for field, written in vars(cls).get("__annotations__", {}).items():
            require(field in LINE_FIELDS or "list[" not in str(written),
                    f"{cls.__qualname__}.{field} holds lines: give it a read type in LINE_FIELDS")
            default = f" = {defaults[field]!r}" if field in defaults else ""  # absent when stored: the default
            lines.append(f"    {field}: {LINE_FIELDS.get(field, written)}{default}\n")
        parts.append(f"class {name}(NamedTuple):\n    \"\"\"`{cls.__qualname__}` as read ({cls.__module__}).\"\"\"\n\n"
                     + envelope + "".join(lines))
    names = "".join(f"    {name}: \"{cls.__qualname__}\",\n" for name, cls in events)
    body = "\n\n".join(parts) + ("\n\n# Record type -> its stored event name (the topic after the module), as audit files\n"
                                 "# and timelines show it.\nEVENT_NAMES: dict[type, str] = {\n" + names + "}\n")
    typing = "Any, NamedTuple" if re.search(r"\bAny\b", body) else "NamedTuple"
    imported: dict[str, list[str]] = {}
    for source, name in DERIVED_IMPORTS:
        if re.search(rf"\b{name}\b", body):
            imported.setdefault(source, []).append(name)
    own = "".join(f"from {source} import {', '.join(names)}\n" for source, names in imported.items())
    return (f'"""The records of {module.replace(".", "/")}.py\'s events, as read (ledger/records.py re-exports them).\n\n'
            "Derived from the event classes by `python -m ledger.records --write`: do not edit by hand\n"
            '(tests/unit/ledger/test_records_derived.py fails when this file is not what it derives).\n"""\n'
            f"from __future__ import annotations\n\nfrom datetime import datetime\nfrom typing import {typing}\n"
            + ("\n" + own if own else "") + "\n\n" + body)


def _rewrite() -> list[str]:
    """Write each derived module that differs from `derived_sources()`; the files rewritten."""
    folder = os.path.dirname(os.path.abspath(__file__))
    changed = []
    for name, new in derived_sources().items():
        path = os.path.join(folder, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if new != old:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            changed.append(name)
    return changed


if __name__ == "__main__":
    import sys

    if "--write" in sys.argv:
        changed = _rewrite()
        print("rewritten: " + ", ".join(changed) if changed else "unchanged")
    else:
        print("".join(derived_sources().values()), end="")

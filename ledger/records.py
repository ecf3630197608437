"""The read side's vocabulary: every stored event as a frozen, typed record.

This is the ONE place that knows the stored event names (topics) and field
names (docs/events.md). A stored event is decoded once, by `decode`, into a
record of its own type; readers dispatch on that type (`match` / isinstance)
and read attributes, never strings. `fields_of` gives back the stored fields
as plain data (the audit chain hashes them exactly as stored).

The record types are derived from the ledger's event classes (one declaration
per event: the write side's; see "event records" below), with the write side's
field names. Every record starts with the same envelope: `position` (global,
1-based), `originator_id` (the round, shoe or table UUID as text),
`originator_version` (1-based within the aggregate), `timestamp` (the aware
datetime the ledger recorded), `command_id` and `studio_time` (ISO 8601 text).
Records are NamedTuples: cheap to build, immutable, and nested lines
(`Posting`, `StakeMove`, `SettlementLine`, `Refund`) are tuples of NamedTuples.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from operator import itemgetter
from typing import Any, NamedTuple, TypeAlias, TypeVar

from domain.errors import require
from domain.model import BetResult, StakeMove
from domain.money import Leg

ROUND_TOPIC_PREFIX = "ledger.round:Round."
SHOE_TOPIC_PREFIX = "ledger.shoe:Shoe."
TABLE_TOPIC_PREFIX = "ledger.table:Table."
TABLE_CONFIGURED_TOPIC = TABLE_TOPIC_PREFIX + "Configured"
ENVELOPE = ("position", "originator_id", "originator_version", "timestamp", "command_id", "studio_time")
LIBRARY_KEYS = frozenset({"originator_id", "originator_version", "timestamp"})  # the library's envelope


# ------------------------------------------------------------------ lines inside events
# The values the ledger writes as lines are the domain's own (`Leg.as_dict`,
# `BetResult.as_dict`, the moves of `moves_to_dicts`), read back as the same types.
Posting = Leg  # one leg: `amount_minor > 0` increases `account` (`player:`, `round:`, `house:`)
SettlementLine = BetResult  # one bet's result in a settlement


class Refund(NamedTuple):
    """A stake handed back when a round is voided (written by `Round._void` as a dict)."""

    bet_id: str
    player_id: str
    amount_minor: int


Postings: TypeAlias = tuple[Posting, ...]
# A stored field holding lines (a list of dicts) -> its type as read. Every other field reads
# as it is declared on the write side.
LINE_FIELDS: dict[str, str] = {
    "postings": "Postings", "stake_moves": "tuple[StakeMove, ...]", "results": "tuple[SettlementLine, ...]",
    "refunds": "tuple[Refund, ...]", "cards": "tuple[str, ...]",
}

# ------------------------------------------------------------------ event records
# Derived from the event classes the ledger writes (ledger/round.py, shoe.py, table.py):
# the same names, the same fields in the same order, lines typed (LINE_FIELDS). Written by
# `python -m ledger.records --write`; tests/unit/ledger/test_records_derived.py fails when a
# write-side declaration changes and this copy was not rewritten.
# BEGIN DERIVED
class Opened(NamedTuple):
    """`Round.Opened` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    round_no: int
    game: str
    ruleset_id: str
    ruleset_version: int
    ruleset_hash: str
    currency: str
    shoe_id: str
    round_in_shoe: int
    dealer_id: str


class TableApplied(NamedTuple):
    """`Round.TableApplied` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    config_version: int
    config_hash: str
    settings: dict[str, Any]


class BetPlaced(NamedTuple):
    """`Round.BetPlaced` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    bet_id: str
    player_id: str
    spot: str
    bet_type: str
    stake_minor: int
    mode: str | None
    seat_no: int | None
    postings: Postings


class BettingClosed(NamedTuple):
    """`Round.BettingClosed` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str


class CardDealt(NamedTuple):
    """`Round.CardDealt` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    card: str
    target: str
    seq_no: int


class DecisionTaken(NamedTuple):
    """`Round.DecisionTaken` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    hand: str
    action: str
    source: str
    amount_minor: int | None
    stake_moves: tuple[StakeMove, ...]
    postings: Postings


class FollowDecided(NamedTuple):
    """`Round.FollowDecided` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    bet_id: str
    kind: str
    accept: bool
    stake_moves: tuple[StakeMove, ...]
    postings: Postings


class Paused(NamedTuple):
    """`Round.Paused` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    flag_code: str | None


class Interrupted(NamedTuple):
    """`Round.Interrupted` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    player_id: str
    action: str


class Resumed(NamedTuple):
    """`Round.Resumed` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    by: str
    note: str


class Voided(NamedTuple):
    """`Round.Voided` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    refunds: tuple[Refund, ...]
    postings: Postings


class Settled(NamedTuple):
    """`Round.Settled` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    settlement_no: int
    ruleset_id: str
    ruleset_version: int
    results: tuple[SettlementLine, ...]
    postings: Postings


class SettlementReversed(NamedTuple):
    """`Round.SettlementReversed` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    settlement_no: int
    by: str
    reason: str
    postings: Postings


class ShoeStarted(NamedTuple):
    """`Shoe.Started` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    shoe_id: str
    game: str
    decks: int


class ShoeRoundStarted(NamedTuple):
    """`Shoe.RoundStarted` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    round_id: str
    round_no: int
    round_in_shoe: int


class ShoeCardsRecorded(NamedTuple):
    """`Shoe.CardsRecorded` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    round_id: str
    cards: tuple[str, ...]


class ShoeRetired(NamedTuple):
    """`Shoe.Retired` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    round_id: str
    cause: str


class TableConfigured(NamedTuple):
    """`Table.Configured` as read (ledger.table)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    config_version: int
    config_hash: str
    game: str
    ruleset_id: str
    ruleset_version: int
    currency: str
    timezone: str
    settings: dict[str, Any]


class TableSeatingChanged(NamedTuple):
    """`Table.SeatingChanged` as read (ledger.table)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    round_id: str
    round_no: int
    voided: bool
    seating: dict[str, Any]


# Record type -> its stored event name (the topic after the module), as audit files
# and timelines show it.
EVENT_NAMES: dict[type, str] = {
    Opened: "Round.Opened",
    TableApplied: "Round.TableApplied",
    BetPlaced: "Round.BetPlaced",
    BettingClosed: "Round.BettingClosed",
    CardDealt: "Round.CardDealt",
    DecisionTaken: "Round.DecisionTaken",
    FollowDecided: "Round.FollowDecided",
    Paused: "Round.Paused",
    Interrupted: "Round.Interrupted",
    Resumed: "Round.Resumed",
    Voided: "Round.Voided",
    Settled: "Round.Settled",
    SettlementReversed: "Round.SettlementReversed",
    ShoeStarted: "Shoe.Started",
    ShoeRoundStarted: "Shoe.RoundStarted",
    ShoeCardsRecorded: "Shoe.CardsRecorded",
    ShoeRetired: "Shoe.Retired",
    TableConfigured: "Table.Configured",
    TableSeatingChanged: "Table.SeatingChanged",
}
# END DERIVED


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
Record: TypeAlias = RoundRecord | ShoeRecord | TableRecord | Unknown
RecordType: TypeAlias = type[Record]

ROUND_TYPES: tuple[type[RoundRecord], ...] = (
    Opened, BetPlaced, BettingClosed, CardDealt, DecisionTaken, FollowDecided, Paused, Resumed, Voided, Settled,
    SettlementReversed, Interrupted)
# Round events only a round at a configured table records (kept apart: a feed without
# table configurations records exactly ROUND_TYPES, as it always did).
TABLE_ROUND_TYPES: tuple[type[RoundRecord], ...] = (TableApplied,)
SHOE_TYPES: tuple[type[ShoeRecord], ...] = (ShoeStarted, ShoeRoundStarted, ShoeCardsRecorded, ShoeRetired)
TABLE_TYPES: tuple[type[TableRecord], ...] = (TableConfigured, TableSeatingChanged)
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
            or topic.startswith(TABLE_TOPIC_PREFIX)):
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
    "refunds": _lines(Refund), "cards": _cards,
}
Decoder = Callable[[int, str, Mapping[str, Any]], Record]
_ENVELOPE_NAMES = ENVELOPE[2:]  # as stored (the id is read from the row)


def _decoder(cls: type[Record]) -> Decoder:
    """The decoder of one record type: its stored fields picked by name, nested lines typed.
    One itemgetter picks the envelope and the event's own fields at once."""
    own = cls._fields[len(ENVELOPE):]
    pick = _picker((*_ENVELOPE_NAMES, *own))
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


_DECODERS: dict[type, Decoder] = {t: _decoder(t) for t in (*ROUND_TYPES, *TABLE_ROUND_TYPES, *SHOE_TYPES, *TABLE_TYPES)}


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
    for name in record._fields[len(ENVELOPE):]:
        out[name] = _plain(getattr(record, name))
    return out


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
DERIVED_BEGIN = "# BEGIN DERIVED\n"
DERIVED_END = "# END DERIVED\n"


def written_events() -> list[tuple[str, type]]:
    """(record name, event class) for every event class the ledger writes, in declaration
    order: a round's events by their own name, a shoe's and a table's prefixed."""
    from ledger.round import Round  # the write side; imported only to derive from it
    from ledger.shoe import Shoe
    from ledger.table import Table

    found: list[tuple[str, type]] = []
    for aggregate, prefix in ((Round, ""), (Shoe, "Shoe"), (Table, "Table")):
        base = vars(aggregate)["Event"]
        found += [(prefix + name, cls) for name, cls in vars(aggregate).items()
                  if isinstance(cls, type) and issubclass(cls, base) and cls is not base]
    return found


def derived_source() -> str:
    """The record classes of `written_events`, as this module declares them."""
    envelope = ("    position: int\n    originator_id: str\n    originator_version: int\n"
                "    timestamp: datetime\n    command_id: str\n    studio_time: str\n")
    parts: list[str] = []
    for name, cls in written_events():
        lines = []
        for field, written in vars(cls).get("__annotations__", {}).items():
            require(field in LINE_FIELDS or "list[" not in str(written),
                    f"{cls.__qualname__}.{field} holds lines: give it a read type in LINE_FIELDS")
            lines.append(f"    {field}: {LINE_FIELDS.get(field, written)}\n")
        parts.append(f"class {name}(NamedTuple):\n    \"\"\"`{cls.__qualname__}` as read ({cls.__module__}).\"\"\"\n\n"
                     + envelope + "".join(lines))
    names = "".join(f"    {name}: \"{cls.__qualname__}\",\n" for name, cls in written_events())
    return "\n\n".join(parts) + ("\n\n# Record type -> its stored event name (the topic after the module), as audit files\n"
                                 "# and timelines show it.\nEVENT_NAMES: dict[type, str] = {\n" + names + "}\n")


def _rewrite(path: str) -> bool:
    """Put `derived_source()` between the markers of this module's file; True if it changed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, rest = text.split(DERIVED_BEGIN)
    _, tail = rest.split(DERIVED_END)
    new = head + DERIVED_BEGIN + derived_source() + DERIVED_END + tail
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


if __name__ == "__main__":
    import sys

    changed = _rewrite(__file__) if "--write" in sys.argv else None
    print("rewritten" if changed else "unchanged" if changed is False else derived_source())

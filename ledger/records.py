"""The read side's vocabulary: every stored event as a frozen, typed record.

This is the ONE place that knows the stored event names (topics) and field
names (docs/events.md). A stored event is decoded once, by `decode`, into a
record of its own type; readers dispatch on that type (`match` / isinstance)
and read attributes, never strings. `fields_of` gives back the stored fields
as plain data (the audit chain hashes them exactly as stored).

Every record starts with the same envelope: `position` (global, 1-based),
`aggregate_id` (the round or shoe UUID as text), `version` (1-based within the
aggregate), `server_time` (aware datetime the ledger recorded), `command_id`
and `studio_time` (ISO 8601 text). Records are NamedTuples: cheap to build,
immutable, and nested lines (`Posting`, `StakeMove`, `SettlementLine`,
`Refund`) are tuples of NamedTuples.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from operator import itemgetter
from typing import Any, NamedTuple, TypeAlias, TypeVar

from domain.errors import require

ROUND_TOPIC_PREFIX = "ledger.round:Round."
SHOE_TOPIC_PREFIX = "ledger.shoe:Shoe."
TABLE_TOPIC_PREFIX = "ledger.table:Table."
TABLE_CONFIGURED_TOPIC = TABLE_TOPIC_PREFIX + "Configured"
ENVELOPE = ("position", "aggregate_id", "version", "server_time", "command_id", "studio_time")
LIBRARY_KEYS = frozenset({"originator_id", "originator_version", "timestamp"})  # the library's envelope


# ------------------------------------------------------------------ lines inside events
class Posting(NamedTuple):
    """One leg: `amount_minor > 0` increases `account` (`player:`, `round:`, `house:`)."""

    account: str
    amount_minor: int


class StakeMove(NamedTuple):
    bet_id: str
    player_id: str
    amount_minor: int
    reason: str


class SettlementLine(NamedTuple):
    """One bet's result in a settlement (the rules' BetResult)."""

    bet_id: str
    player_id: str
    bet_type: str
    outcome: str
    staked_minor: int
    returned_minor: int
    remainder_num: int
    remainder_den: int
    explanation: str


class Refund(NamedTuple):
    bet_id: str
    player_id: str
    amount_minor: int


Postings: TypeAlias = tuple[Posting, ...]


# ------------------------------------------------------------------ round events
class Opened(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
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
    """Right after Opened, only at a configured table: the configuration the round opened under."""

    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    config_version: int
    config_hash: str
    settings: dict[str, Any]  # the table's overrides of the rule set (domain.tableconfig.TableSettings)


class BetPlaced(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
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
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str


class CardDealt(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    card: str  # canonical, e.g. "TD"
    target: str
    seq_no: int


class DecisionTaken(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    hand: str
    action: str
    source: str  # player | timeout | system | dealer
    amount_minor: int | None
    stake_moves: tuple[StakeMove, ...]
    postings: Postings


class FollowDecided(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    bet_id: str
    kind: str  # split | double
    accept: bool
    stake_moves: tuple[StakeMove, ...]
    postings: Postings


class Paused(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    flag_code: str | None


class Interrupted(NamedTuple):
    """A player-side interruption: `player_id` is the player it concerns, `action` what the
    rule set's error policy did (complete | pause | void; its events follow in the same command)."""

    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    player_id: str
    action: str


class Resumed(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    by: str
    note: str


class Voided(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    refunds: tuple[Refund, ...]
    postings: Postings


class Settled(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    settlement_no: int
    ruleset_id: str
    ruleset_version: int
    results: tuple[SettlementLine, ...]
    postings: Postings


class SettlementReversed(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    settlement_no: int
    by: str
    reason: str
    postings: Postings


# ------------------------------------------------------------------ shoe events
class ShoeStarted(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    table_id: str
    shoe_id: str
    game: str
    decks: int


class ShoeRoundStarted(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    round_id: str
    round_no: int
    round_in_shoe: int


class ShoeCardsRecorded(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    round_id: str
    cards: tuple[str, ...]


class ShoeRetired(NamedTuple):
    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    round_id: str
    cause: str


# ------------------------------------------------------------------ table events
class TableConfigured(NamedTuple):
    """One configuration version of a table (ledger/table.py)."""

    position: int
    aggregate_id: str
    version: int
    server_time: datetime
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
    """The seats of a table after one of its rounds closed (live-8d v2, domain/seating.py)."""

    position: int
    aggregate_id: str
    version: int
    server_time: datetime
    command_id: str
    studio_time: str
    table_id: str
    round_id: str
    round_no: int
    voided: bool
    seating: dict[str, Any]  # {"held": [[spot, player_id, since_round_no]...], "lost": [[spot, player_id, round_no]...], "last_round_no": int}


class Unknown(NamedTuple):
    """A stored event outside this vocabulary (a replay reports it; views skip it)."""

    position: int
    aggregate_id: str
    version: int
    server_time: datetime
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
# Record type -> its stored event name (the topic after the module), as audit files and timelines show it.
_SHOE_NAMES = {ShoeStarted: "Started", ShoeRoundStarted: "RoundStarted", ShoeCardsRecorded: "CardsRecorded",
               ShoeRetired: "Retired"}
EVENT_NAMES: dict[type, str] = {
    **{t: "Round." + t.__name__ for t in (*ROUND_TYPES, *TABLE_ROUND_TYPES)}, **{t: "Shoe." + n for t, n in _SHOE_NAMES.items()},
    TableConfigured: "Table.Configured", TableSeatingChanged: "Table.SeatingChanged"}
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
_ENVELOPE_NAMES = ("originator_version", "timestamp", "command_id", "studio_time")  # stored names of ENVELOPE[2:]


def _decoder(cls: type[Record]) -> Decoder:
    """The decoder of one record type: its stored fields picked by name, nested lines typed.
    One itemgetter picks the envelope and the event's own fields at once."""
    own = cls._fields[len(ENVELOPE):]
    pick = _picker((*_ENVELOPE_NAMES, *own))
    first = len(_ENVELOPE_NAMES)
    nested = [(first + i, _CONVERT[name]) for i, name in enumerate(own) if name in _CONVERT]

    if not nested:
        def decode(position: int, aggregate_id: str, d: Mapping[str, Any]) -> Record:
            return _new(cls, (position, aggregate_id, *pick(d)))
        return decode

    def decode_nested(position: int, aggregate_id: str, d: Mapping[str, Any]) -> Record:
        values = list(pick(d))
        for i, convert in nested:
            values[i] = convert(values[i])
        return _new(cls, (position, aggregate_id, *values))

    return decode_nested


def _unknown(topic: str) -> Decoder:
    def decode(position: int, aggregate_id: str, d: Mapping[str, Any]) -> Record:
        fields = stored_fields(d)
        return Unknown(position, aggregate_id, d["originator_version"], d["timestamp"], fields.get("command_id"),
                       fields.get("studio_time"), topic, fields)
    return decode


_DECODERS: dict[type, Decoder] = {t: _decoder(t) for t in (*ROUND_TYPES, *TABLE_ROUND_TYPES, *SHOE_TYPES, *TABLE_TYPES)}


def stored_fields(state: Mapping[str, Any]) -> dict[str, Any]:
    """A decoded event state without the library's envelope: the fields exactly as stored."""
    return {k: v for k, v in state.items() if k not in LIBRARY_KEYS}


def decoder_for(topic: str) -> Decoder:
    """The decoder of a stored topic: `(position, aggregate id text, event state) -> Record`,
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


def record_of(kind: type[Record], position: int, aggregate_id: str, version: int, server_time: datetime,
              fields: Mapping[str, Any]) -> Record:
    """A record built from stored-form fields (tests and tools that make events by hand);
    a field not given reads as None."""
    require(kind is not Unknown, "an unknown event has no fields to build from")
    blank = dict.fromkeys(("command_id", "studio_time", *kind._fields[len(ENVELOPE):]))
    state = {**blank, "originator_version": version, "timestamp": server_time, **fields}
    return _DECODERS[kind](position, aggregate_id, state)

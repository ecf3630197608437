"""The base of the ledger's aggregates (Round, Shoe) and events, on the library's public protocols.

Why not `eventsourcing.domain.Aggregate`: the library builds an `Aggregate` only
from a "created" event (`CanInitAggregate`), which stores an extra
`originator_topic` field, or through the private `__new__` + `__base_init__`
path. A round's first stored event is `Round.Opened` or a tombstone
`Round.Voided`, neither of which carries `originator_topic`, and the stored
events must stay byte for byte what they are. The library states its aggregate
contract as protocols (`MutableAggregateProtocol`: `id`, a settable `version`;
`CollectEventsProtocol`: `collect_events()`; events: `DomainEventProtocol` and
`CanMutateProtocol`, i.e. a `mutate(aggregate | None)`), and `Application.save`,
`Repository.get` and the aggregate cache accept any objects that keep them. So
the aggregates here are plain classes that keep them, and their events are the
library's public `DomainEvent` (frozen dataclasses, stored as `vars(event)`) with
a `mutate` that checks id and version as the library's does. An event that finds
no aggregate makes one with the aggregate's own constructor.
tests/store/ledger/test_library_contract.py pins each of these assumptions.

Overrides, and the measurement that keeps each (`python -m ops.bench.library_bench`,
docs/architecture-library.md): `LedgerEvent` subclasses `eventsourcing.domain.DomainEvent`
and builds an event past the dataclass constructor (`LedgerEvent.recorded`: 2.76 against
4.99 µs per event, 1.81x); `PendingEvents` stands in for `Application.save(*aggregates)`,
whose runtime protocol checks per aggregate cost 3,458 against 26 µs for a batch of 175
aggregates (134x).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import ClassVar, Generic, NamedTuple, Self, TypeVar
from uuid import UUID

from eventsourcing.domain import DomainEvent, OriginatorIDError, OriginatorVersionError


class Stamp(NamedTuple):
    """What every event carries from the command that caused it (one per command: a tuple is cheap)."""

    command_id: str
    studio_time: str  # the studio's clock as ISO 8601 text, formatted once per command
    # The ledger's clock for the events' `timestamp`: one per batch (they commit together),
    # so the transcoder formats it once, not per event; None takes the time per event.
    recorded_at: datetime | None = None
    # The names of the events recorded under this stamp, appended as each is recorded (the
    # command's result lists them: ledger/intake.py); None keeps none.
    recorded: list[str] | None = None


A = TypeVar("A", bound="LedgerAggregate")


class LedgerAggregate:
    """id, version, pending events: the library's mutable-aggregate protocol, nothing more."""

    EVENT_NAME_PREFIX = ""  # how a command's Result names this aggregate's events

    def __init__(self, aggregate_id: UUID, created_on: datetime) -> None:
        self._id = aggregate_id
        self.version = 0
        self.created_on = created_on
        self.modified_on = created_on  # each event's timestamp, as the library's aggregates keep it
        self.pending_events: list[DomainEvent] = []

    @property
    def id(self) -> UUID:
        return self._id

    def collect_events(self) -> Sequence[DomainEvent]:
        """Hand the new events to `Application.save` (the library's CollectEventsProtocol)."""
        collected, self.pending_events = self.pending_events, []
        return collected

    def _record_event(self: A, event_class: type[LedgerEvent[A]], stamp: Stamp, **fields: object) -> None:
        """Make the next event in sequence, apply it (id and version checked), keep it pending until saved."""
        self._record_fields(event_class, stamp, fields)

    def _record_fields(self: A, event_class: type[LedgerEvent[A]], stamp: Stamp, fields: dict[str, object]) -> None:
        """`_record_event` with the fields as the dict the caller made for this event alone (the
        event takes its values; the dict is not kept): a caller that takes `**fields` itself
        (ledger/round.py `_emit`) passes it on without a second keyword copy."""
        event = event_class.recorded(
            self._id, self.version + 1, stamp.recorded_at or DomainEvent.create_timestamp(), stamp, fields,
        )
        # What `event.mutate(self)` does, less its id and version checks, which hold by
        # construction here (this id, the next version); events read from the store go through mutate.
        event.apply(self)
        self.version = event.originator_version
        self.modified_on = event.timestamp
        self.pending_events.append(event)
        if stamp.recorded is not None:
            stamp.recorded.append(self.EVENT_NAME_PREFIX + event_class.__name__)


class PendingEvents:
    """The pending events of a batch's aggregates, handed to `Application.save` as ONE object.

    `save` asks of every object it is given `isinstance(obj, DomainEventProtocol)` and then
    `isinstance(obj, CollectEventsProtocol)`; on Python 3.11 a runtime protocol check walks
    the protocol's class dictionaries on every call (typing._get_protocol_attrs, not cached
    before 3.12), a noticeable share of ingest's CPU with hundreds of aggregates per batch
    (docs/architecture-library.md). This object keeps the protocols `save` relies on (`id`, `version`,
    `collect_events`) and collects from every aggregate, in order: the same events reach
    `EventStore.put` in the same order, at the cost of one check per batch. `save` keeps
    the objects it was given by id only to cache them when the repository does not
    fast-forward, and to snapshot them when the application sets snapshotting intervals;
    the ledger does neither (were either set, the caller passes the aggregates themselves).
    """

    def __init__(self, aggregates: Sequence[LedgerAggregate], batch_id: UUID) -> None:
        self.aggregates = aggregates
        self.id = batch_id
        self.version = 0

    def collect_events(self) -> list[DomainEvent]:
        events: list[DomainEvent] = []
        for aggregate in self.aggregates:
            events.extend(aggregate.collect_events())
        return events


# The fields every ledger event starts with, in declaration order (DomainEvent's, then LedgerEvent's).
_ENVELOPE = ("originator_id", "originator_version", "timestamp", "command_id", "studio_time")
_OWN_FIELDS: dict[type, tuple[str, ...]] = {}  # each event class's own dataclass fields, in declaration order


class LedgerEvent(DomainEvent, Generic[A]):
    """A ledger event: the command it came from, and how it changes its aggregate.
    `apply` only assigns the recorded facts; checks belong to the command methods."""

    command_id: str
    studio_time: str
    # The fields the class's latest `class_version` added, with the value its `upcast` gives
    # events stored before it: an event holding all of them at that value is stored in the
    # version before's form (ledger/library/eventstore.py `LedgerMapper`), and read back by
    # the upcast (the write side) or by the record's default (ledger/records.py).
    STORED_DEFAULTS: ClassVar[Mapping[str, object]] = {}

    @classmethod
    def recorded(cls, originator_id: UUID, originator_version: int, timestamp: datetime, stamp: Stamp,
                 fields: dict[str, object]) -> Self:
        """The event as the dataclass `__init__` makes it (the same fields, in declaration
        order, so `vars(event)` and the stored bytes are the same), at a third of its cost:
        a frozen dataclass sets each field through `object.__setattr__`. Made once per event."""
        own = _OWN_FIELDS.get(cls)
        if own is None:
            names = tuple(f.name for f in dataclasses.fields(cls))
            if names[:len(_ENVELOPE)] != _ENVELOPE:
                raise TypeError(f"{cls.__qualname__} declares {names}: the envelope {_ENVELOPE} must come first")
            own = _OWN_FIELDS[cls] = names[len(_ENVELOPE):]
        event = object.__new__(cls)
        state = event.__dict__
        state["originator_id"] = originator_id
        state["originator_version"] = originator_version
        state["timestamp"] = timestamp
        state["command_id"] = stamp.command_id
        state["studio_time"] = stamp.studio_time
        if tuple(fields) == own:  # the callers pass the fields in declaration order: one C-level update
            state.update(fields)
        elif len(fields) == len(own) and all(name in fields for name in own):
            for name in own:
                state[name] = fields[name]
        else:  # what the dataclass __init__ refuses: missing or unknown fields
            raise TypeError(f"{cls.__qualname__} takes {own}, got {tuple(fields)}")
        if type(originator_id) is not UUID:  # the aggregates' ids are UUIDs: the library's check only otherwise
            event.__post_init__()  # the library's check of the originator id (a Python call per event)
        return event

    def mutate(self, aggregate: A | None) -> A:
        """The library's mutate contract: the next event of this aggregate, applied, then counted."""
        if aggregate is None:  # any event may be an aggregate's first (a round's tombstone Voided)
            aggregate = self.new_aggregate()
        if self.originator_id is not aggregate.id and self.originator_id != aggregate.id:  # UUID == runs in Python
            raise OriginatorIDError(self.originator_id, aggregate.id)
        if self.originator_version != aggregate.version + 1:
            raise OriginatorVersionError(self.originator_version, aggregate.version + 1)
        self.apply(aggregate)
        aggregate.version = self.originator_version
        aggregate.modified_on = self.timestamp
        return aggregate

    def new_aggregate(self) -> A:
        raise NotImplementedError

    def apply(self, aggregate: A) -> None:
        """Assign the recorded facts to the aggregate."""

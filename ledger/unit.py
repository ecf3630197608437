"""The unit of work: one batch's aggregates, loaded once, saved together. It loads, caches
and saves; what a command does with the aggregates is ledger/handlers.py's.

Loading: an aggregate the batch already holds is taken as it is; else the aggregate
cache's copy, as it is, without fast-forwarding it from the store (a read per command,
for rounds this process wrote itself); else the store. Which of a batch's new rounds,
shoes and tables exist is asked once per batch (`wanted`, then `absent`), so opening a
round costs no failed read of its own.

Saving: the batch's events, command-index rows and rejection rows in ONE transaction
(`Application.save` hands `ledger_rows` to the recorder's insert,
ledger/library/recorders.py), with the version every aggregate was decided on
(`read_at`): a decision made on a stale read, a refusal included, never commits.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, Cache
from eventsourcing.domain import DomainEvent

from domain.errors import InvariantBroken, Refusal
from ledger.commands import COMMAND_TYPES, Command, ConfigureOperator, ConfigureTable, OpenRound
from ledger.ids import round_id_for
from ledger.library.aggregate import LedgerAggregate, PendingEvents
from ledger.library.recorders import LedgerRows, VersionRead
from ledger.operator import Operator, operator_uuid_for
from ledger.round import Round
from ledger.shoe import Shoe, shoe_id_for
from ledger.table import Table, table_id_for

A = TypeVar("A", bound=LedgerAggregate)

# The id `Application.save` files a batch's PendingEvents under (no aggregate has it: theirs are
# uuid5 names in the ledger's namespace, ledger/round.py); nothing is stored under it.
BATCH_ID = UUID("00000000-0000-4000-8000-000000000000")
_new = tuple.__new__  # a NamedTuple's own __new__ is a Python function: one VersionRead per aggregate


@dataclass
class UnitOfWork:
    """One batch: aggregates loaded once, commands applied in order, saved together."""

    app: Application[UUID]
    shoes_in_use: ShoesInUse
    # Keyed by the id's 128-bit integer: a UUID hashes in Python code, an int in C (a few per command).
    aggregates: dict[int, LedgerAggregate] = field(default_factory=dict)
    absent: set[UUID] = field(default_factory=set)  # ids known to have no events when the batch began
    # Every aggregate the batch decided on, with the version it was read at (0: none stored).
    # The write checks them against the store in its own transaction (LedgerRows.reads), so a
    # decision made on a stale read, a refusal included, never commits: another writer (a
    # second worker or machine) may have moved the round on since it was cached here.
    read_at: dict[int, tuple[UUID, int]] = field(default_factory=dict)
    opened_shoes: dict[str, UUID] = field(default_factory=dict)  # table id -> shoe of its last round opened
    # The events' `timestamp`: the batch commits as one, so one reading of the clock serves it.
    recorded_at: datetime = field(default_factory=DomainEvent.create_timestamp)

    # -- loading

    def wanted(self, parsed: Sequence[Command | Refusal]) -> list[UUID]:
        """Rounds, shoes and tables this batch may touch that are not cached: which of them
        are stored is found with one query (`absent`, set by the caller)."""
        cache = self.app.repository.cache
        if cache is None:
            return []
        # Names first (a tuple of str and int hashes in C, a UUID in Python), ids once per name.
        rounds: set[tuple[str, int]] = set()
        shoes: set[tuple[str, str]] = set()
        tables: set[str] = set()
        for p in parsed:
            if type(p) not in COMMAND_TYPES and isinstance(p, Refusal):  # a command's class answers in C
                continue
            if TYPE_CHECKING:  # what the line above tells, for mypy (no check at run time)
                assert not isinstance(p, Refusal)
            if type(p) is ConfigureTable:
                tables.add(p.table_id)
                continue
            if type(p) is ConfigureOperator:  # read by `operator_or_new`: operators are few and cached
                continue
            rounds.add((p.table_id, p.round_no))
            if type(p) is OpenRound:
                shoes.add((p.table_id, p.shoe_id))
                tables.add(p.table_id)
        ids = [*(round_id_for(*k) for k in rounds), *(shoe_id_for(*k) for k in shoes), *map(table_id_for, tables)]
        # Membership of the cache's dict, not `cache.get` (a lock and a move to the front, ~1 µs an
        # id): a cached aggregate the batch uses is then read by `load`, which takes the lock and moves it.
        held = cache.cache
        return list({i for i in ids if i not in held})

    def load(self, aggregate_id: UUID) -> LedgerAggregate | None:
        found = self.aggregates.get(aggregate_id.int)
        if found is not None:
            return found
        found = self._cached(aggregate_id)
        if found is None:
            if aggregate_id in self.absent:
                self.read_at[aggregate_id.int] = (aggregate_id, 0)
                return None
            try:
                found = as_kind(LedgerAggregate, self.app.repository.get(aggregate_id))
            except AggregateNotFoundError:
                self.read_at[aggregate_id.int] = (aggregate_id, 0)
                return None
        self.aggregates[aggregate_id.int] = found
        self.read_at[aggregate_id.int] = (aggregate_id, found.version)
        return found

    def keep(self, aggregate: A) -> A:
        """A new aggregate, saved with the batch."""
        self.aggregates[aggregate.id.int] = aggregate
        self.read_at.setdefault(aggregate.id.int, (aggregate.id, 0))  # new: nothing stored when decided
        return aggregate

    def _cached(self, aggregate_id: UUID) -> LedgerAggregate | None:
        """The cached aggregate as it is, without fast-forwarding it from the store
        (a read per command, for rounds this process wrote itself). If another writer
        appended meanwhile, the save's version check fails (`read_at`: refusals and
        duplicates' neighbours too, not only the aggregates written), the batch evicts what
        it touched and reruns on fresh state: a stale cache can delay a command, never
        decide it."""
        cache = self.app.repository.cache
        if cache is None:
            return None
        try:
            return as_kind(LedgerAggregate, cache.get(aggregate_id))
        except KeyError:
            return None

    def round(self, table_id: str, round_no: int) -> Round | None:
        # Most commands find their round in the batch already: taken from there, without `load`.
        round_id = round_id_for(table_id, round_no)
        found = self.aggregates.get(round_id.int)
        if found is None:
            found = self.load(round_id)
            if found is None:
                return None
        return found if type(found) is Round else as_kind(Round, found)

    def round_or_new(self, table_id: str, round_no: int) -> Round:
        found = self.load(round_id_for(table_id, round_no))
        return self.keep(Round.new(table_id, round_no)) if found is None else as_kind(Round, found)

    def shoe_or_new(self, table_id: str, shoe_id: str) -> Shoe:
        found = self.load(shoe_id_for(table_id, shoe_id))
        return self.keep(Shoe.new(table_id, shoe_id)) if found is None else as_kind(Shoe, found)

    def table(self, table_id: str) -> Table | None:
        found = self.load(table_id_for(table_id))
        return None if found is None else as_kind(Table, found)

    def table_or_new(self, table_id: str) -> Table:
        found = self.load(table_id_for(table_id))
        return self.keep(Table.new(table_id)) if found is None else as_kind(Table, found)

    def operator(self, operator_id: str) -> Operator | None:
        found = self.load(operator_uuid_for(operator_id))
        return None if found is None else as_kind(Operator, found)

    def operator_or_new(self, operator_id: str) -> Operator:
        found = self.load(operator_uuid_for(operator_id))
        return self.keep(Operator.new(operator_id)) if found is None else as_kind(Operator, found)

    def shoe_of(self, r: Round) -> Shoe:
        shoe_id = shoe_id_for(r.table_id, r.shoe_id)
        found = self.aggregates.get(shoe_id.int)  # a card dealt: its shoe is in the batch already
        if found is None:
            found = self.load(shoe_id)
            if found is None:
                raise InvariantBroken(f"round {r.id} has no shoe {r.shoe_id}")
        return found if type(found) is Shoe else as_kind(Shoe, found)

    # -- saving

    def save(self, rows: LedgerRows) -> None:
        """The batch's events and `rows` in ONE transaction. Then the aggregates go to the
        cache as they are (the library caches only on reads when it fast-forwards), so the
        next batch is checked with no store read; if the write fails, the caller evicts them."""
        touched = [a for a in self.aggregates.values() if a.pending_events]
        aggregates = self.aggregates
        rows.reads = [
            _new(VersionRead, (i, v, a.version if (a := aggregates.get(i.int)) is not None else v))
            for i, v in self.read_at.values()
        ]
        repository = self.app.repository
        # save keeps the objects it is given only to cache them (when the repository does not
        # fast-forward) and to snapshot them (when intervals are set): neither for the ledger
        if repository.fastforward and not self.app.snapshotting_intervals and touched:
            self.app.save(PendingEvents(touched, BATCH_ID), ledger_rows=rows, recordings=False)
        else:
            self.app.save(*touched, ledger_rows=rows, recordings=False)  # nothing reads the recordings
        cache = repository.cache
        if cache is not None:
            opened = self.opened_shoes
            for aggregate in self.aggregates.values():
                aggregate_id = aggregate.id
                if isinstance(aggregate, Round) and aggregate.is_closed:
                    # Done with: a late command reads it from the store. Caching only live rounds
                    # (and each table's current shoe) keeps ingest's memory flat however many
                    # rounds a feed holds.
                    _evict(cache, aggregate_id)
                elif type(aggregate) is Shoe and opened.get(aggregate.table_id, aggregate_id) != aggregate_id:
                    _evict(cache, aggregate_id)  # its table opened a round on another shoe after it
                elif aggregate.version > 0:  # a new round whose command was refused stays unknown
                    cache.put(aggregate_id, aggregate)
            for left in self.shoes_in_use.moved_on(opened):
                _evict(cache, left)

    def evict(self) -> None:
        cache = self.app.repository.cache
        if cache is not None:
            for aggregate in self.aggregates.values():
                _evict(cache, aggregate.id)


class ShoesInUse:
    """The shoe each table deals from: the shoe of its latest round opened. A shoe its
    table has moved on from leaves the aggregate cache (a late round on it reads it from
    the store): Teen Patti opens a shoe a round and a blackjack shoe lasts some 25
    rounds, so old shoes kept in the cache would grow ingest's memory with the rounds.
    At most `tables_max` tables are followed (the longest unseen go first)."""

    def __init__(self, tables_max: int) -> None:
        self.tables_max = tables_max
        self.by_table: dict[str, UUID] = {}

    def moved_on(self, opened: Mapping[str, UUID]) -> list[UUID]:
        """Note a committed batch's latest shoe per table; the shoes left behind."""
        left, by_table = [], self.by_table
        for table_id, shoe in opened.items():
            before = by_table.pop(table_id, None)  # re-inserted: the dict's order is last seen
            if before is not None and before != shoe:
                left.append(before)
            by_table[table_id] = shoe
        while len(by_table) > self.tables_max:
            del by_table[next(iter(by_table))]
        return left


def _evict(cache: Cache[UUID, Any], aggregate_id: UUID) -> None:
    try:
        cache.get(aggregate_id, evict=True)
    except KeyError:
        pass


def as_kind(kind: type[A], found: object) -> A:
    """The aggregate under an id derived from its kind's namespace is of that kind."""
    if not isinstance(found, kind):
        raise InvariantBroken(f"aggregate {found!r} is a {type(found).__name__}, not a {kind.__name__}")
    return found

"""LedgerApp: the only writer of events.

`handle(cmd)` and `ingest(raw_lines, batch_size=...)` turn feed commands into
events. A batch is one unit of work: every command is checked one by one
against in-memory aggregates and gets its own `Result`; then every round and
shoe touched, the command-index rows and the rejection rows are saved in ONE
transaction (`Application.save`). If that save hits a conflict (another
writer), the batch is rerun command by command against fresh state so each
result stays exact; a single command that still conflicts gets `conflict`.

(Overlapping batches, committing batch N in a writer thread while N+1 is checked, was
tried and measured slower on SQLite and PostgreSQL: the write is mostly Python work, the
mapping to stored events, so the two threads only contend for the GIL.)
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar, assert_never, cast, runtime_checkable
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, Cache
from eventsourcing.domain import DomainEvent
from eventsourcing.persistence import ApplicationRecorder, DataError, EventStore, Mapper, RecordConflictError
from pydantic import ValidationError

from domain import registry
from domain.cards import parse_card
from domain.errors import InvariantBroken, Refusal, refuse, require
from domain.model import Bet
from domain.refusals import RefusalCode
from domain.ruleset import BetLimit
from domain.seating import spans_rounds
from domain.tableconfig import TableSettings
from domain.text import char_name, escaped, hostile_at, storable
from ledger import logging as ledger_logging
from ledger.batching import STATUSES, Raw, Result, batches, collector_spared
from ledger.commands import (
    CloseBetting,
    Command,
    ConfigureTable,
    DealCard,
    Decide,
    Follow,
    OpenRound,
    Pause,
    PlaceBet,
    Resume,
    ReverseSettlement,
    RoundCommand,
    Void,
    hostile_text,
    is_command,
    parse_command,
)
from ledger.library.aggregate import LedgerAggregate, PendingEvents, Stamp
from ledger.library.eventstore import LedgerEventStore, LedgerMapper
from ledger.library.recorders import CommandRow, KnownCommand, LedgerRows, RejectionRow, VersionRead
from ledger.partitions import can_fork, ingest_partitioned, partitioned_batches
from ledger.round import Round, round_id_for, round_text_for
from ledger.shoe import Shoe, shoe_id_for
from ledger.startup import tables_created_alone
from ledger.table import Table, table_id_for

A = TypeVar("A", bound=LedgerAggregate)
__all__ = ["BATCH_SIZE_DEFAULT", "BATCH_SIZE_MAX", "STATUSES", "LedgerApp", "Result", "UnitOfWork", "batches"]

BATCH_SIZE_DEFAULT = 500  # fewer, larger commits: a commit's fixed cost is shared by more commands
BATCH_SIZE_MAX = 10_000
# The id `Application.save` files a batch's PendingEvents under (no aggregate has it: theirs are
# uuid5 names in the ledger's namespace, ledger/round.py); nothing is stored under it.
BATCH_ID = UUID("00000000-0000-4000-8000-000000000000")
UNSTORABLE = (DataError, OverflowError, UnicodeError)  # a value the store cannot hold: one command's fault


def payload_hash(cmd: Command) -> str:
    # pydantic-core's serializer emits fields in declaration order, so the same
    # payload always gives the same bytes (whatever the key order on the wire). The
    # model's serializer straight to bytes: what `model_dump_json().encode()` gives,
    # without its keyword plumbing and the str round trip (half the time per command).
    return hashlib.sha256(cmd.__pydantic_serializer__.to_json(cmd)).hexdigest()


def describe_validation_error(err: ValidationError) -> str:
    """`place_bet.stake_minor: Input should be a valid integer` — one clause per problem."""
    parts = []
    for e in err.errors()[:5]:
        loc = ".".join(str(p) for p in e["loc"]) or "command"
        parts.append(f"{loc}: {e['msg']}")
    more = err.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _now() -> str:
    return datetime.now(UTC).isoformat()


PAYLOAD_STORED_MAX = 65_536  # characters of a refused line kept in the rejections log
INT64_MAX = 2**63 - 1


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


@runtime_checkable
class LedgerRecorder(Protocol):
    """What the application reads from ledger/library/recorders.py's recorders, beside events."""

    def select_commands(self, command_ids: Sequence[str]) -> dict[str, KnownCommand]: ...

    def existing_ids(self, originator_ids: Sequence[UUID]) -> set[UUID]: ...

    def lookup(self, command_ids: Sequence[str],
               originator_ids: Sequence[UUID]) -> tuple[dict[str, KnownCommand], set[UUID]]: ...

    def select_rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]: ...


# Recorder classes that passed the LedgerRecorder check. Its members are all methods, so the
# check is a check of the class, made once per class: a runtime protocol check walks the
# protocol's class dictionaries on every call, and the live path would make it every batch.
_LEDGER_RECORDER_TYPES: set[type] = set()


class LedgerApp(Application[UUID]):
    name = "Ledger"
    # Hot rounds stay in the repository cache. Public reads fast-forward them from
    # the store; the write path (UnitOfWork.load) takes them from the cache as they
    # are. No deepcopy from the cache: a refused command never changes an aggregate
    # (checks come first), and a batch whose save fails evicts what it touched.
    env = {"AGGREGATE_CACHE_MAXSIZE": "5000", "DEEPCOPY_FROM_AGGREGATE_CACHE": "n"}

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self.shoes_in_use = ShoesInUse(int(self.env.get("AGGREGATE_CACHE_MAXSIZE") or 0))

    def construct_mapper(self) -> Mapper[UUID]:
        """The library's mapper, with its per-event work done once per event class (ledger/library/eventstore.py)."""
        return self.factory.mapper(transcoder=self.construct_transcoder(), mapper_class=LedgerMapper)

    def construct_event_store(self) -> EventStore[UUID]:
        """The library's event store, which can skip the per-event recordings (ledger/library/eventstore.py)."""
        return LedgerEventStore(mapper=self.mapper, recorder=self.recorder)

    def construct_recorder(self) -> ApplicationRecorder:
        """The library's recorder; on PostgreSQL its tables are created by one process at a time."""
        with tables_created_alone(self.env):
            return super().construct_recorder()

    # ------------------------------------------------------------ public API

    def handle(self, cmd: Raw) -> Result:
        return self.ingest([cmd], batch_size=1)[0]

    def ingest(
        self, raws: Iterable[Raw], batch_size: int = BATCH_SIZE_DEFAULT,
        on_batch: Callable[[list[Result]], None] | None = None, workers: int = 1,
    ) -> list[Result]:
        """Apply commands in batches of `batch_size`; `on_batch(results)` is called as each
        batch commits (progress). `workers` > 1 splits the tables over that many processes
        (ledger/partitions.py; per table the order is the feed's). Results in feed order."""
        if workers > 1 and can_fork():
            require(1 <= batch_size <= BATCH_SIZE_MAX, f"batch_size must be 1..{BATCH_SIZE_MAX}, got {batch_size}")
            return ingest_partitioned(self, raws, batch_size, workers, on_batch)
        results: list[Result] = []
        for batch_results in self.ingest_batches(raws, batch_size):
            results.extend(batch_results)
            if on_batch is not None:
                on_batch(batch_results)
        return results

    def ingest_batches(self, raws: Iterable[Raw], batch_size: int = BATCH_SIZE_DEFAULT,
                       workers: int = 1) -> Iterator[list[Result]]:
        """Each batch's results as it commits, keeping none: memory stays flat however long
        the feed. With workers > 1, in commit order (per table, the feed's order)."""
        require(1 <= batch_size <= BATCH_SIZE_MAX, f"batch_size must be 1..{BATCH_SIZE_MAX}, got {batch_size}")
        if workers > 1 and can_fork():
            for _, batch_results in partitioned_batches(self, raws, batch_size, workers):
                yield batch_results
            return
        with collector_spared() as after_batch:
            for batch in batches(raws, batch_size):
                yield self.run_batch(batch)
                after_batch()

    def get_round(self, round_id: UUID, version: int | None = None) -> Round:
        found: Round = self.repository.get(round_id, version=version)
        return found

    def find_round(self, table_id: str, round_no: int) -> Round:
        return self.get_round(round_id_for(table_id, round_no))

    def get_shoe(self, table_id: str, shoe_id: str) -> Shoe:
        found: Shoe = self.repository.get(shoe_id_for(table_id, shoe_id))
        return found

    def get_table(self, table_id: str, version: int | None = None) -> Table | None:
        """The table's aggregate (every configuration version, its seats), None if it has none."""
        try:
            found: object = self.repository.get(table_id_for(table_id), version=version)
        except AggregateNotFoundError:
            return None
        return _as(Table, found)

    def forget_cached(self) -> None:
        """Drop every cached round and shoe (another process changed them): the next use reads the store."""
        if self.repository.cache is not None:  # an empty cache as the library's repository makes it
            self.repository.cache = self.construct_repository().cache

    def rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        return self.ledger_recorder().select_rejections(after_id, limit)

    def ledger_recorder(self) -> LedgerRecorder:
        """The recorder, with the ledger's own tables (APPLICATION_RECORDER_TOPIC, ledger/store.py)."""
        recorder = self.recorder
        if type(recorder) not in _LEDGER_RECORDER_TYPES:
            if not isinstance(recorder, LedgerRecorder):
                raise InvariantBroken(f"{type(recorder).__name__} keeps no command index; open the app with ledger.store")
            _LEDGER_RECORDER_TYPES.add(type(recorder))
        return cast(LedgerRecorder, recorder)  # checked above, once per class

    # ------------------------------------------------------------- batches

    def run_batch(self, raws: Sequence[Raw], *, assume_new: bool = False) -> list[Result]:
        """Check and record a batch of commands in one transaction; one result per command.
        `assume_new` (the live writer): when every round and shoe the batch touches is cached,
        first try the batch as if no command id had been seen before, without the lookup
        (a statement and a round trip: a quarter of a one-command batch's CPU). Every command
        with an id writes its index row, so a command id the store already holds (a retry)
        fails that write whole; the batch is then run again the usual way. Same results."""
        parsed = [self._parse(raw) for raw in raws]
        wanted = self._wanted(parsed)
        fast = assume_new and not wanted  # no lookup; a failed write runs the batch again the usual way
        ids = [] if fast else [p.command_id for p in parsed if not isinstance(p, Refusal)]
        # The batch's two reads (command ids seen before; which new aggregates exist) in one round trip.
        known, existing = self.ledger_recorder().lookup(ids, wanted) if ids or wanted else ({}, set())
        unit = UnitOfWork(self, known)
        try:
            unit.absent = set(wanted) - existing
            unit.debug = ledger_logging.debug_enabled()
            results = [unit.apply(p, raw) for p, raw in zip(parsed, raws)]
            unit.save()
        except RecordConflictError:
            unit.evict()
            if fast:  # a command id already stored (a retry), or another writer
                return self.run_batch(raws)
            if len(raws) == 1:
                return [self._conflict(parsed[0])]
            # Someone else wrote in between: rerun one command at a time on fresh state.
            return [r for raw in raws for r in self.run_batch([raw])]
        except UNSTORABLE as err:
            unit.evict()
            if fast:
                return self.run_batch(raws)
            if len(raws) == 1:
                return [self._unstorable(raws[0], err)]
            # One command the store cannot hold must not cost the batch: find it alone.
            return [r for raw in raws for r in self.run_batch([raw])]
        except BaseException:
            unit.evict()  # never leave half-applied aggregates in the cache
            raise
        return _logged(unit, results)

    def _wanted(self, parsed: Sequence[Command | Refusal]) -> list[UUID]:
        """Rounds and shoes this batch may touch that are not cached: which of them are
        stored is found with one query, so opening a round costs no failed read of its own."""
        cache = self.repository.cache
        if cache is None:
            return []
        # Names first (a tuple of str and int hashes in C, a UUID in Python), ids once per name.
        rounds: set[tuple[str, int]] = set()
        shoes: set[tuple[str, str]] = set()
        tables: set[str] = set()
        for p in parsed:
            if isinstance(p, Refusal):
                continue
            if type(p) is ConfigureTable:
                tables.add(p.table_id)
                continue
            rounds.add((p.table_id, p.round_no))
            if type(p) is OpenRound:
                shoes.add((p.table_id, p.shoe_id))
                tables.add(p.table_id)
        ids = [*(round_id_for(*k) for k in rounds), *(shoe_id_for(*k) for k in shoes), *map(table_id_for, tables)]
        return list({i for i in ids if not _is_cached(cache, i)})

    def _parse(self, raw: Raw) -> Command | Refusal:
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

    def _unstorable(self, raw: Raw, err: BaseException) -> Result:
        """Last resort for a command that passed every check but that the store refused
        (every known case is refused earlier): a `bad_command` refusal, kept in the log."""
        unit = UnitOfWork(self, {})
        result = unit.apply(refuse(RefusalCode.BAD_COMMAND, "store", error=err), raw)
        unit.save()
        return result

    def _conflict(self, cmd: Command | Refusal) -> Result:
        message = RefusalCode.CONCURRENCY_CONFLICT.message()
        if isinstance(cmd, Refusal):
            return Result(status="conflict", command_id=None, code="concurrency_conflict", message=message)
        return Result(
            status="conflict", command_id=cmd.command_id, code="concurrency_conflict", message=message,
            round_id=_round_text(cmd),
        )


@dataclass
class UnitOfWork:
    """One batch: aggregates loaded once, commands applied in order, saved together."""

    app: LedgerApp
    known: dict[str, KnownCommand]  # command ids already in the store
    # Keyed by the id's 128-bit integer: a UUID hashes in Python code, an int in C (a few per command).
    aggregates: dict[int, LedgerAggregate] = field(default_factory=dict)
    rows: LedgerRows = field(default_factory=LedgerRows)
    seen: dict[str, tuple[str, Result]] = field(default_factory=dict)  # command ids handled in this batch
    # The current command's aggregates in load order, with their pending-event counts when it began.
    marks: list[tuple[LedgerAggregate, int]] = field(default_factory=list)
    absent: set[UUID] = field(default_factory=set)  # ids known to have no events when the batch began
    # Every aggregate the batch decided on, with the version it was read at (0: none stored).
    # The write checks them against the store in its own transaction (LedgerRows.reads), so a
    # decision made on a stale read, a refusal included, never commits: another writer (a
    # second worker or machine) may have moved the round on since it was cached here.
    read_at: dict[int, tuple[UUID, int]] = field(default_factory=dict)
    opened_shoes: dict[str, UUID] = field(default_factory=dict)  # table id -> shoe of its last round opened
    debug: bool = True  # bind command ids for log lines only when per-command lines are logged
    # The events' `timestamp`: the batch commits as one, so one reading of the clock serves it.
    recorded_at: datetime = field(default_factory=DomainEvent.create_timestamp)

    # -- loading

    def load(self, aggregate_id: UUID) -> LedgerAggregate | None:
        found = self.aggregates.get(aggregate_id.int)
        if found is None:
            found = self._cached(aggregate_id)
            if found is None:
                if aggregate_id in self.absent:
                    self.read_at[aggregate_id.int] = (aggregate_id, 0)
                    return None
                try:
                    found = _as(LedgerAggregate, self.app.repository.get(aggregate_id))
                except AggregateNotFoundError:
                    self.read_at[aggregate_id.int] = (aggregate_id, 0)
                    return None
            self.aggregates[aggregate_id.int] = found
            self.read_at[aggregate_id.int] = (aggregate_id, found.version)
        self._mark(found)
        return found

    def _keep(self, aggregate: LedgerAggregate) -> None:
        self.aggregates[aggregate.id.int] = aggregate
        self.read_at.setdefault(aggregate.id.int, (aggregate.id, 0))  # new: nothing stored when decided
        self._mark(aggregate)

    def _mark(self, aggregate: LedgerAggregate) -> None:
        """Count the aggregate's pending events the first time the current command uses it."""
        for seen, _ in self.marks:  # a command uses one or two aggregates
            if seen is aggregate:
                return
        self.marks.append((aggregate, len(aggregate.pending_events)))

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
            return _as(LedgerAggregate, cache.get(aggregate_id))
        except KeyError:
            return None

    def round(self, cmd: RoundCommand) -> Round:
        """The command's round; refused when it was never opened (nor voided)."""
        found = self.load(round_id_for(cmd.table_id, cmd.round_no))
        # version 0: an empty Round kept in memory by an open_round refused earlier in this batch;
        # it is refused as if the batch had ended there (same message whatever the batch size)
        if found is None or found.version <= 0:
            raise refuse(RefusalCode.ROUND_NOT_OPEN, table_id=cmd.table_id, round_no=cmd.round_no)
        found = _as(Round, found)
        found.known_as(cmd.table_id, cmd.round_no)
        return found

    def round_or_new(self, cmd: RoundCommand) -> Round:
        found = self.load(round_id_for(cmd.table_id, cmd.round_no))
        if found is None:
            found = Round.new(cmd.table_id, cmd.round_no)
            self._keep(found)
        found = _as(Round, found)
        found.known_as(cmd.table_id, cmd.round_no)
        return found

    def shoe_or_new(self, table_id: str, shoe_id: str) -> Shoe:
        found = self.load(shoe_id_for(table_id, shoe_id))
        if found is None:
            found = Shoe.new(table_id, shoe_id)
            self._keep(found)
        return _as(Shoe, found)

    def table_or_new(self, table_id: str) -> Table:
        found = self.load(table_id_for(table_id))
        if found is None:
            found = Table.new(table_id)
            self._keep(found)
        return _as(Table, found)

    def shoe_of(self, r: Round) -> Shoe:
        found = self.load(shoe_id_for(r.table_id, r.shoe_id))
        if found is None:
            raise InvariantBroken(f"round {r.id} has no shoe {r.shoe_id}")
        return _as(Shoe, found)

    # -- saving

    def save(self) -> None:
        """The batch's events, command-index rows and rejection rows in ONE transaction:
        `Application.save` hands `ledger_rows` to the recorder's insert (ledger/library/recorders.py).
        Then the aggregates go to the cache as they are (the library caches only on
        reads when it fast-forwards), so the next batch is checked with no store read;
        if the write fails, `run_batch` evicts them."""
        touched = [a for a in self.aggregates.values() if a.pending_events]
        aggregates = self.aggregates
        self.rows.reads = [
            VersionRead(i, v, a.version if (a := aggregates.get(i.int)) is not None else v)
            for i, v in self.read_at.values()
        ]
        repository = self.app.repository
        # save keeps the objects it is given only to cache them (when the repository does not
        # fast-forward) and to snapshot them (when intervals are set): neither for the ledger
        if repository.fastforward and not self.app.snapshotting_intervals and touched:
            self.app.save(PendingEvents(touched, BATCH_ID), ledger_rows=self.rows, recordings=False)
        else:
            self.app.save(*touched, ledger_rows=self.rows, recordings=False)  # nothing reads the recordings
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
            for left in self.app.shoes_in_use.moved_on(opened):
                _evict(cache, left)

    def evict(self) -> None:
        cache = self.app.repository.cache
        if cache is not None:
            for aggregate in self.aggregates.values():
                _evict(cache, aggregate.id)

    # -- one command

    def apply(self, cmd: Command | Refusal, raw: Raw) -> Result:
        if isinstance(cmd, Refusal):
            return self._refuse(None, raw, cmd, None)
        cid = cmd.command_id
        digest = payload_hash(cmd)
        prior = self.seen.get(cid)
        if prior is None and cid in self.known:
            k = self.known[cid]
            prior = (k.payload_hash, Result(status=k.status, command_id=cid, code=k.code, round_id=k.round_id))
        if prior is not None:
            return self._repeat(cmd, raw, digest, prior)
        result = self._execute(cmd, raw)
        self.rows.commands.append(CommandRow(cid, result.round_id, cmd.type, digest, result.status, result.code))
        self.seen[cid] = (digest, result)
        return result

    def _repeat(self, cmd: Command, raw: Raw, digest: str, prior: tuple[str, Result]) -> Result:
        """A command id seen before: the same payload is a duplicate, another one a conflict."""
        cid, first = cmd.command_id, prior[1]
        if prior[0] != digest:
            refusal = refuse(RefusalCode.COMMAND_ID_CONFLICT, command_id=cid, status=first.status)
            return self._refuse(cmd, raw, refusal, first.round_id)
        return Result(
            status="duplicate", command_id=cid, code=first.code,
            message=f"command {cid} was already handled ({first.status}); nothing recorded",
            round_id=first.round_id, original_status=first.status,
        )

    def _new_events(self) -> tuple[str, ...]:
        """Names of the events the current command recorded, on the aggregates it loaded."""
        names: list[str] = []
        for a, mark in self.marks:
            pending = a.pending_events
            if len(pending) > mark:
                prefix = a.EVENT_NAME_PREFIX
                names.extend([prefix + type(e).__name__ for e in pending[mark:]])
        return tuple(names)

    def _execute(self, cmd: Command, raw: Raw) -> Result:
        if self.debug:
            where = cmd.table_id if isinstance(cmd, ConfigureTable) else f"{cmd.table_id}#{cmd.round_no}"
            with ledger_logging.bound(command_id=cmd.command_id, round=where):
                return self._run(cmd, raw)
        return self._run(cmd, raw)

    def _run(self, cmd: Command, raw: Raw) -> Result:
        rtext = _round_text(cmd)
        self.marks = []
        try:
            consequence = self._dispatch(cmd, Stamp(cmd.command_id, cmd.studio_time.isoformat(), self.recorded_at))
        except Refusal as refusal:
            require(
                self._new_events() == (),
                f"command {cmd.command_id} was refused after recording events: {refusal}",
            )
            return self._refuse(cmd, raw, refusal, rtext)
        events = self._new_events()
        if consequence is not None:  # a human error: refused, but the round got its consequence
            return self._refuse(cmd, raw, consequence, rtext, events)
        return Result(status="accepted", command_id=cmd.command_id, round_id=rtext, events=events)

    def _dispatch(self, cmd: Command, stamp: Stamp) -> Refusal | None:
        """The command as a typed call on its round (and the round's shoe)."""
        # `type(...) is`: isinstance against a pydantic model class runs its metaclass's
        # Python-level check on every miss, several per command; the commands are final.
        if type(cmd) is OpenRound:
            self._open_round(cmd, stamp)
            return None
        if type(cmd) is ConfigureTable:
            self._configure_table(cmd, stamp)
            return None
        r = self.round_or_new(cmd) if type(cmd) is Void else self.round(cmd)
        before = r.phase
        consequence: Refusal | None = None
        match cmd:
            case PlaceBet():
                bet = Bet(cmd.bet_id, cmd.player_id, cmd.spot, cmd.bet_type, cmd.stake_minor, cmd.mode, cmd.seat_no)
                self._check_seats(r, bet)
                r.place_bet(bet, stamp)
            case CloseBetting():
                r.close_betting(stamp)
            case DealCard():
                consequence = self._deal_card(r, cmd, stamp)
            case Decide():
                r.decide(cmd.hand, cmd.action, cmd.source, cmd.amount_minor, stamp, player_id=cmd.player_id)
            case Follow():
                r.follow(cmd.bet_id, cmd.kind, cmd.accept, stamp)
            case Pause():
                r.pause(cmd.cause, cmd.by, cmd.note, cmd.player_id, stamp)
            case Resume():
                r.resume(cmd.by, cmd.note, stamp)
            case Void():
                r.void(cmd.cause, cmd.by, cmd.note, stamp)
            case ReverseSettlement():
                r.reverse_settlement(cmd.by, cmd.reason, cmd.then, cmd.cause, stamp)
                return None  # the shoe is long gone: no shoe effects
            case _:
                assert_never(cmd)
        self._after(r, before, stamp)
        return consequence

    def _open_round(self, cmd: OpenRound, stamp: Stamp) -> None:
        r = self.round_or_new(cmd)
        r.refuse_if_exists()
        rules = registry.get_rule_set(cmd.ruleset_id, cmd.ruleset_version)
        table = self.load(table_id_for(cmd.table_id))
        applied = None
        if table is not None and _as(Table, table).current is not None:  # configured: its current configuration
            config = _as(Table, table).config_for_round(
                ruleset_id=cmd.ruleset_id, ruleset_version=cmd.ruleset_version, currency=cmd.currency,
                round_no=cmd.round_no)
            applied = (config.config_version, config.config_hash, config.settings)
        shoe = self.shoe_or_new(cmd.table_id, cmd.shoe_id)
        round_in_shoe = shoe.start_round(
            stamp, rules, table_id=cmd.table_id, shoe_id=cmd.shoe_id, round_no=cmd.round_no, round_id=r.id,
        )
        r.open(
            stamp, rules, table_id=cmd.table_id, round_no=cmd.round_no, currency=cmd.currency, shoe_id=cmd.shoe_id,
            dealer_id=cmd.dealer_id, round_in_shoe=round_in_shoe, table=applied,
        )
        self.opened_shoes[cmd.table_id] = shoe.id

    def _configure_table(self, cmd: ConfigureTable, stamp: Stamp) -> None:
        found = self.load(table_id_for(cmd.table_id))
        if found is None:
            found = Table.new(cmd.table_id)
            self._keep(found)
        _as(Table, found).configure(
            stamp, table_id=cmd.table_id, game=cmd.game, ruleset_id=cmd.ruleset_id,
            ruleset_version=cmd.ruleset_version, currency=cmd.currency, timezone=cmd.timezone,
            settings=settings_of(cmd),
        )

    def _check_seats(self, r: Round, bet: Bet) -> None:
        """Seats held or lost in earlier rounds of the table (live-8d v2, domain/seating.py)."""
        r.refuse_unless_running()  # a closed round says so before any seat does
        rules = r.rules
        if spans_rounds(rules):
            self.table_or_new(r.table_id).check_bet(rules, bet, r.round_no)

    def _deal_card(self, r: Round, cmd: DealCard, stamp: Stamp) -> Refusal | None:
        r.refuse_unless_running(allow_flagged=True)  # before the shoe: a voided tombstone has none
        seen = self.shoe_of(r).seen_for(r._rules())
        return r.deal_card(parse_card(cmd.card), cmd.target, cmd.seq_no, seen, stamp)

    def _after(self, r: Round, phase_before: str, stamp: Stamp) -> None:
        """Shoe effects when a round closes in this command: its cards count
        against the shoe; a void under a replace-the-shoe policy retires it."""
        if phase_before == r.phase or not r.is_closed:  # most commands: no rule set lookup
            return
        rules = r.rules
        if rules is None:
            return
        shoe = self.shoe_of(r)
        shoe.record_round(stamp, rules, r.id, r.closing_cards())
        if spans_rounds(rules):
            self.table_or_new(r.table_id).round_closed(stamp, rules, r)
        if r.phase == "voided" and r.voided is not None and rules.error_policy.replace_shoe_on_void:
            shoe.retire(stamp, r.id, r.voided["cause"])

    def _refuse(self, cmd: Command | None, raw: Raw, refusal: Refusal, round_id: str | None,
                events: tuple[str, ...] = ()) -> Result:
        ids: Ids = _peek(raw)
        if cmd is not None:
            ids = (cmd.command_id, cmd.table_id, None if isinstance(cmd, ConfigureTable) else cmd.round_no, cmd.type)
        self.rows.rejections.append(
            RejectionRow(*ids, code=refusal.code, message=storable(refusal.message), payload=_raw_text(raw),
                         received_at=_now())
        )
        return Result(
            status="refused", command_id=ids[0], code=refusal.code, message=refusal.message,
            round_id=round_id, events=events,
        )


def _round_text(cmd: Command) -> str | None:
    """The round a command is about, as text (None for a command about the table as a whole)."""
    return None if type(cmd) is ConfigureTable else round_text_for(cmd.table_id, cmd.round_no)


def settings_of(cmd: ConfigureTable) -> TableSettings:
    """The command's overrides of the rule set, as the pure rules take them."""
    limits = tuple((t, BetLimit(v.min_minor, v.max_minor) if v.min_minor <= v.max_minor else _bad_limit(cmd, t))
                   for t, v in sorted((cmd.limits or {}).items()))
    return TableSettings(
        limits=limits, stake_divisible_by_min=cmd.stake_divisible_by_min, spots_count=cmd.spots_count,
        stakes_per_box_max=cmd.stakes_per_box_max, boxes_per_player_max=cmd.boxes_per_player_max,
        difference_max_minor=cmd.difference_max_minor,
    )


def _bad_limit(cmd: ConfigureTable, bet_type: str) -> BetLimit:
    raise refuse(RefusalCode.TABLE_LIMIT_FORBIDDEN, "min-above-max", table_id=cmd.table_id, bet_type=bet_type)


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


def _is_cached(cache: Cache[UUID, Any], aggregate_id: UUID) -> bool:
    try:
        cache.get(aggregate_id)
    except KeyError:
        return False
    return True


def _evict(cache: Cache[UUID, Any], aggregate_id: UUID) -> None:
    try:
        cache.get(aggregate_id, evict=True)
    except KeyError:
        pass


def _as(kind: type[A], found: object) -> A:
    """The aggregate under an id derived from its kind's namespace is of that kind."""
    if not isinstance(found, kind):
        raise InvariantBroken(f"aggregate {found!r} is a {type(found).__name__}, not a {kind.__name__}")
    return found


def _logged(unit: UnitOfWork, results: list[Result]) -> list[Result]:
    """The batch's results, each logged first when debug logging is on."""
    if unit.debug:
        for result in results:
            ledger_logging.log_result(result)
    return results

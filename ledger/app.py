"""LedgerApp: the only writer of events.

`handle(cmd)` and `ingest(raw_lines, batch_size=...)` turn feed commands into
events. A batch is one unit of work (ledger/unit.py): every command is taken in
(ledger/intake.py: parsed, duplicates answered) and handled by its function
(ledger/handlers.py) against in-memory aggregates, each with its own `Result`; then
every round and shoe touched, the command-index rows and the rejection rows are
saved in ONE transaction (`Application.save`). If that save hits a conflict (another
writer), the batch is rerun command by command against fresh state so each
result stays exact; a single command that still conflicts gets `conflict`.

(Overlapping batches, committing batch N in a writer thread while N+1 is checked, was
tried and measured slower on SQLite and PostgreSQL: the write is mostly Python work, the
mapping to stored events, so the two threads only contend for the GIL.)
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Protocol, cast, runtime_checkable
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import ApplicationRecorder, DataError, EventStore, Mapper, RecordConflictError

from domain.errors import InvariantBroken, Refusal, refuse, require
from domain.refusals import RefusalCode
from ledger import logging as ledger_logging
from ledger.batching import STATUSES, Raw, Result, batches, collector_spared
from ledger.commands import COMMAND_TYPES, Command
from ledger.ids import round_id_for
from ledger.intake import Intake, conflict, parse_all
from ledger.library.eventstore import LedgerEventStore, LedgerMapper
from ledger.library.recorders import Fence, KnownCommand
from ledger.partitions import can_fork, ingest_partitioned, partitioned_batches
from ledger.round import Round
from ledger.shoe import Shoe, shoe_id_for
from ledger.startup import tables_created_alone
from ledger.table import Table, table_id_for
from ledger.unit import ShoesInUse, UnitOfWork, as_kind

__all__ = ["BATCH_SIZE_DEFAULT", "BATCH_SIZE_MAX", "STATUSES", "LedgerApp", "Result", "batches"]

BATCH_SIZE_DEFAULT = 500  # fewer, larger commits: a commit's fixed cost is shared by more commands
BATCH_SIZE_MAX = 10_000
UNSTORABLE = (DataError, OverflowError, UnicodeError)  # a value the store cannot hold: one command's fault


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
        with collector_spared() as spared:
            for batch in batches(raws, batch_size):
                yield spared(lambda: self.run_batch(batch))  # noqa: B023 (called at once)

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
        return as_kind(Table, found)

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

    def run_batch(self, raws: Sequence[Raw], *, assume_new: bool = False, fence: Fence | None = None) -> list[Result]:
        """Check and record a batch of commands in one transaction; one result per command.
        `assume_new` (the live writer): first try the batch as if no command id had been seen
        before and no round, shoe or table it names that is not cached were stored (a new
        round, its new shoe, a table never configured), without the lookup (a statement and
        a round trip: a quarter of a one-command batch's CPU). Every command with an id
        writes its index row, so a command id the store already holds (a retry) fails that
        write whole; and every aggregate the batch decided on is checked in the write at the
        version it was read (0 for one taken as new), so one stored after all (after a
        restart, an eviction, another writer) fails it too. The batch then runs again the
        usual way: the same results, for one failed write."""
        parsed = self._parse(raws)
        unit = UnitOfWork(self, self.shoes_in_use)
        wanted = unit.wanted(parsed)
        fast = assume_new  # no lookup; a failed write runs the batch again the usual way
        again = partial(self.run_batch, fence=fence)
        ids = [] if fast else [p.command_id for p in parsed if type(p) in COMMAND_TYPES or not isinstance(p, Refusal)]  # type: ignore[union-attr]
        # The batch's two reads (command ids seen before; which new aggregates exist) in one round trip.
        known, existing = self.ledger_recorder().lookup(ids, wanted) if not fast and (ids or wanted) else ({}, set())
        intake = Intake(unit, known, ledger_logging.debug_enabled())
        intake.rows.fence = fence  # a lease holder's batch (`LeaseLost`: nothing of it commits)
        try:
            unit.absent = set(wanted) - existing
            take = intake.take
            results = [take(p, raw) for p, raw in zip(parsed, raws)]
            unit.save(intake.rows)
        except RecordConflictError:
            unit.evict()
            if fast:  # a command id already stored (a retry), or another writer
                return again(raws)
            if len(raws) == 1:
                return [conflict(parsed[0])]
            # Someone else wrote in between: rerun one command at a time on fresh state.
            return [r for raw in raws for r in again([raw])]
        except UNSTORABLE as err:
            unit.evict()
            if fast:
                return again(raws)
            if len(raws) == 1:
                return [self._unstorable(raws[0], err, fence)]
            # One command the store cannot hold must not cost the batch: find it alone.
            return [r for raw in raws for r in again([raw])]
        except BaseException:
            unit.evict()  # never leave half-applied aggregates in the cache
            raise
        if intake.debug:
            for result in results:
                ledger_logging.log_result(result)
        return results

    def _parse(self, raws: Sequence[Raw]) -> list[Command | Refusal]:
        return parse_all(raws)

    def _unstorable(self, raw: Raw, err: BaseException, fence: Fence | None = None) -> Result:
        """Last resort for a command that passed every check but that the store refused
        (every known case is refused earlier): a `bad_command` refusal, kept in the log."""
        unit = UnitOfWork(self, self.shoes_in_use)
        intake = Intake(unit, {})
        result = intake.take(refuse(RefusalCode.BAD_COMMAND, "store", error=err), raw)
        intake.rows.fence = fence
        unit.save(intake.rows)
        return result


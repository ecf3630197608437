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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import RecordConflictError
from pydantic import BaseModel, ValidationError

from domain import registry
from domain.errors import InvariantBroken, Refusal, require
from ledger import logging as ledger_logging
from ledger.commands import parse_command
from ledger.persistence import CommandRow, KnownCommand, LedgerRows, RejectionRow
from ledger.round import Round, round_id_for, round_text_for
from ledger.shoe import Shoe, shoe_id_for

BATCH_SIZE_DEFAULT = 500  # fewer, larger commits: a 500-command batch writes ~20% less per command than 200
BATCH_SIZE_MAX = 10_000
STATUSES = ("accepted", "duplicate", "refused", "conflict")


@dataclass(frozen=True, slots=True)
class Result:
    status: str  # accepted | duplicate | refused | conflict
    command_id: str | None
    code: str | None = None
    message: str = ""
    round_id: str | None = None
    events: tuple[str, ...] = ()  # names of the events this command recorded
    original_status: str | None = None  # for a duplicate: the status of the first delivery

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "command_id": self.command_id, "code": self.code, "message": self.message,
            "round_id": self.round_id, "events": list(self.events), "original_status": self.original_status,
        }



def payload_hash(cmd: BaseModel) -> str:
    # pydantic-core's serializer emits fields in declaration order, so the same
    # payload always gives the same bytes (whatever the key order on the wire).
    return hashlib.sha256(cmd.model_dump_json().encode("utf-8")).hexdigest()


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


def _raw_text(raw: bytes | str) -> str:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw


def _peek(raw: bytes | str) -> dict[str, Any]:
    """Best-effort ids from a command that failed validation, for the rejections log."""
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    for key, kind in (("command_id", str), ("table_id", str), ("round_no", int), ("type", str)):
        value = data.get(key)
        if isinstance(value, kind) and not isinstance(value, bool):
            out[key] = value[:128] if isinstance(value, str) else value
    return out


class LedgerApp(Application):
    name = "Ledger"
    # Hot rounds stay in the repository cache. Public reads fast-forward them from
    # the store; the write path (UnitOfWork.load) takes them from the cache as they
    # are. No deepcopy from the cache: a refused command never changes an aggregate
    # (checks come first), and a batch whose save fails evicts what it touched.
    env = {"AGGREGATE_CACHE_MAXSIZE": "5000", "DEEPCOPY_FROM_AGGREGATE_CACHE": "n"}

    # ------------------------------------------------------------ public API

    def handle(self, cmd: BaseModel | bytes | str) -> Result:
        return self.ingest([cmd], batch_size=1)[0]

    def ingest(
        self, raws: Iterable[BaseModel | bytes | str], batch_size: int = BATCH_SIZE_DEFAULT,
        on_batch: Callable[[list[Result]], None] | None = None, workers: int = 1,
    ) -> list[Result]:
        """Apply commands in batches of `batch_size`; `on_batch(results)` is called as each
        batch commits (progress). `workers` > 1 splits the tables over that many processes
        (ledger/shards.py: the feed is read in full first; per table the order is the feed's)."""
        require(1 <= batch_size <= BATCH_SIZE_MAX, f"batch_size must be 1..{BATCH_SIZE_MAX}, got {batch_size}")
        if workers > 1:
            from ledger.shards import can_fork, ingest_sharded

            if can_fork():
                return ingest_sharded(self, raws, batch_size, workers, on_batch)
        results: list[Result] = []
        for batch in batches(raws, batch_size):
            batch_results = self.run_batch(batch)
            results.extend(batch_results)
            if on_batch is not None:
                on_batch(batch_results)
        return results

    def get_round(self, round_id: UUID, version: int | None = None) -> Round:
        return self.repository.get(round_id, version=version)

    def find_round(self, table_id: str, round_no: int) -> Round:
        return self.get_round(round_id_for(table_id, round_no))

    def get_shoe(self, table_id: str, shoe_id: str) -> Shoe:
        return self.repository.get(shoe_id_for(table_id, shoe_id))

    def forget_cached(self) -> None:
        """Drop every cached round and shoe (another process changed them): the next use reads the store."""
        cache = self.repository.cache
        if cache is not None:
            self.repository.cache = type(cache)(cache.maxsize) if hasattr(cache, "maxsize") else type(cache)()

    def rejections(self, after_id: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        return self.recorder.select_rejections(after_id, limit)  # type: ignore[attr-defined]

    # ------------------------------------------------------------- batches

    def run_batch(self, raws: Sequence[BaseModel | bytes | str]) -> list[Result]:
        parsed = [self._parse(raw) for raw in raws]
        ids = [p.command_id for p in parsed if isinstance(p, BaseModel)]
        unit = UnitOfWork(self, self.recorder.select_commands(ids) if ids else {})  # type: ignore[attr-defined]
        try:
            unit.absent = self._absent(parsed)
            unit.debug = ledger_logging.debug_enabled()
            results = [unit.apply(p, raw) for p, raw in zip(parsed, raws)]
            unit.save()
        except RecordConflictError:
            unit.evict()
            if len(raws) == 1:
                return [self._conflict(parsed[0])]
            # Someone else wrote in between: rerun one command at a time on fresh state.
            return [r for raw in raws for r in self.run_batch([raw])]
        except BaseException:
            unit.evict()  # never leave half-applied aggregates in the cache
            raise
        if ledger_logging.debug_enabled():
            for result in results:
                ledger_logging.log_result(result)
        return results

    def _absent(self, parsed: Sequence[BaseModel | Refusal]) -> set[UUID]:
        """Rounds and shoes this batch may touch that are neither cached nor stored:
        found with one query, so opening a round costs no failed read of its own."""
        cache = self.repository.cache
        if cache is None:
            return set()
        wanted: set[UUID] = set()
        for p in parsed:
            if isinstance(p, BaseModel):
                wanted.add(round_id_for(p.table_id, p.round_no))  # type: ignore[attr-defined]
                if p.type == "open_round":  # type: ignore[attr-defined]
                    wanted.add(shoe_id_for(p.table_id, p.shoe_id))  # type: ignore[attr-defined]
        wanted = {i for i in wanted if i not in cache.cache}
        if not wanted:
            return set()
        return wanted - self.recorder.existing_ids(list(wanted))  # type: ignore[attr-defined]

    def _parse(self, raw: BaseModel | bytes | str) -> BaseModel | Refusal:
        if isinstance(raw, BaseModel):
            return raw
        try:
            return parse_command(raw)
        except ValidationError as err:
            if err.errors() and err.errors()[0]["type"] == "json_invalid":
                return Refusal("bad_command", f"not valid JSON: {err.errors()[0]['ctx'].get('error', 'invalid')}")
            return Refusal("bad_command", describe_validation_error(err))

    def _conflict(self, cmd: Any) -> Result:
        rid = round_id_for(cmd.table_id, cmd.round_no) if isinstance(cmd, BaseModel) else None
        return Result(
            status="conflict", command_id=getattr(cmd, "command_id", None), code="concurrency_conflict",
            message="another writer changed this round first; nothing was recorded, retry the command",
            round_id=str(rid) if rid else None,
        )


def batches(raws: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for raw in raws:
        batch.append(raw)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class UnitOfWork:
    """One batch: aggregates loaded once, commands applied in order, saved together."""

    app: LedgerApp
    known: dict[str, KnownCommand]  # command ids already in the store
    aggregates: dict[UUID, Any] = field(default_factory=dict)
    rows: LedgerRows = field(default_factory=LedgerRows)
    seen: dict[str, tuple[str, Result]] = field(default_factory=dict)  # command ids handled in this batch
    marks: dict[UUID, int] = field(default_factory=dict)  # pending-event counts when the command began
    absent: set[UUID] = field(default_factory=set)  # ids known to have no events when the batch began
    debug: bool = True  # bind command ids for log lines only when per-command lines are logged

    # -- loading

    def load(self, aggregate_id: UUID) -> Any | None:
        found = self.aggregates.get(aggregate_id)
        if found is None:
            found = self._cached(aggregate_id)
        if found is None:
            if aggregate_id in self.absent:
                return None
            try:
                found = self.app.repository.get(aggregate_id)
            except AggregateNotFoundError:
                return None
        self.aggregates[aggregate_id] = found
        self._mark(aggregate_id, found)
        return found

    def _cached(self, aggregate_id: UUID) -> Any | None:
        """The cached aggregate as it is, without fast-forwarding it from the store
        (that read cost a third of ingest). If another writer appended meanwhile,
        our save fails on the version check, the batch evicts what it touched and
        reruns on fresh state, so a stale cache can delay a command, never corrupt."""
        cache = self.app.repository.cache
        if cache is None:
            return None
        try:
            return cache.get(aggregate_id)
        except KeyError:
            return None

    def load_or_new(self, aggregate_id: UUID, make: Any) -> Any:
        found = self.load(aggregate_id)
        if found is None:
            found = self.aggregates[aggregate_id] = make()
            self._mark(aggregate_id, found)
        return found

    def _mark(self, aggregate_id: UUID, aggregate: Any) -> None:
        self.marks.setdefault(aggregate_id, len(aggregate.pending_events))

    def save(self) -> None:
        """`Application.save`, in three steps (tests hook the write step, `record`)."""
        event = self.handoff()
        self.finish(event, self.record(event))

    def handoff(self) -> ProcessingEvent:
        """Take the new events off the aggregates and put the aggregates in the cache (as
        the library does, without fast-forwarding), so the next batch is checked on this
        state with no store read. If the write fails, `run_batch` evicts them again."""
        event = ProcessingEvent()
        for aggregate in self.aggregates.values():
            event.events.extend(aggregate.collect_events())
            event.aggregates[aggregate.id] = aggregate
        event.saved_kwargs["ledger_rows"] = self.rows
        cache = self.app.repository.cache
        if cache is not None:
            for aggregate_id, aggregate in self.aggregates.items():
                if aggregate.version > 0:  # a shell whose command was refused stays unknown
                    cache.put(aggregate_id, aggregate)
        return event

    def record(self, event: ProcessingEvent) -> Any:
        """Write the events and rows in one transaction. This is
        `Application._record`, without `save`'s per-object runtime-Protocol isinstance checks
        (a tenth of ingest time); it reads only the handed-off events, never the aggregates."""
        return self.app._record(event)

    def finish(self, event: ProcessingEvent, recordings: Any) -> None:
        app = self.app
        app._take_snapshots(event)
        app._notify(recordings)
        app.notify(event.events)

    def evict(self) -> None:
        cache = self.app.repository.cache
        if cache is not None:
            for aggregate_id in self.aggregates:
                try:
                    cache.get(aggregate_id, evict=True)
                except KeyError:
                    pass

    # -- one command

    def apply(self, cmd: BaseModel | Refusal, raw: Any) -> Result:
        if isinstance(cmd, Refusal):
            return self._reject(None, raw, cmd, None)
        cid = cmd.command_id  # type: ignore[attr-defined]
        digest = payload_hash(cmd)
        prior = self.seen.get(cid)
        if prior is None and cid in self.known:
            k = self.known[cid]
            prior = (k.payload_hash, Result(status=k.status, command_id=cid, code=k.code, round_id=k.round_id))
        if prior is not None:
            if prior[0] != digest:
                refusal = Refusal(
                    "command_id_conflict",
                    f"command id {cid} was already used for a different command "
                    f"({prior[1].status}); a retry must repeat the same payload",
                )
                return self._reject(cmd, raw, refusal, prior[1].round_id)
            first = prior[1]
            return Result(
                status="duplicate", command_id=cid, code=first.code,
                message=f"command {cid} was already handled ({first.status}); nothing recorded",
                round_id=first.round_id, original_status=first.status,
            )
        result = self._execute(cmd, raw)
        self.rows.commands.append(
            CommandRow(cid, result.round_id, cmd.type, digest, result.status, result.code)  # type: ignore[attr-defined]
        )
        self.seen[cid] = (digest, result)
        return result

    def _new_events(self) -> tuple[str, ...]:
        """Names of the events the current command triggered, on the aggregates it loaded."""
        names: list[str] = []
        for k, mark in self.marks.items():
            a = self.aggregates[k]
            pending = a.pending_events
            if len(pending) > mark:
                prefix = a.EVENT_NAME_PREFIX
                names.extend(prefix + type(e).__name__ for e in pending[mark:])
        return tuple(names)

    def _execute(self, cmd: Any, raw: Any) -> Result:
        if self.debug:
            with ledger_logging.bound(command_id=cmd.command_id, round=f"{cmd.table_id}#{cmd.round_no}"):
                return self._run(cmd, raw)
        return self._run(cmd, raw)

    def _run(self, cmd: Any, raw: Any) -> Result:
        rid = round_id_for(cmd.table_id, cmd.round_no)
        rtext = round_text_for(cmd.table_id, cmd.round_no)
        self.marks = {}
        try:
            consequence = Dispatcher(self, cmd, rid).run()
        except Refusal as refusal:
            require(
                self._new_events() == (),
                f"command {cmd.command_id} was refused after recording events: {refusal}",
            )
            return self._reject(cmd, raw, refusal, rtext)
        events = self._new_events()
        if consequence is not None:  # a human error: refused, but the round got its consequence
            return self._reject(cmd, raw, consequence, rtext, events)
        return Result(status="accepted", command_id=cmd.command_id, round_id=rtext, events=events)

    def _reject(self, cmd: Any, raw: Any, refusal: Refusal, round_id: str | None, events: tuple[str, ...] = ()) -> Result:
        if cmd is not None:
            ids = {"command_id": cmd.command_id, "table_id": cmd.table_id, "round_no": cmd.round_no, "type": cmd.type}
        else:
            ids = _peek(raw)
        payload = raw.model_dump_json() if isinstance(raw, BaseModel) else _raw_text(raw)
        self.rows.rejections.append(
            RejectionRow(
                command_id=ids.get("command_id"), table_id=ids.get("table_id"), round_no=ids.get("round_no"),
                type=ids.get("type"), code=refusal.code, message=refusal.message, payload=payload, received_at=_now(),
            )
        )
        return Result(
            status="refused", command_id=ids.get("command_id"), code=refusal.code, message=refusal.message,
            round_id=round_id, events=events,
        )


class Dispatcher:
    """Routes one parsed command to the Round (and its Shoe)."""

    def __init__(self, unit: UnitOfWork, cmd: Any, round_id: UUID) -> None:
        self.unit, self.cmd, self.round_id = unit, cmd, round_id

    def run(self) -> Refusal | None:
        handler = getattr(self, "_" + self.cmd.type)
        return handler()

    def _round(self) -> Round:
        r = self.unit.load(self.round_id)
        if r is None:
            raise Refusal(
                "round_not_open",
                f"round {self.cmd.table_id}#{self.cmd.round_no} has not been opened; send open_round first",
            )
        return r

    def _new_round(self) -> Round:
        return self.unit.load_or_new(self.round_id, lambda: Round.new(self.cmd.table_id, self.cmd.round_no))

    def _shoe_of(self, r: Round) -> Shoe:
        shoe = self.unit.load(shoe_id_for(r.table_id, r.shoe_id))
        if shoe is None:
            raise InvariantBroken(f"round {r.id} has no shoe {r.shoe_id}")
        return shoe

    def _after(self, r: Round, phase_before: str) -> None:
        """Shoe effects when a round closes in this command: its cards count
        against the shoe; a void under a replace-the-shoe policy retires it."""
        if r.rules is None or phase_before == r.phase or not r.is_closed:
            return
        shoe = self._shoe_of(r)
        shoe.record_round(self.cmd, r.rules, r.id, r.closing_cards())
        if r.phase == "voided" and r.rules.error_policy.replace_shoe_on_void:
            shoe.retire(self.cmd, r.id, r.voided["cause"])

    def _open_round(self) -> None:
        r = self._new_round()
        r._refuse_if_exists()
        rules = registry.get_rule_set(self.cmd.ruleset_id, self.cmd.ruleset_version)
        shoe = self.unit.load_or_new(
            shoe_id_for(self.cmd.table_id, self.cmd.shoe_id), lambda: Shoe.new(self.cmd.table_id, self.cmd.shoe_id)
        )
        round_in_shoe = shoe.start_round(self.cmd, rules, r.id)
        r.open(self.cmd, round_in_shoe=round_in_shoe)

    def _simple(self, method: str) -> Any:
        r = self._round()
        before = r.phase
        out = getattr(r, method)(self.cmd)
        self._after(r, before)
        return out

    def _place_bet(self) -> None:
        self._simple("place_bet")

    def _close_betting(self) -> None:
        self._simple("close_betting")

    def _decide(self) -> None:
        self._simple("decide")

    def _follow(self) -> None:
        self._simple("follow")

    def _pause(self) -> None:
        self._simple("pause")

    def _resume(self) -> None:
        self._simple("resume")

    def _reverse_settlement(self) -> None:
        self._round().reverse_settlement(self.cmd)  # the shoe is long gone: no shoe effects

    def _deal_card(self) -> Refusal | None:
        r = self._round()
        r._refuse_unless_running(allow_flagged=True)
        before = r.phase
        consequence = r.deal_card(self.cmd, self._shoe_of(r).seen_for(r.rules))
        self._after(r, before)
        return consequence

    def _void(self) -> None:
        r = self._new_round()
        before = r.phase
        r.void(self.cmd)
        self._after(r, before)

"""Ingest on several worker processes: the feed's tables are split into partitions.

Checking a command is Python work, so one process uses one core. Everything a
command touches belongs to one table (its round, the table's shoes), so the
tables can be checked apart: each table goes whole to one partition, and each partition
is ingested in feed order by its own worker process with its own `LedgerApp` and
store connections, in batches, exactly as `LedgerApp.ingest` does. A table goes
to a partition when it is first seen (Router). Per table, the order of commands,
events and results is the feed's.

What changes with several workers:
- the interleaving of different tables' events in the store's global order (the
  audit trail's order) depends on which worker commits first;
- a command id reused across two tables is still never accepted twice (the
  command index's key decides: the loser's batch is rerun and it is refused
  `command_id_conflict`, or, alone in its batch, it gets `concurrency_conflict`
  and a retry is refused), but which of the two wins is the first to commit, not
  necessarily the first in the feed.

The feed is read as it comes and handed on in batches (memory stays flat in the
feed's length); a worker's batch waits until it is full, so a slow live stream
is better ingested with one worker. The parent process only routes and collects: it touches no
aggregate and writes nothing; its aggregate cache is cleared afterwards, since
the workers changed the rounds behind it.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import queue as queue_errors
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any, Protocol

from pydantic import BaseModel

from domain.errors import require
from ledger.batching import Raw, Result, collector_spared

WORKERS_MAX = 16
POLL_S = 0.5  # how often the parent checks that every worker is still alive (and a worker its parent)
ORPHANED_EXIT = 3  # a worker's exit code when its parent died before it
INBOX_BATCHES = 4  # batches waiting per worker: enough to keep it busy, few enough to bound memory
JOIN_S = 30.0  # at the end, how long the workers together may take to exit before they are killed


class Ingester(Protocol):
    """What the workers need of the application (ledger/app.py's LedgerApp; not imported
    here, so app and partitions do not import each other): workers are made as `type(app)(env=...)`."""

    @property
    def env(self) -> Mapping[str, str]: ...

    def run_batch(self, raws: Sequence[Raw]) -> list[Result]: ...

    def forget_cached(self) -> None: ...

    def close(self) -> None: ...


Batch = tuple[list[int], list[Raw]]  # feed positions and their raw commands
# ("batch", positions, results) | ("error" or "lost", None, text) | ("done", None, None)
Message = tuple[str, list[int] | None, Any]


class ShardFailed(RuntimeError):
    """A worker process failed; batches it committed before the failure stay committed.
    The class keeps its old name: `ledger ingest` prints it (ops/cli/errors.py)."""


class StoreLost(ShardFailed):
    """A worker lost its store connection (the pool's retries spent): `store_unreachable`."""


def available_cores() -> int:
    """The cores this process may run on (shared with `ledger audit replay`'s workers)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Workers are forked (they inherit the code and the read data); elsewhere one process runs."""
    return "fork" in multiprocessing.get_all_start_methods()


def default_workers() -> int:
    return min(WORKERS_MAX, available_cores()) if can_fork() else 1


KEY = b'"table_id":"'


def table_of(raw: Raw) -> str:
    """The table a raw command belongs to ('' when it has none: it is refused in partition 0).
    Compact JSON is read by a byte search: inside a JSON string a quote is escaped, so the
    key's bytes can only be the key itself; anything else (spaces, escapes) is parsed."""
    if isinstance(raw, BaseModel):
        return str(getattr(raw, "table_id", ""))
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    at = data.find(KEY)
    if at >= 0:
        end = data.find(b'"', at + len(KEY))
        found = data[at + len(KEY):end]
        if end > 0 and b"\\" not in found:
            return found.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(data)
    except (ValueError, TypeError):
        return ""
    value = parsed.get("table_id") if isinstance(parsed, dict) else None
    return value if isinstance(value, str) else ""


class Router:
    """Which partition each table goes to, decided when the table is first seen (a stream is
    never read ahead): the partition with the fewest commands routed so far (ties: the lowest),
    so the tables of a studio feed, which all start early, are dealt round-robin and the
    workers finish together. The same feed is always routed the same way."""

    def __init__(self, partitions: int) -> None:
        self.load = [0] * partitions
        self.home: dict[str, int] = {}

    def route(self, raw: Raw) -> int:
        table = table_of(raw)
        k = self.home.get(table)
        if k is None:
            k = self.home[table] = min(range(len(self.load)), key=lambda i: (self.load[i], i))
        self.load[k] += 1
        return k


def split(raws: Iterable[Raw], partitions: int) -> list[list[tuple[int, Raw]]]:
    """(feed position, raw) per partition, in feed order, as the workers get them: every table
    goes whole to one partition (Router)."""
    router = Router(partitions)
    out: list[list[tuple[int, Raw]]] = [[] for _ in range(partitions)]
    for i, raw in enumerate(raws):
        out[router.route(raw)].append((i, raw))
    return out


def ingest_partitioned(app: Ingester, raws: Iterable[Raw], batch_size: int, workers: int,
                       on_batch: Callable[[list[Result]], None] | None = None) -> list[Result]:
    """`LedgerApp.ingest` over `workers` processes (see the module doc). Results come back
    in feed order; `on_batch` sees each batch as it commits, in commit order."""
    results: dict[int, Result] = {}
    for positions, batch in partitioned_batches(app, raws, batch_size, workers):
        results.update(zip(positions, batch))
        if on_batch is not None:
            on_batch(batch)
    return [results[i] for i in range(len(results))]


def partitioned_batches(app: Ingester, raws: Iterable[Raw], batch_size: int,
                        workers: int) -> Iterator[tuple[list[int], list[Result]]]:
    """(feed positions, results) of each batch as a worker commits it. The feed is read as
    it comes: a worker's inbox holds a few batches at most, so memory does not grow with
    the feed. A failed worker stops the routing; what was committed stays; ShardFailed."""
    require(2 <= workers <= WORKERS_MAX, f"workers must be 2..{WORKERS_MAX}, got {workers}")
    ctx = multiprocessing.get_context("fork")  # the workers inherit the code; each opens its own store
    channel: Queue[Message] = ctx.Queue()
    inboxes: list[Queue[Batch | None]] = [ctx.Queue(maxsize=INBOX_BATCHES) for _ in range(workers)]
    procs = [ctx.Process(target=_work, args=(type(app), app.env, inbox, channel, os.getpid()), daemon=True)
             for inbox in inboxes]
    for p in procs:
        p.start()
    run = _Run(channel, procs)
    try:
        yield from _route(run, inboxes, raws, batch_size)
        for k, inbox in enumerate(inboxes):  # after a failure too: the others finish what they hold
            yield from run.send(k, inbox, None)
        yield from run.drain_until_done()
    finally:
        _end(procs, inboxes, channel)
        app.forget_cached()  # the workers moved these rounds on
    if run.errors:
        raise (StoreLost if run.lost else ShardFailed)("; ".join(run.errors))


def _end(procs: Sequence[BaseProcess], inboxes: Sequence[Queue[Batch | None]], channel: Queue[Message]) -> None:
    """Workers joined (each at most JOIN_S, then killed) and the queues closed without waiting.
    A dead worker's inbox may hold batches nobody will read: its feeder thread, blocked writing
    one into the full pipe, was joined at exit and hung the parent for good (issue 33)."""
    deadline = time.monotonic() + JOIN_S
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.exitcode is None:  # stuck (a connection that never answers): the run ends anyway
            p.kill()
            p.join(timeout=POLL_S)
    for inbox in inboxes:
        inbox.cancel_join_thread()  # what is left in it is for a worker that is gone
        inbox.close()
    channel.close()


def _route(run: _Run, inboxes: Sequence[Queue[Batch | None]], raws: Iterable[Raw],
           batch_size: int) -> Iterator[tuple[list[int], list[Result]]]:
    router = Router(len(inboxes))
    pending: list[Batch] = [([], []) for _ in inboxes]
    for i, raw in enumerate(raws):
        k = router.route(raw)
        if is_barrier(raw):  # what every table reads: committed alone, after all before it
            yield from _barrier(run, inboxes, pending, k, (i, raw))
            continue
        pending[k][0].append(i)
        pending[k][1].append(raw)
        if len(pending[k][0]) >= batch_size:
            yield from run.send(k, inboxes[k], pending[k])
            pending[k] = ([], [])
        if run.errors:
            return  # stop reading the feed
    for k, batch in enumerate(pending):
        if batch[0]:
            yield from run.send(k, inboxes[k], batch)


BARRIER_TYPE = b'"configure_operator"'  # a command of no table that the bets of every table read


def is_barrier(raw: Raw) -> bool:
    """A configuration every partition's commands may read (an operator): it has no table."""
    if isinstance(raw, BaseModel):
        return getattr(raw, "type", "") == "configure_operator"
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    return BARRIER_TYPE in data and not table_of(raw)


def _barrier(run: _Run, inboxes: Sequence[Queue[Batch | None]], pending: list[Batch], k: int,
             line: tuple[int, Raw]) -> Iterator[tuple[list[int], list[Result]]]:
    """Commit every command before `line`, then `line` alone, before any command after it:
    a bet after an operator's configuration is checked against it on every worker."""
    for j, batch in enumerate(pending):
        if batch[0]:
            yield from run.send(j, inboxes[j], batch)
            pending[j] = ([], [])
    yield from run.settle()
    yield from run.send(k, inboxes[k], ([line[0]], [line[1]]))
    yield from run.settle()


class _Run:
    """The parent's side: batches out to the workers' inboxes, results in from the channel."""

    def __init__(self, channel: Queue[Message], procs: Sequence[BaseProcess]) -> None:
        self.channel, self.procs = channel, procs
        self.errors: list[str] = []
        self.lost = False  # a worker's store connection was lost
        self.done = 0
        self.sent = self.received = 0  # batches

    def settle(self) -> Iterator[tuple[list[int], list[Result]]]:
        """Wait until every batch sent has committed (or a worker failed)."""
        while self.received < self.sent and not self.errors and all(p.exitcode is None for p in self.procs):
            yield from self.receive(block=True)

    def send(self, k: int, inbox: Queue[Batch | None], batch: Batch | None) -> Iterator[tuple[list[int], list[Result]]]:
        """Put `batch` in worker k's `inbox`, collecting results while the inbox is full."""
        while self.procs[k].exitcode is None:
            try:
                inbox.put(batch, timeout=POLL_S)
                self.sent += batch is not None
                break
            except queue_errors.Full:
                yield from self.receive(block=False)
        yield from self.receive(block=False)

    def drain_until_done(self) -> Iterator[tuple[list[int], list[Result]]]:
        while self.done < len(self.procs) and any(p.exitcode is None for p in self.procs):
            yield from self.receive(block=True)
        yield from self.receive(block=False)  # what the last workers sent before they exited

    def receive(self, block: bool) -> Iterator[tuple[list[int], list[Result]]]:
        while True:
            try:
                kind, positions, payload = self.channel.get(timeout=POLL_S) if block else self.channel.get_nowait()
            except queue_errors.Empty:
                self._note_deaths()
                return
            if kind == "batch" and positions is not None:
                self.received += 1
                yield positions, payload
            else:
                self.done += 1
                if kind in ("error", "lost"):
                    self.errors.append(payload)
                    self.lost = self.lost or kind == "lost"
            if block:
                return

    def _note_deaths(self) -> None:
        """A worker killed without a word (no "error" message): say so once."""
        dead = [p for p in self.procs if p.exitcode not in (None, 0)]
        if dead and self.channel.empty() and not any("died" in e for e in self.errors):
            self.errors.append(f"{len(dead)} ingest worker(s) died (exit codes {[p.exitcode for p in dead]})")


def sibling_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of another app on the same store, in another process: the tables exist
    (the first app made them), and apps creating them at once race in PostgreSQL's catalog."""
    return {**env, "CREATE_TABLE": "no"}


def _orphaned(parent: int) -> None:
    """A worker's watch (a thread of its own): once the process that started it is gone (a kill
    -9 leaves no one to read its results), the worker ends, within POLL_S, whatever it is doing:
    a read of a batch the parent left half-written, a write of results nobody reads, a commit
    (rolled back with its session, as in any crash; a rerun answers `duplicate` for what was
    committed). Its sessions, and the parent's sockets it inherited, end with it."""
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os._exit(ORPHANED_EXIT)


def _work(make: Callable[..., Ingester], env: Mapping[str, str], inbox: Queue[Batch | None],
          channel: Queue[Message], parent: int) -> None:
    threading.Thread(target=_orphaned, args=(parent,), name="parent-watch", daemon=True).start()
    try:
        app = make(env=sibling_env(env))
        try:
            with collector_spared() as spared:
                while (batch := inbox.get()) is not None:  # None: the end
                    positions, raws = batch
                    channel.put(("batch", positions, spared(lambda: app.run_batch(raws))))  # noqa: B023
        finally:
            app.close()
    except BaseException as exc:
        text = str(exc).strip().splitlines()
        channel.put(("lost" if _connection_lost(exc) else "error", None,
                     f"{type(exc).__name__}: {text[0] if text else ''}"))
        return
    channel.put(("done", None, None))


def _connection_lost(exc: BaseException) -> bool:
    """The store stopped answering (what ops/cli/errors.py reports as store_unreachable)."""
    from ledger.unreachable import lost_store_errors

    return isinstance(exc, lost_store_errors())


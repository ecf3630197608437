"""Group commit: many callers' commands, one transaction per short window.

Callers `submit(raws)` and get a Future of their own results. One writer thread
takes what has queued whenever it is free (at most `max_batch` commands) and
writes everything taken in ONE `LedgerApp.run_batch` call (one transaction):
what arrives while a batch commits makes the next batch, so batches grow with
the load by themselves and an idle writer adds no delay. `max_wait_ms` > 0 also
waits that long after the first waiting command to gather more (fewer, larger
transactions for more latency; `ledger ingest -` does that on a pipe). With it at 0,
`gather_ms` > 0 (`ledger serve`: GATHER_MS_DEFAULT) is an adaptive window: that wait, but only
while commands arrive faster than one a window and until GATHER_TARGET wait. Each future is resolved only
after that commit, so an answer always means "durably recorded". The queue is
FIFO and there is one writer per process, so the commands of a table keep their
arrival order. Across processes (`ledger serve --workers N`), `TableLocks` makes
sure no two processes write the same table at once.
"""
from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from ledger.app import LedgerApp
from ledger.batching import Result
from ledger.library.recorders import Fence

MAX_WAIT_MS_DEFAULT = 0.0  # a 2 ms window cost 2 ms on every answer and made no batch larger under load
# `ledger serve`'s adaptive window (`gather_ms`): wait up to this long after a batch's first command
# for more, but only while commands arrive faster than one per window (never when traffic is
# sparse: there a wait adds latency and no command), and only until GATHER_TARGET are queued. A
# transaction costs the writer ~200 us fixed plus ~50 a command (more in the service: each batch
# starts on cold caches), so at 1,000 commands/s batches of ~3 instead of ~1.2 cut the server's
# CPU a command by about a quarter (docs/benchmarks.md, "Where a command's CPU goes").
GATHER_MS_DEFAULT = 2.0
GATHER_TARGET = 8
_GAP_WEIGHT = 0.125  # of the newest gap between two commands' arrivals, in their moving average
MAX_BATCH_DEFAULT = 500
CONFLICT_RETRIES = 5
LOCK_PARTITIONS = 64


def table_of(raw: bytes | str) -> str | None:
    """The table id of a raw command (None when it has none: it will be refused as bad_command)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # a line nested too deep raised here and failed its whole batch (issue 19)
        return None
    value = data.get("table_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def partition_of(table_id: str, partitions: int) -> int:
    """A stable partition number (the same in every process and on every machine)."""
    digest = hashlib.blake2b(table_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


class TableLocks:
    """File locks, one per table partition, shared by the worker processes of one
    `ledger serve`: a batch holds the locks of every table it writes, taken in
    partition order (no deadlock)."""

    def __init__(self, directory: str, partitions: int = LOCK_PARTITIONS) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory, self.partitions = directory, partitions

    @contextmanager
    def hold(self, raws: Sequence[bytes | str]) -> Iterator[None]:
        wanted = sorted({partition_of(t, self.partitions) for t in map(table_of, raws) if t is not None})
        with ExitStack() as stack:
            for p in wanted:
                fd = os.open(os.path.join(self.directory, f"table-{p}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
                stack.callback(os.close, fd)
                fcntl.flock(fd, fcntl.LOCK_EX)
                stack.callback(fcntl.flock, fd, fcntl.LOCK_UN)
            yield


@dataclass
class _Request:
    raws: list[bytes | str]
    future: Future[list[Result]] | None = None  # set by `submit`: answered from the writer thread
    waiter: asyncio.Future[list[Result]] | None = None  # set by `results`: answered on its event loop
    arrived: float = field(default_factory=time.monotonic)
    timing: dict[str, float] | None = None  # filled in for ops/service/trace.py: batch start, commit end, batch size


BatchHook = Callable[[int, float, list[Result]], None]  # (commands, seconds, results) after each commit


class GroupCommitter:
    def __init__(self, app: LedgerApp, *, max_wait_ms: float = MAX_WAIT_MS_DEFAULT, max_batch: int = MAX_BATCH_DEFAULT,
                 locks: TableLocks | None = None, on_commit: BatchHook | None = None, gather_ms: float = 0.0,
                 answer_within_s: float | None = None) -> None:
        self.app, self.max_wait_s, self.max_batch = app, max_wait_ms / 1000.0, max_batch
        # `results` raises TimeoutError when its answer takes longer than this (None: it waits).
        self.answer_within_s = answer_within_s
        self.gather_s = gather_ms / 1000.0  # used when max_wait_ms is 0 (module docstring)
        self._gap = float("inf")  # moving average of the time between two commands' arrivals (writer thread's)
        self._last_arrival: float | None = None
        self.locks, self.on_commit = locks, on_commit
        self._queue: deque[_Request] = deque()
        self._queued = 0  # commands waiting
        self._cv = threading.Condition()
        self._closing = False
        # What the writer waits for: "idle" (any command: the first enqueued wakes it), "full" (the
        # window's end or a full batch: only a batch reaching max_batch wakes it), "" (writing).
        # So a caller wakes the writer at most once a batch, not once a command.
        self._waiting = ""
        self._enough = max_batch  # commands that end the writer's wait for a window
        self._gather_enough = min(GATHER_TARGET, max_batch)  # `_enough` in an adaptive window
        self._urgent = False  # an urgent command waits: no window
        # An event loop's callers open an adaptive window on the loop's own clock (`_enqueue`): the
        # idle writer is woken once a batch, at the window's end, not at its first command too.
        self._window: asyncio.TimerHandle | None = None
        self._window_over = False  # set by that timer: the writer writes what waits, with no wait of its own
        self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
        self._thread.start()

    def submit(self, raws: Sequence[bytes | str], timing: dict[str, float] | None = None) -> Future[list[Result]]:
        future: Future[list[Result]] = Future()
        request = _Request(list(raws), future=future, timing=timing)
        if not request.raws:
            future.set_result([])
            return future
        self._enqueue(request)
        return future

    async def results(self, raws: Sequence[bytes | str], timing: dict[str, float] | None = None,
                      urgent: bool = False) -> list[Result]:
        """`submit` for a caller on an event loop: the writer answers all of one batch's
        callers on a loop with ONE call into it (not one wake-up per caller), and a caller
        that went away (cancelled) is skipped, never an error in the writer. `urgent`: a
        caller known to be waiting on its previous answer ends the adaptive window now.
        TimeoutError after `answer_within_s`: the wait ends, and the writer skips the answer
        (one timer a call, which costs a third of what `asyncio.timeout` around it did)."""
        if not raws:
            return []
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[list[Result]] = loop.create_future()
        self._enqueue(_Request(list(raws), timing=timing, waiter=waiter), urgent, loop)
        if self.answer_within_s is None:
            return await waiter
        timer = loop.call_later(self.answer_within_s, _expire, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()

    def _enqueue(self, request: _Request, urgent: bool = False, loop: asyncio.AbstractEventLoop | None = None) -> None:
        with self._cv:
            if self._closing:
                raise RuntimeError("the ledger writer is shutting down")
            self._queue.append(request)
            self._queued += len(request.raws)
            self._urgent = self._urgent or urgent
            waiting = self._waiting
            if waiting == "idle" and loop is not None and self._gathering():
                # The window on the loop: a timer at its end wakes the writer, which then finds it over
                # and writes at once; enough commands or an urgent one wake it now (`_take`).
                if self._window is None:
                    self._enough = self._gather_enough
                    self._window = loop.call_later(self.gather_s, self._window_ends)
                if self._queued < self._enough and not urgent:
                    return
                self._window.cancel()
                self._window = None
            if waiting == "idle" or (waiting == "full" and (self._queued >= self._enough or urgent)):
                self._wake()

    def _wake(self) -> None:
        """The writer, waiting, goes on (the caller holds `_cv`)."""
        self._waiting = ""
        self._cv.notify()

    def _gathering(self) -> bool:
        """The adaptive window is on: no fixed one, and commands arrive faster than one a window."""
        return self.max_wait_s <= 0 < self.gather_s and self._gap < self.gather_s

    def _window_ends(self) -> None:
        """The loop's timer at the end of a window opened by `_enqueue`: the writer, still idle, takes the batch."""
        with self._cv:
            self._window = None
            if self._waiting == "idle" and self._queue:
                self._window_over = True  # (a loop timer may fire up to a millisecond early)
                self._wake()

    def close(self) -> None:
        """Write everything already submitted, then stop the writer thread."""
        with self._cv:
            self._closing = True
            self._cv.notify()
        self._thread.join()

    # ----------------------------------------------------------- writer thread

    def _run(self) -> None:
        _name_os_thread(self._thread.name)
        while True:
            taken = self._take()
            if not taken:
                return
            self._commit(taken)

    def _take(self) -> list[_Request]:
        """Wait for work, then for the window to close (or the batch to fill); take whole requests."""
        with self._cv:
            while not self._queue and not self._closing:
                self._waiting = "idle"
                self._cv.wait()
            self._waiting = ""
            if not self._queue:
                return []
            window, enough, adaptive = self.max_wait_s, self.max_batch, False
            if self._gathering():
                window, enough, adaptive = self.gather_s, self._gather_enough, True
            self._enough = enough
            deadline = self._queue[0].arrived + window
            while self._queued < enough and not self._closing and not (adaptive and self._urgent) \
                    and not self._window_over:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._waiting = "full"
                self._cv.wait(left)
            self._waiting = ""
            taken: list[_Request] = []
            count = 0
            while self._queue and (not taken or count + len(self._queue[0].raws) <= self.max_batch):
                request = self._queue.popleft()
                taken.append(request)
                count += len(request.raws)
            self._queued -= count
            self._urgent = self._window_over = False
        if self.gather_s > 0:
            self._arrivals(taken)
        return taken

    def _arrivals(self, taken: list[_Request]) -> None:
        """The moving average of the gap between commands' arrivals, from the requests just taken."""
        last, gap = self._last_arrival, self._gap
        for request in taken:
            if last is not None:
                each = max(0.0, request.arrived - last) / len(request.raws)
                gap = each if gap == float("inf") else gap + (each - gap) * _GAP_WEIGHT
            last = request.arrived
        self._last_arrival, self._gap = last, gap

    def _commit(self, taken: list[_Request]) -> None:
        raws = [raw for request in taken for raw in request.raws]
        started = time.perf_counter()
        try:
            results = self.write(raws)
        except BaseException as exc:  # every caller hears of it; the writer lives on
            _answer(taken, [exc] * len(taken))
            return
        committed = time.perf_counter()
        if self.on_commit is not None:
            self.on_commit(len(raws), committed - started, results)
        answers: list[Answer] = []
        at = 0
        for request in taken:
            if request.timing is not None:
                request.timing.update(b=started, c=committed, k=len(raws))
            answers.append(results[at : at + len(request.raws)])
            at += len(request.raws)
        _answer(taken, answers)

    def write(self, raws: list[bytes | str]) -> list[Result]:
        with self.locks.hold(raws) if self.locks else _nothing():
            return write_batch(self.app, raws)


Answer = list[Result] | BaseException


def _answer(taken: list[_Request], answers: list[Answer]) -> None:
    """Each request its answer: thread futures directly, event-loop waiters one call per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[list[Result]], Answer]]] = {}
    for request, answer in zip(taken, answers):
        if request.waiter is not None:
            by_loop.setdefault(request.waiter.get_loop(), []).append((request.waiter, answer))
        elif request.future is not None and not request.future.done():  # a cancelled future: no reason to stop
            if isinstance(answer, BaseException):
                request.future.set_exception(answer)
            else:
                request.future.set_result(answer)
    for loop, waiters in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, waiters)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass


def _expire(waiter: asyncio.Future[list[Result]]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def _settle(waiters: list[tuple[asyncio.Future[list[Result]], Answer]]) -> None:
    for waiter, answer in waiters:
        if waiter.done():  # its caller went away
            continue
        if isinstance(answer, BaseException):
            waiter.set_exception(answer)
        else:
            waiter.set_result(answer)


def write_batch(app: LedgerApp, raws: Sequence[bytes | str], fence: Fence | None = None) -> list[Result]:
    """One transaction (`run_batch`); a command that met another writer is retried on fresh
    state (run_batch evicted what it touched), so a caller never sees `conflict` for a race it lost once.
    Live commands are nearly always new: `assume_new` skips the lookup of their ids while their
    rounds are cached (a retry costs one failed write, then the usual way). `fence`: every
    transaction fenced by a slot's lease (`ledger consume --lease`)."""
    results = list(app.run_batch(raws, assume_new=True, fence=fence))
    for _ in range(CONFLICT_RETRIES):
        again = [i for i, r in enumerate(results) if r.status == "conflict"]
        if not again:
            break
        for i, result in zip(again, app.run_batch([raws[i] for i in again], fence=fence)):
            results[i] = result
    return results


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _name_os_thread(name: str) -> None:
    """The calling thread's name for the system too (/proc/PID/task/TID/comm, `top -H`): how
    live_bench tells the writer's CPU from the other threads'. Linux only; best effort."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass

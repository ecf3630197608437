"""The group committer on a stand-in ledger: whole requests per transaction in arrival
order, results split back per caller, conflicts retried, failures reach every caller;
table locks exclude another process from the same table partition only."""
from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from typing import Any

import pytest

from ledger.batching import Result
from ops.service.committer import GATHER_TARGET, GroupCommitter, TableLocks, partition_of, write_batch


class FakeLedger:
    """Records each run_batch call; the first time a command id ends in '!' it conflicts."""

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.gate, self.fail = gate, fail
        self.conflicted: set[str] = set()

    def run_batch(self, raws, assume_new=False, fence=None):  # type: ignore[no-untyped-def]  # LedgerApp.run_batch's
        if self.gate is not None:
            self.gate.wait()
        if self.fail:
            raise OSError("store down")
        ids = [json.loads(r)["command_id"] for r in raws]
        self.calls.append(ids)
        out = []
        for cid in ids:
            if cid.endswith("!") and cid not in self.conflicted:
                self.conflicted.add(cid)
                out.append(Result(status="conflict", command_id=cid, code="concurrency_conflict"))
            else:
                out.append(Result(status="accepted", command_id=cid))
        return out


def cmd(cid: str, table: str = "T1") -> str:
    return json.dumps({"command_id": cid, "table_id": table})


def test_requests_are_grouped_whole_in_arrival_order_and_answered_each():
    gate = threading.Event()
    ledger = FakeLedger(gate)
    committer = GroupCommitter(ledger, max_wait_ms=10_000, max_batch=4)  # type: ignore[arg-type]
    first = committer.submit([cmd("a")])  # the window is long: the writer waits for 4 commands, then at the gate
    rest = [committer.submit([cmd(f"{n}1"), cmd(f"{n}2")]) for n in "bcd"]
    gate.set()
    assert [r.command_id for r in first.result()] == ["a"]
    assert [[r.command_id for r in f.result()] for f in rest] == [["b1", "b2"], ["c1", "c2"], ["d1", "d2"]]
    committer.close()
    flat = [cid for call in ledger.calls for cid in call]
    assert flat == ["a", "b1", "b2", "c1", "c2", "d1", "d2"]  # arrival order kept
    assert all(len(call) <= 4 for call in ledger.calls) and len(ledger.calls) < 4  # grouped, never split


def test_a_conflict_is_retried_and_a_failure_reaches_every_caller():
    ledger = FakeLedger()
    results = write_batch(ledger, [cmd("x"), cmd("y!"), cmd("z")])  # type: ignore[arg-type]
    assert [r.status for r in results] == ["accepted"] * 3 and ledger.calls[-1] == ["y!"]
    committer = GroupCommitter(FakeLedger(fail=True), max_wait_ms=1)  # type: ignore[arg-type]
    futures = [committer.submit([cmd("p")]), committer.submit([cmd("q")])]
    for f in futures:
        with pytest.raises(OSError):
            f.result()
    committer.close()
    with pytest.raises(RuntimeError):
        committer.submit([cmd("late")])


def test_table_locks_exclude_the_same_partition_only(tmp_path):
    locks = TableLocks(str(tmp_path), partitions=8)
    mine = "bj-live-1"
    other = next(t for t in (f"t{n}" for n in range(100)) if partition_of(t, 8) != partition_of(mine, 8))

    def try_lock(table: str) -> bool:
        fd = os.open(tmp_path / f"table-{partition_of(table, 8)}.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a second open file: as another process would
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    with locks.hold([cmd("a", mine), "not json"]):
        assert not try_lock(mine)
        assert try_lock(other)
    assert try_lock(mine)


def test_event_loop_callers_are_answered_and_one_that_went_away_stops_nothing():
    import asyncio

    gate = threading.Event()
    ledger = FakeLedger(gate)
    committer = GroupCommitter(ledger, max_wait_ms=10_000, max_batch=3)  # type: ignore[arg-type]

    async def main() -> tuple[list[str], list[str], bool]:
        gone = asyncio.ensure_future(committer.results([cmd("gone")]))
        kept = asyncio.ensure_future(committer.results([cmd("k1"), cmd("k2")]))
        await asyncio.sleep(0.05)
        gone.cancel()  # its caller went away while the batch was being written
        gate.set()
        first = [r.command_id for r in await kept]
        later = [r.command_id for r in await committer.results([cmd("a1"), cmd("a2"), cmd("a3")])]  # writer lives on
        return first, later, gone.cancelled()

    first, later, cancelled = asyncio.run(main())
    committer.close()
    assert first == ["k1", "k2"] and later == ["a1", "a2", "a3"] and cancelled
    assert ledger.calls == [["gone", "k1", "k2"], ["a1", "a2", "a3"]]  # written all the same: nothing is undone


def test_a_thread_caller_that_cancelled_stops_nothing():
    gate = threading.Event()
    ledger = FakeLedger(gate)
    committer = GroupCommitter(ledger, max_wait_ms=10_000, max_batch=2)  # type: ignore[arg-type]
    gone, kept = committer.submit([cmd("gone")]), committer.submit([cmd("kept")])
    assert gone.cancel()  # still pending in the writer's hands: a concurrent Future may be cancelled
    gate.set()
    assert [r.command_id for r in kept.result(timeout=10)] == ["kept"]
    after = committer.submit([cmd("a1"), cmd("a2")]).result(timeout=10)  # the writer lives on
    assert [r.command_id for r in after] == ["a1", "a2"]
    committer.close()


def test_the_adaptive_window_gathers_a_steady_stream_and_never_delays_sparse_commands():
    import time

    ledger = FakeLedger()
    committer = GroupCommitter(ledger, gather_ms=300)  # type: ignore[arg-type]  # max_wait_ms 0: the adaptive window
    for n in range(3):  # sparse (gaps longer than the window): each answered at once, alone
        sent = time.monotonic()
        committer.submit([cmd(f"s{n}")]).result(timeout=10)
        assert time.monotonic() - sent < 0.2
        time.sleep(0.35)
    assert ledger.calls == [["s0"], ["s1"], ["s2"]]
    for f in [committer.submit([cmd(f"w{n}")]) for n in range(40)]:  # a steady stream: gaps far below the window
        f.result(timeout=10)
    ledger.calls.clear()
    futures = []
    for n in range(3):  # three commands 20 ms apart: gathered into one transaction by the window
        futures.append(committer.submit([cmd(f"g{n}")]))
        time.sleep(0.02)
    for f in futures:
        f.result(timeout=10)
    assert ledger.calls == [["g0", "g1", "g2"]]
    sent = time.monotonic()  # the window ends as soon as enough commands (GATHER_TARGET) wait
    first = committer.submit([cmd("t0")])
    time.sleep(0.05)  # the writer took up the window
    for f in [first] + [committer.submit([cmd(f"t{n}")]) for n in range(1, GATHER_TARGET)]:
        f.result(timeout=10)
    assert time.monotonic() - sent < 0.25
    committer.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="Linux /proc")
def test_the_writer_thread_is_named_for_the_system_too():
    from ops.bench.live_bench import WRITER_THREAD

    committer = GroupCommitter(FakeLedger())  # type: ignore[arg-type]
    committer.submit([cmd("a")]).result(timeout=10)  # the writer has run (named itself first)
    native_id = committer._thread.native_id
    with open(f"/proc/self/task/{native_id}/comm") as f:
        assert f.read().strip() == WRITER_THREAD  # how live_bench tells the writer's CPU from the others'
    committer.close()


def test_an_urgent_caller_ends_the_adaptive_window():
    import asyncio
    import time

    ledger = FakeLedger()
    committer = GroupCommitter(ledger, gather_ms=500)  # type: ignore[arg-type]
    for f in [committer.submit([cmd(f"w{n}")]) for n in range(40)]:  # a steady stream: the window is on
        f.result(timeout=10)
    ledger.calls.clear()

    async def main() -> float:
        first = asyncio.ensure_future(committer.results([cmd("u0")]))
        await asyncio.sleep(0.05)  # the writer waits in the window for more
        sent = time.monotonic()
        await committer.results([cmd("u1")], urgent=True)  # a caller that waited on its previous answer
        await first
        return time.monotonic() - sent

    assert asyncio.run(main()) < 0.25  # not the window's 500 ms
    assert ledger.calls == [["u0", "u1"]]  # still one transaction: what had gathered goes with it
    committer.close()



class CountingCondition(threading.Condition):
    """The committer's condition, counting the writer's wake-ups and its timed waits."""

    def __init__(self, lock: Any = None) -> None:
        super().__init__(lock)
        self.notified = self.timed_waits = 0

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        super().notify(n)

    def wait(self, timeout: float | None = None) -> bool:
        self.timed_waits += timeout is not None
        return super().wait(timeout)


def test_an_event_loop_s_window_wakes_the_writer_once_a_batch_at_its_end(monkeypatch):
    """Callers on an event loop open the adaptive window on the loop's clock: the idle writer
    is not woken by the window's first command, only at its end (a loop timer), and then
    writes at once, with no timed wait of its own; enough commands still end it early."""
    import asyncio

    ledger = FakeLedger()
    with monkeypatch.context() as patched:
        patched.setattr(threading, "Condition", CountingCondition)  # the one the committer makes
        committer = GroupCommitter(ledger, gather_ms=100)  # type: ignore[arg-type]
    cv = committer._cv
    assert isinstance(cv, CountingCondition)
    for f in [committer.submit([cmd(f"w{n}")]) for n in range(40)]:  # a steady stream: the window is on
        f.result(timeout=10)
    ledger.calls.clear()

    async def three_in_a_window() -> float:
        sent = time.monotonic()
        calls = []
        for n in range(3):
            calls.append(asyncio.ensure_future(committer.results([cmd(f"g{n}")])))
            await asyncio.sleep(0.01)
        await asyncio.gather(*calls)
        return time.monotonic() - sent

    while committer._waiting != "idle":  # the writer waits for work
        time.sleep(0.001)
    cv.notified = cv.timed_waits = 0
    took = asyncio.run(three_in_a_window())
    assert ledger.calls == [["g0", "g1", "g2"]]  # gathered by the window
    assert 0.09 < took < 0.5  # answered at the window's end (100 ms), not at once
    assert cv.notified == 1 and cv.timed_waits == 0  # woken once, by the window's end, and wrote at once

    async def enough() -> float:
        sent = time.monotonic()
        await asyncio.gather(*(committer.results([cmd(f"e{n}")]) for n in range(GATHER_TARGET)))
        return time.monotonic() - sent

    ledger.calls.clear()
    assert asyncio.run(enough()) < 0.09  # a full window is written before its end
    assert ledger.calls == [[f"e{n}" for n in range(GATHER_TARGET)]]
    committer.close()

def test_an_answer_later_than_answer_within_s_is_a_timeout_and_the_writer_skips_it():
    import asyncio

    gate = threading.Event()
    ledger = FakeLedger(gate)
    committer = GroupCommitter(ledger, answer_within_s=0.05)  # type: ignore[arg-type]

    async def wait() -> None:
        started = time.monotonic()
        with pytest.raises(TimeoutError):  # the bound 2 s only keeps a broken committer from hanging the test
            await asyncio.wait_for(committer.results([cmd("late")]), 2.0)
        assert time.monotonic() - started < 1.0  # the committer's own timeout, not the bound's
        assert await committer.results([]) == []

    asyncio.run(wait())
    gate.set()  # the writer answers a caller that gave up: skipped, no error, the writer lives on
    assert [r.command_id for r in committer.submit([cmd("next")]).result(timeout=5)] == ["next"]
    committer.close()
    assert ledger.calls == [["late"], ["next"]]


def test_an_answer_within_answer_within_s_is_the_results():
    import asyncio

    committer = GroupCommitter(FakeLedger(), answer_within_s=5.0)  # type: ignore[arg-type]

    async def wait() -> list[Result]:
        return await committer.results([cmd("a"), cmd("b")])

    assert [r.command_id for r in asyncio.run(wait())] == ["a", "b"]
    committer.close()

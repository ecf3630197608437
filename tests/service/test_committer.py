"""The group committer on a stand-in ledger: whole requests per transaction in arrival
order, results split back per caller, conflicts retried, failures reach every caller;
table locks exclude another process from the same table partition only."""
from __future__ import annotations

import fcntl
import json
import os
import threading

import pytest

from ledger.batching import Result
from ops.service.committer import GroupCommitter, TableLocks, partition_of, write_batch


class FakeLedger:
    """Records each run_batch call; the first time a command id ends in '!' it conflicts."""

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.gate, self.fail = gate, fail
        self.conflicted: set[str] = set()

    def run_batch(self, raws):  # type: ignore[no-untyped-def]
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

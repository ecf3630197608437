"""Per-request timestamps and GC pauses of `ledger serve`, for finding where latency goes.

Off unless LEDGER_SERVE_TRACE_DIR names a directory: then each worker process keeps,
in memory, one row per POST /v1/commands request and one per cyclic-collector pass,
and writes them to `trace-<pid>.jsonl` in that directory when it shuts down. The
clock is time.perf_counter (CLOCK_MONOTONIC on Linux: the same clock in every process
of the machine, so the load generator can join its own timestamps to these).

A request's row (seconds): `a` arrived (ASGI middleware entered), `q` enqueued for the
writer, `b` its batch started, `c` its batch committed, `r` the handler resumed after
the commit, `s` the response finished; `n` commands, `id` the first command_id, `k` the
commands in its batch. A GC row: `gc` generation, `t0`/`t1` start and end, `thread`.
"""
from __future__ import annotations

import gc
import json
import os
import threading
import time
from typing import Any

TRACE_DIR_ENV = "LEDGER_SERVE_TRACE_DIR"
ROWS_MAX = 2_000_000  # a bound on memory; the bench's runs stay far below


class Trace:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.rows: list[dict[str, Any]] = []
        self._gc_started = 0.0

    def add(self, row: dict[str, Any]) -> None:
        if len(self.rows) < ROWS_MAX:
            self.rows.append(row)  # list.append is atomic under the GIL: the writer thread and the loop share it

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.add({"gc": info.get("generation"), "t0": self._gc_started, "t1": time.perf_counter(),
                      "collected": info.get("collected"), "thread": threading.current_thread().name})

    def start(self) -> None:
        gc.callbacks.append(self._on_gc)

    def dump(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, f"trace-{os.getpid()}.jsonl"), "w", encoding="utf-8") as out:
            for row in self.rows:
                out.write(json.dumps(row) + "\n")


def from_env() -> Trace | None:
    directory = os.environ.get(TRACE_DIR_ENV)
    return Trace(directory) if directory else None

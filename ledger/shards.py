"""Ingest on several processes: the feed's tables are split into shards.

Checking a command is Python work, so one process uses one core. Everything a
command touches belongs to one table (its round, the table's shoes), so the
tables can be checked apart: each table goes whole to one shard, and each shard is ingested in feed order by its own worker process with its
own `LedgerApp` and store connections, in batches, exactly as `LedgerApp.ingest`
does. Tables are dealt to shards by their command counts, so the workers finish together. Per table, the order of commands, events and results is the feed's.

What changes with several workers:
- the interleaving of different tables' events in the store's global order (the
  audit trail's order) depends on which worker commits first;
- a command id reused across two tables is still never accepted twice (the
  command index's key decides: the loser's batch is rerun and it is refused
  `command_id_conflict`, or, alone in its batch, it gets `concurrency_conflict`
  and a retry is refused), but which of the two wins is the first to commit, not
  necessarily the first in the feed.

The feed is read in full before the workers start (a live stream is ingested
with one worker). The parent process only routes and collects: it touches no
aggregate and writes nothing; its aggregate cache is cleared afterwards, since
the workers changed the rounds behind it.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import queue as queue_errors
from collections.abc import Callable, Iterable, Mapping, Sequence
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Any, Protocol

from pydantic import BaseModel

from domain.errors import require
from ledger.batching import Raw, Result, batches, collector_spared

WORKERS_MAX = 16
POLL_S = 0.5  # how often the parent checks that every worker is still alive


class Ingester(Protocol):
    """What the shards need of the application (ledger/app.py's LedgerApp; not imported
    here, so app and shards do not import each other): workers are made as `type(app)(env=...)`."""

    @property
    def env(self) -> Mapping[str, str]: ...

    def run_batch(self, raws: Sequence[Raw]) -> list[Result]: ...

    def forget_cached(self) -> None: ...

    def close(self) -> None: ...


Message = tuple[str, list[int] | None, Any]  # ("batch", positions, results) | ("error", None, text) | ("done", None, None)


class ShardFailed(RuntimeError):
    """A worker process failed; batches it committed before the failure stay committed."""


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
    """The table a raw command belongs to ('' when it has none: it is refused in shard 0).
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


def split(raws: Sequence[Raw], shards: int) -> list[list[tuple[int, Raw]]]:
    """(feed position, raw) per shard, in feed order. Every table goes whole to one shard;
    the tables are dealt largest first to the shard with the fewest commands so far, so
    the workers finish together (ties by table id: the same feed splits the same way)."""
    tables = [table_of(raw) for raw in raws]
    sizes: dict[str, int] = {}
    for t in tables:
        sizes[t] = sizes.get(t, 0) + 1
    load = [0] * shards
    home: dict[str, int] = {}
    for t in sorted(sizes, key=lambda t: (-sizes[t], t)):
        home[t] = min(range(shards), key=lambda k: (load[k], k))
        load[home[t]] += sizes[t]
    out: list[list[tuple[int, Raw]]] = [[] for _ in range(shards)]
    for i, (raw, t) in enumerate(zip(raws, tables)):
        out[home[t]].append((i, raw))
    return out


def ingest_sharded(app: Ingester, raws: Iterable[Raw], batch_size: int, workers: int,
                   on_batch: Callable[[list[Result]], None] | None = None) -> list[Result]:
    """`LedgerApp.ingest` over `workers` processes (see the module doc). Results come back
    in feed order; `on_batch` sees each batch as it commits, in commit order."""
    require(2 <= workers <= WORKERS_MAX, f"workers must be 2..{WORKERS_MAX}, got {workers}")
    items = list(raws)
    shards = [s for s in split(items, workers) if s]
    results: list[Result | None] = [None] * len(items)
    ctx = multiprocessing.get_context("fork")  # the workers inherit the code; each opens its own store
    channel: Queue[Message] = ctx.Queue()
    procs = [
        ctx.Process(target=_work, args=(type(app), app.env, shard, batch_size, channel), daemon=True)
        for shard in shards
    ]
    for p in procs:
        p.start()
    try:
        errors = _collect(channel, procs, results, on_batch)
    finally:
        for p in procs:
            p.join(timeout=60)
        app.forget_cached()  # the workers moved these rounds on
    if errors:
        raise ShardFailed("; ".join(errors))
    return [r for r in results if r is not None]  # every position is filled when no worker failed


def _collect(channel: Queue[Message], procs: Sequence[BaseProcess], results: list[Result | None],
             on_batch: Callable[[list[Result]], None] | None) -> list[str]:
    done = 0
    errors: list[str] = []
    while done < len(procs):
        try:
            kind, positions, payload = channel.get(timeout=POLL_S)
        except queue_errors.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead and channel.empty():
                errors.append(f"{len(dead)} ingest worker(s) died (exit codes {[p.exitcode for p in dead]})")
                return errors
            continue
        if kind == "batch" and positions is not None:
            for i, result in zip(positions, payload):
                results[i] = result
            if on_batch is not None:
                on_batch(payload)
        else:
            done += 1
            if kind == "error":
                errors.append(payload)
    return errors


def _work(make: Callable[..., Ingester], env: Mapping[str, str], shard: list[tuple[int, Raw]], batch_size: int,
          channel: Queue[Message]) -> None:
    try:
        # The parent's app made the tables; workers creating them at once race in PostgreSQL's catalog.
        app = make(env={**env, "CREATE_TABLE": "no"})
        try:
            with collector_spared() as after_batch:
                for batch in batches(shard, batch_size):
                    results = app.run_batch([raw for _, raw in batch])
                    channel.put(("batch", [i for i, _ in batch], results))
                    after_batch()
        finally:
            app.close()
    except BaseException as exc:
        channel.put(("error", None, f"{type(exc).__name__}: {exc}"))
        return
    channel.put(("done", None, None))

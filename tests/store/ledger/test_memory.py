"""Ingest's memory is flat in the number of rounds (issue 9): what it keeps between batches
is the rounds in flight, each table's current shoe and table, and caches bounded by
design; nothing grows with the rounds ingested."""
from __future__ import annotations

import gc
import tracemalloc
import uuid
from collections.abc import Iterator

from ledger.app import LedgerApp
from ledger.commands import parse_command
from ledger.store import open_app
from ops.sim.simulator import simulate

TABLES = 5  # one of each simulated rule set, Teen Patti (a shoe a round) included
PER_TABLE_MAX = 3  # its round in flight, its current shoe, its table


def _cached(app: LedgerApp) -> int:
    cache = app.repository.cache
    assert cache is not None
    return len(cache.cache)


def _batches(app: LedgerApp, rounds: int) -> Iterator[int]:
    for n, _ in enumerate(app.ingest_batches(simulate(TABLES, rounds, seed=3), batch_size=100)):
        yield n


def test_the_aggregate_cache_holds_what_is_in_flight_not_every_shoe(tmp_path) -> None:
    app = open_app(f"sqlite:///{tmp_path / 'cache.db'}")
    try:
        held = [_cached(app) for _ in _batches(app, 40)]
    finally:
        app.close()
    assert len(held) > 30
    assert max(held) <= PER_TABLE_MAX * TABLES, held


def test_parsing_a_command_keeps_none_of_its_values() -> None:
    """Pydantic's process-wide JSON string cache would hold every new id (~1 MiB of them)."""
    fresh = f'"command_id":"{uuid.uuid4().hex}-'.encode()  # ids no earlier test parsed
    lines = [line.replace(b'"command_id":"', fresh) for line in simulate(2, 20, seed=5)]
    parse_command(lines[0])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for line in lines:
            parse_command(line)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(lines) > 500
    assert kept < 16 * 1024, kept

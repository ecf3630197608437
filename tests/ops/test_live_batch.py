"""Round trips of a live batch on PostgreSQL (ops/bench/live_batch.py counts them from
libpq's protocol trace): one read (command ids and new aggregates together) and one
pipelined write transaction. Was ~9 (two reads, BEGIN, two per COPY, lock, currval, COMMIT)."""
from __future__ import annotations

import os
import tempfile

import pytest

from ledger.store import open_app
from ops.bench.live_batch import count_round_trips, traced
from ops.bench.live_bench import feed


def test_round_trips_are_switches_from_client_to_server_messages() -> None:
    trace = "F\t10\tParse\nF\t4\tSync\nB\t4\tParseComplete\nB\t5\tReadyForQuery\nF\t4\tSync\nB\t5\tReadyForQuery\n"
    assert count_round_trips(trace) == 2
    assert count_round_trips("") == 0


@pytest.mark.postgres
def test_a_live_batch_costs_two_round_trips(pg_schema_url: str) -> None:
    app = open_app(pg_schema_url)
    fd, path = tempfile.mkstemp()
    os.close(fd)
    try:
        lines = feed(300, "rt")
        batches = [lines[i:i + 5] for i in range(0, len(lines), 5)]
        for batch in batches[:10]:
            app.run_batch(batch)
        with traced(app, path):
            for batch in batches[10:]:
                assert {r.status for r in app.run_batch(batch)} == {"accepted"}
        with open(path) as f:
            trips = count_round_trips(f.read())
        assert trips <= 2 * len(batches[10:])
        assert trips >= len(batches[10:])  # the trace did see the writes
    finally:
        app.close()
        os.unlink(path)

"""Round trips of a live batch on PostgreSQL (ops/bench/live_batch.py counts them from
libpq's protocol trace): one read (command ids and new aggregates together) and one
write, each ONE statement (the write function's call is its own transaction); the read only
when a batch opens a round (`assume_new`: new command ids are not looked up). Was ~9
round trips (two reads, BEGIN, two per COPY, lock, currval, COMMIT), then 2 round trips
of 8 statements (BEGIN, rows, lock timeout, lock, NOTIFY, events, COMMIT, pipelined)."""
from __future__ import annotations

import os
import tempfile

import pytest

from ledger.store import open_app
from ops.bench.live_batch import count_round_trips, count_statements, traced
from ops.bench.live_bench import feed


def test_round_trips_are_switches_from_client_to_server_messages() -> None:
    trace = "F\t10\tParse\nF\t4\tSync\nB\t4\tParseComplete\nB\t5\tReadyForQuery\nF\t4\tSync\nB\t5\tReadyForQuery\n"
    assert count_round_trips(trace) == 2
    assert count_round_trips("") == 0


def test_statements_are_the_client_s_execute_messages() -> None:
    trace = "F\t10\tParse\t\"\" \"BEGIN\"\nF\t9\tExecute\t\"\" 0\nB\t4\tExecute\nF\t9\tExecute\t\"\" 0\nF\t4\tSync\n"
    assert count_statements(trace) == 2


@pytest.mark.postgres
def test_a_live_batch_costs_at_most_two_round_trips_of_one_statement_each(pg_schema_url: str) -> None:
    app = open_app(pg_schema_url)
    fd, path = tempfile.mkstemp()
    os.close(fd)
    try:
        lines = feed(300, "rt")
        batches = [lines[i:i + 5] for i in range(0, len(lines), 5)]
        for batch in batches[:10]:
            app.run_batch(batch, assume_new=True)
        with traced(app, path):
            for batch in batches[10:]:
                assert {r.status for r in app.run_batch(batch, assume_new=True)} == {"accepted"}
        with open(path) as f:
            text = f.read()
        trips = count_round_trips(text)
        assert trips <= 2 * len(batches[10:])
        # one write each, and a read only where a batch opens a round (ids of new commands are not looked up)
        n = len(batches[10:])
        assert n < count_statements(text) < 1.5 * n
        assert trips >= len(batches[10:])  # the trace did see the writes
    finally:
        app.close()
        os.unlink(path)

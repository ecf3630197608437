"""Round trips of a live batch on PostgreSQL (ops/bench/live_batch.py counts them from
libpq's protocol trace): ONE statement, the write (the write function's call is its own
transaction); no read (`assume_new`: new command ids and aggregates not cached are not
looked up, the write checks them). Then one read and one write where a batch opened a round; ~9
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
def test_a_live_batch_costs_one_round_trip_of_one_statement(pg_schema_url: str) -> None:
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
        # one write each and no read: new command ids and a new round (its shoe, its table) are not looked up
        n = len(batches[10:])
        assert count_statements(text) == n  # (so the trace did see the writes)
        assert count_round_trips(text) <= n  # (libpq's trace file may still buffer the last answers)
    finally:
        app.close()
        os.unlink(path)

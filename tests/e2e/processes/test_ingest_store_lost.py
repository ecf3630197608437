"""`ledger ingest --workers 2` when the store's connections are lost (issue 33): every run
ends, exit 0 (the pool reconnected) or 2 (one line, store_unreachable), never a hang; and a
second ingest then leaves the store equal to a clean one.

The hang: a worker whose connection was lost exits, and batches the parent had queued for it
stay in its inbox. The queue's feeder thread, writing one of them (~100 KB) into the full
pipe nobody reads any more, blocked for good, and the parent joined that thread at exit.
The first test makes that happen every time (every worker's write fails, batches larger
than the pipe); the second terminates PostgreSQL backends at random moments, TRIALS times
here (1 in the default run, a few seconds on a quiet machine; 20 with LEDGER_SLOW=1; 20 and
more with `python -m ops.bench.fault_trials ingest-kill`, docs/scaling.md). The same for
`ledger project` (`project-kill`): exit 2 in one line, and a second run equals a rebuild.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ops.bench.fault_trials import ROOT, ingest_trials, project_trials
from tests.conftest import pg_base_url

TRIALS = 20 if os.environ.get("LEDGER_SLOW") else 1
END_BOUND_S = 60  # a run ends this long after it started at most (JOIN_S 30 of it: workers that do not exit)

LOSE_EVERY_WRITE = textwrap.dedent("""
    import sys
    from eventsourcing.persistence import OperationalError
    from ledger.partitions import ShardFailed
    from ledger.store import open_app
    from ops.sim.simulator import simulate

    app = open_app(sys.argv[1])

    def lost(self, *args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    type(app.recorder).insert_events = lost  # the forked workers inherit it
    try:
        app.ingest(list(simulate(2, 300, seed=3)), batch_size=1500, workers=2)
    except ShardFailed as err:
        print(f"{type(err).__name__}: {str(err)[:200]}", flush=True)
""")


def test_workers_that_lose_the_store_with_batches_queued_end_the_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = subprocess.Popen([sys.executable, "-c", LOSE_EVERY_WRITE, url], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=END_BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the run did not end in {END_BOUND_S} s (it printed {out.decode()[:300]!r})")
    assert proc.returncode == 0, err.decode()[-2000:]
    assert out.decode().startswith("StoreLost: OperationalError: server closed the connection"), out


@pytest.mark.postgres
def test_backends_terminated_under_two_workers_end_the_run_and_a_reingest_equals_a_clean_one(capsys: Any) -> None:
    # within 50 ms of the first events: on a quiet machine the whole ingest takes ~0.2 s after them
    trials = ingest_trials(pg_base_url(), TRIALS, END_BOUND_S, (0.0, 0.05), tables=8, rounds=40, seed=33)
    report = capsys.readouterr().out
    assert all(t.exit in (0, 2) for t in trials), report
    assert all(t.equal for t in trials), report
    assert all(t.line.startswith("ledger ingest: error store_unreachable:") for t in trials if t.exit == 2), report
    assert sum(t.killed for t in trials) > 0, report  # the faults did land


@pytest.mark.postgres
def test_backends_terminated_under_a_projector_end_it_and_a_second_run_equals_a_rebuild(capsys: Any) -> None:
    # within 50 ms of the first page: on a quiet machine the whole catch-up takes ~0.2 s after it
    trials = project_trials(pg_base_url(), TRIALS, END_BOUND_S, (0.0, 0.05), seed=33)
    report = capsys.readouterr().out
    assert sum(t.killed for t in trials) > 0, report  # the faults did land
    assert all(t.exit in (0, 2) and t.equal for t in trials), report
    assert all(t.line.startswith("ledger project: error store_unreachable:") for t in trials if t.exit == 2), report


"""Crashes and concurrent starts, with real processes (issue 9):

- `ledger ingest` and `ledger project` killed with SIGKILL mid-run, then restarted, end
  in the same state as an uninterrupted run;
- two ingests and two projectors started at once on a fresh PostgreSQL database all
  finish cleanly (tables created once, views caught up once);
- a store with two events swapped stops the projector with a finding, not a traceback.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.records import BetPlaced, Opened
from ledger.store import open_app
from ops.cli import main as cli
from ops.sim.simulator import simulate
from projections.runner import Projector
from tests.store.ledger.test_shards import _round_facts
from tests.store.projections.test_audit_store import Store
from tests.store.projections.test_runner import snapshot

ROOT = Path(__file__).resolve().parents[3]
KILL_WAIT_S = 60


def ledger_process(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "ops.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_until(check: Any, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + KILL_WAIT_S
    while not check():
        assert proc.poll() is None, f"finished before it could be killed: {proc.stderr.read() if proc.stderr else ''}"
        assert time.monotonic() < deadline, "no progress to interrupt"
        time.sleep(0.02)


def _commands(app: Any, ids: list[str]) -> dict[str, Any]:
    return {k: tuple(v) for k, v in app.ledger_recorder().select_commands(ids).items()}


def test_ingest_killed_mid_feed_then_rerun_ends_as_an_uninterrupted_run(store_url, second_store, tmp_path) -> None:
    feed = list(simulate(4, 60, seed=21, fault_rate=100))
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b"".join(feed))
    watcher = open_app(store_url)
    proc = ledger_process("ingest", str(path), "--db", store_url, "--batch-size", "20", "--allow-refusals")
    try:
        _wait_until(lambda: watcher.recorder.max_notification_id() or 0, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        done = watcher.recorder.max_notification_id()
        assert cli(["ingest", str(path), "--db", store_url, "--allow-refusals", "--json"]) == 0
        clean = open_app(second_store)
        clean.ingest(feed)
        again = open_app(store_url)
        assert again.recorder.max_notification_id() > done  # the rerun did finish the feed
        assert _round_facts(again) == _round_facts(clean)
        ids = [json.loads(line)["command_id"] for line in feed]
        assert _commands(again, ids) == _commands(clean, ids)
        again.close()
        clean.close()
    finally:
        proc.kill()
        watcher.close()


def test_project_killed_mid_run_then_rerun_gives_the_views_of_a_full_rebuild(store_url) -> None:
    app = open_app(store_url)
    app.ingest(simulate(4, 80, seed=22))
    log = EventLog(app)
    head = log.head()
    proc = ledger_process("project", "--db", store_url, "--page-size", "50", "--quiet")
    try:
        watcher = Projector(log)
        positions = lambda: watcher.db.query("SELECT min(position) FROM proj_tracking")[0][0] or 0  # noqa: E731
        _wait_until(positions, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert 0 < positions() < head  # interrupted half way
        assert cli(["project", "--db", store_url, "--quiet"]) == 0
        resumed = snapshot(watcher)
        watcher.rebuild()
        watcher.catch_up()
        assert snapshot(watcher) == resumed
        watcher.close()
    finally:
        proc.kill()
        app.close()


@pytest.fixture
def fresh_pg_database() -> Any:
    from tests.conftest import _pg_connect, pg_base_url

    base = pg_base_url()
    try:
        admin = _pg_connect(base)
    except Exception as exc:  # fails, never skips (as conftest's pg_schema_url)
        pytest.fail(f"PostgreSQL unreachable: {exc}")
    name = f"t_fresh_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.rsplit("/", 1)[0].split("?")[0] + "/" + name
    finally:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()


@pytest.mark.postgres
def test_two_ingests_and_two_projectors_start_at_once_on_a_fresh_database(fresh_pg_database, tmp_path) -> None:
    feed = list(simulate(3, 15, seed=23))
    path = tmp_path / "feed.jsonl"
    path.write_bytes(b"".join(feed))
    url = fresh_pg_database
    procs = [ledger_process("ingest", str(path), "--db", url, "--json") for _ in range(2)]
    procs += [ledger_process("project", "--db", url, "--json") for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err.decode()[-2000:] for _, err in outs]
    ingests = [json.loads(out) for out, _ in outs[:2]]
    assert sorted((s["accepted"], s["duplicate"]) for s in ingests) == [(0, len(feed)), (len(feed), 0)] or (
        sum(s["accepted"] for s in ingests) == len(feed)  # interleaved batches: each command accepted once
        and sum(s["duplicate"] for s in ingests) == len(feed))
    app = open_app(url)
    log = EventLog(app)
    views = Projector(log)
    views.catch_up()
    caught_up = snapshot(views)
    views.rebuild()
    views.catch_up()
    assert snapshot(views) == caught_up  # the two runners counted every event once
    assert set(views.positions.values()) == {log.head()}
    views.close()
    app.close()


def test_a_store_with_swapped_events_stops_the_projector_with_a_finding(store_url, capsys) -> None:
    app = open_app(store_url)
    app.ingest(simulate(3, 3, seed=11))
    records = list(EventLog(app).records())
    opened = next(r.position for r in records if isinstance(r, Opened))
    bet = next(r.position for r in records if isinstance(r, BetPlaced) and r.position > opened)
    Store(app).swap(opened, bet)
    assert cli(["project", "--rebuild", "--db", store_url, "--json"]) == 1
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert f"position {opened}" in summary["finding"] and "ledger audit verify" in summary["finding"]
    assert max(summary["positions"].values()) < opened
    assert "Traceback" not in out.err and "stopped:" in out.err
    app.close()

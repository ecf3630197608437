"""The ingest benchmark measures what it says: the raw writers put the very rows the
ledger stored, in the ledger's commits, into an identical events table (no timing
is checked here)."""
from __future__ import annotations

import json

import pytest

from ledger.store import open_app
from ops.bench import ingest_bench as bench


def _stored(url: str) -> bench.Stored:
    app = open_app(url)
    try:
        return bench.Stored(bench._stored_rows(app), *bench._stored_ledger_rows(url))
    finally:
        app.close()


def _feed() -> list[bytes]:
    """A simulated feed with refusals in it: lines that are not commands (a rejection row, no
    index row), commands refused by the rules (both) and a reused command id (a rejection row)."""
    feed = bench.make_feed(300, 3, seed=5)
    unopened = json.loads(feed[1])
    unopened.update(command_id="never-opened", round_no=999_999, type="close_betting")
    for key in set(unopened) - {"command_id", "table_id", "round_no", "studio_time", "type"}:
        del unopened[key]
    reused = {**json.loads(feed[3]), "command_id": json.loads(feed[0])["command_id"]}
    feed[120:120] = [b"not json", json.dumps(unopened).encode(), json.dumps(reused).encode()]
    return feed


@pytest.fixture(scope="module")
def ledger_rows(tmp_path_factory: pytest.TempPathFactory) -> tuple[bench.LedgerRun, bench.Stored]:
    return bench.run_ledger(f"sqlite:///{tmp_path_factory.mktemp('b') / 'ledger.db'}", _feed(), 50, 1)


def test_the_ledgers_commits_cut_its_rows(ledger_rows: tuple[bench.LedgerRun, bench.Stored]) -> None:
    run, stored = ledger_rows
    assert run.commands == 303 and run.accepted == 300 and run.events == len(stored.events) > 300
    assert len(stored.commands) == 301 and len(stored.rejections) == 3  # the refusals are all kept
    assert len(run.commits) == 7
    batches = bench.batched(stored, run.commits)
    assert [len(b.events) for b in batches] == [c.events for c in run.commits if c.events]
    assert [len(b.commands) for b in batches] == [50, 50, 48, 50, 50, 50, 3]  # 47 + never-opened in the third
    assert [len(b.rejections) for b in batches] == [0, 0, 3, 0, 0, 0, 0]
    assert [r for b in batches for r in b.events] == list(stored.events)
    assert sorted(r for b in batches for r in b.commands) == sorted(stored.commands)
    assert [r for b in batches for r in b.rejections] == list(stored.rejections)
    with pytest.raises(SystemExit):
        bench.batched(stored, run.commits[:-1])


def test_raw_writers_store_the_same_rows(store_url: str, ledger_rows: tuple[bench.LedgerRun, bench.Stored]) -> None:
    run, stored = ledger_rows
    writers = [bench.raw_sqlite_executemany] if store_url.startswith("sqlite") else [
        bench.raw_pg_executemany, bench.raw_pg_copy]
    for write in writers:
        with bench.fresh_store(store_url.split("?")[0], "test") as url:
            assert write(url, bench.batched(stored, run.commits)) > 0
            again = _stored(url)
            assert again.events == stored.events and again.rejections == stored.rejections
            assert sorted(again.commands) == sorted(stored.commands)


def test_the_bench_reports_both_stores_ratios(capsys: pytest.CaptureFixture[str], store_url: str) -> None:
    assert bench.main(["--db", store_url.split("?")[0], "--commands", "120", "--tables", "2", "--batch-size", "40",
                       "--repeat", "1", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count(" of raw executemany") == 2  # one process and two workers
    assert "raw executemany" in out and ("raw COPY" in out) == store_url.startswith("postgresql")
    assert "raw executemany events only" in out

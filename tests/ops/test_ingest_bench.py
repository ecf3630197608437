"""The ingest benchmark measures what it says: the raw writers put the very rows the
ledger stored, in the ledger's commits, into an identical events table (no timing
is checked here)."""
from __future__ import annotations

from typing import Any

import pytest

from ledger.store import open_app
from ops.bench import ingest_bench as bench


def _stored(url: str) -> list[Any]:
    app = open_app(url)
    try:
        return bench._stored_rows(app)
    finally:
        app.close()


@pytest.fixture(scope="module")
def ledger_rows(tmp_path_factory: pytest.TempPathFactory) -> tuple[bench.LedgerRun, list[bench.Row]]:
    feed = bench.make_feed(300, 3, seed=5)
    return bench.run_ledger(f"sqlite:///{tmp_path_factory.mktemp('b') / 'ledger.db'}", feed, 50, 1)


def test_the_ledgers_commits_cut_its_rows(ledger_rows: tuple[bench.LedgerRun, list[bench.Row]]) -> None:
    run, rows = ledger_rows
    assert run.commands == 300 and run.accepted == 300 and run.events == len(rows) > 300
    assert len(run.commits) == 6
    batches = bench.batched(rows, run.commits)
    assert [len(b) for b in batches] == [n for n in run.commits if n]
    assert [r for b in batches for r in b] == rows
    with pytest.raises(SystemExit):
        bench.batched(rows, run.commits[:-1])


def test_raw_writers_store_the_same_rows(store_url: str, ledger_rows: tuple[bench.LedgerRun, list[bench.Row]]) -> None:
    run, rows = ledger_rows
    writers = [bench.raw_sqlite_executemany] if store_url.startswith("sqlite") else [
        bench.raw_pg_executemany, bench.raw_pg_copy]
    for write in writers:
        with bench.fresh_store(store_url.split("?")[0], "test") as url:
            assert write(url, bench.batched(rows, run.commits)) > 0
            assert _stored(url) == rows


def test_the_bench_reports_both_stores_ratios(capsys: pytest.CaptureFixture[str], store_url: str) -> None:
    assert bench.main(["--db", store_url.split("?")[0], "--commands", "120", "--tables", "2", "--batch-size", "40",
                       "--repeat", "1", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count(" of raw executemany") == 2  # one process and two workers
    assert "raw executemany" in out and ("raw COPY" in out) == store_url.startswith("postgresql")

"""The phase profiler times the ledger's real functions and leaves them as they were."""
from __future__ import annotations

from pathlib import Path

from ledger import app
from ops.bench import ingest_phases as phases
from ops.bench.ingest_bench import make_feed


def test_every_phase_is_timed_and_the_functions_come_back(tmp_path: Path) -> None:
    before = {(owner, name): owner.__dict__.get(name) for owner, name, _ in phases.PHASES}
    b = phases.measure(f"sqlite:///{tmp_path / 'p.db'}", make_feed(200, 2, seed=3), 50, 1)
    assert {owner.__dict__.get(name) for owner, name, _ in phases.PHASES} == set(before.values())
    assert app.LedgerApp._parse is before[(app.LedgerApp, "_parse")]
    timed = {p for p, n in b.calls.items() if n > 0}
    assert timed == set(b.phases) - {"rejection rows"}  # this feed has no refusals
    assert b.total_cpu_us > 0 and b.raw_cpu_us > 0 and b.raw_wall_us > 0


def test_the_table_names_the_budget(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert phases.main(["--db", f"sqlite:///{tmp_path / 'p.db'}", "--commands", "100", "--tables", "2",
                        "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "rules: command checks, game model, settlement" in out and "35% of raw executemany" in out

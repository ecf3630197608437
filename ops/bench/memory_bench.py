"""`python -m ops.bench.memory_bench [--db-kind sqlite|postgres]`: peak memory of
`ledger ingest`, `ledger ingest --workers 2`, `ledger project`, `ledger audit replay` and
`ledger export dgoj`
at a base size and at --scale times as many rounds.

Each step runs as its own `ledger` process on a fresh store and its peak resident set
(ru_maxrss of that process, not of its workers) is read when it exits, so one step's
memory never counts in another's. Memory should stay flat in the number of rounds: the
report gives each step's peak at both sizes and their ratio. A benchmark, not a test:
figures vary with the machine; quote several runs.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PG_BASE_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


def peak_kib(args: list[str]) -> int:
    """Run `ledger ARGS` in a fresh process; its peak resident set in KiB (Linux ru_maxrss)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "ops.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):  # 1: refusals or findings, still a full run
        raise SystemExit(f"ledger {' '.join(args[:2])} failed ({proc.returncode}): {err[-800:]}")
    return int(usage.ru_maxrss)


def steps(feed: Path, url: str) -> dict[str, list[str]]:
    return {
        "ingest": ["ingest", str(feed), "--db", url, "--allow-refusals"],
        "project": ["project", "--db", url, "--quiet"],
        "audit_replay": ["audit", "replay", "--db", url, "--quiet", "--workers", "1"],
    }


def export_steps(tmp: str, url: str) -> dict[str, int]:
    """`ledger export dgoj` on the ingested store (every session, Teen Patti included; not
    registered, so the store is left as the other steps found it)."""
    return {"export_dgoj": peak_kib(["export", "dgoj", "--db", url, "--operator-id", "OP01", "--store-id", "ALM1",
                                     "--out", str(Path(tmp) / "lote.xml"), "--teen-patti", "COM", "--no-register"])}


def measure(tables: int, rounds: int, seed: int, store: Any) -> dict[str, int]:
    """Peak KiB of every step on one size (a fresh store per size)."""
    from ops.simulator import simulate

    with tempfile.TemporaryDirectory() as tmp:
        feed = Path(tmp) / "feed.jsonl"
        with feed.open("wb") as out:
            for line in simulate(tables, rounds, seed):
                out.write(line)
        figures: dict[str, int] = {}
        with store(tmp, "a") as url:
            for name, args in steps(feed, url).items():
                figures[name] = peak_kib(args)
            figures.update(export_steps(tmp, url))
        with store(tmp, "b") as url:
            figures["ingest_workers_2_parent"] = peak_kib(["ingest", str(feed), "--db", url, "--workers", "2",
                                                           "--allow-refusals"])
    return figures


class SqliteStore:
    def __init__(self, tmp: str, name: str) -> None:
        self.url = f"sqlite:///{Path(tmp) / f'{name}.db'}"

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        pass


class PostgresStore:
    """A fresh schema in the PostgreSQL database at LEDGER_TEST_PG_URL (dropped afterwards)."""

    def __init__(self, tmp: str, name: str) -> None:
        self.base = os.environ.get("LEDGER_TEST_PG_URL", PG_BASE_DEFAULT)
        self.schema = f"bench_mem_{uuid.uuid4().hex[:10]}_{name}"

    def _sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.base.split("?")[0], autocommit=True) as conn:
            conn.execute(statement)

    def __enter__(self) -> str:
        self._sql(f'CREATE SCHEMA "{self.schema}"')
        sep = "&" if "?" in self.base else "?"
        return f"{self.base}{sep}schema={self.schema}"

    def __exit__(self, *exc: object) -> None:
        self._sql(f'DROP SCHEMA "{self.schema}" CASCADE')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.memory_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=100, help="rounds per table at the base size (default 100)")
    parser.add_argument("--scale", type=int, default=10, help="the large size is this many times the rounds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db-kind", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    store = SqliteStore if args.db_kind == "sqlite" else PostgresStore
    small = measure(args.tables, args.rounds, args.seed, store)
    large = measure(args.tables, args.rounds * args.scale, args.seed, store)
    report = {
        "store": args.db_kind, "tables": args.tables, "rounds": [args.rounds, args.rounds * args.scale],
        "ru_maxrss_of": "the step's own process (KiB on Linux)", "self_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "steps": {name: {"base_kib": small[name], "scaled_kib": large[name], "ratio": round(large[name] / small[name], 2)}
                  for name in small},
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"peak resident memory, {args.db_kind}, {args.tables} tables x {args.rounds} rounds vs "
              f"x {args.rounds * args.scale} rounds:")
        for name, row in report["steps"].items():
            print(f"  {name:<24} {row['base_kib'] / 1024:8.1f} MiB  {row['scaled_kib'] / 1024:8.1f} MiB  x{row['ratio']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

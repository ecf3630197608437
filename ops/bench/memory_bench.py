"""`python -m ops.bench.memory_bench [--scale 10,20,40,80] [--db-kind sqlite|postgres]`: peak
memory of `ledger ingest`, `ledger ingest --workers 2`, `ledger project`, `ledger audit
replay`, `ledger export dgoj` and `ledger export ksa` at a base size and at each --scale times as many rounds.

Each step runs as its own `ledger` process on a fresh store and its peak resident set is
read when it exits, so one step's memory never counts in another's: the process's own
(ru_maxrss of RUSAGE_SELF, written by the process as it exits) and, for `--workers 2`,
also the largest of its workers (what wait4 reports: the process and the children it
waited for). Memory should stay flat in the number of rounds: the report gives each
step's peak at every size and its ratio to the base. A benchmark, not a test: figures
vary with the machine; quote several runs.
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


# Runs the CLI and, however it exits, writes this process's own peak (KiB) to the file named by argv[1].
_SELF_PEAK = (
    "import resource, runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "try:\n"
    "    runpy.run_module('ops.cli', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    open(out, 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
)


def peak_kib(args: list[str]) -> tuple[int, int]:
    """Run `ledger ARGS` in a fresh process: (its own peak resident set, the largest of it and
    the children it waited for), in KiB (Linux ru_maxrss)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.NamedTemporaryFile("r", suffix=".kib") as own:
        proc = subprocess.Popen([sys.executable, "-c", _SELF_PEAK, own.name, *args], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.returncode not in (0, 1):  # 1: refusals or findings, still a full run
            raise SystemExit(f"ledger {' '.join(args[:2])} failed ({proc.returncode}): {err[-800:]}")
        return int(own.read()), int(usage.ru_maxrss)


def steps(feed: Path, url: str) -> dict[str, list[str]]:
    return {
        "ingest": ["ingest", str(feed), "--db", url, "--allow-refusals"],
        "project": ["project", "--db", url, "--quiet"],
        "audit_replay": ["audit", "replay", "--db", url, "--quiet", "--workers", "1"],
    }


def export_steps(tmp: str, url: str) -> dict[str, int]:
    """`ledger export dgoj` on the ingested store (every session, Teen Patti included; not
    registered, so the store is left as the other steps found it)."""
    dgoj = peak_kib(["export", "dgoj", "--db", url, "--operator-id", "OP01", "--store-id", "ALM1",
                     "--out", str(Path(tmp) / "lote.xml"), "--teen-patti", "COM", "--no-register"])[0]
    key, cert = _throwaway_keys(Path(tmp))  # `export ksa` registers what it writes: the last step on this store
    ksa = peak_kib(["export", "ksa", "--db", url, "--out", str(Path(tmp) / "ksa"), "--signing-key", str(key),
                    "--signing-cert", str(cert), "--recipient-cert", str(cert)])[0]
    return {"export_dgoj": dgoj, "export_ksa": ksa}


def _throwaway_keys(directory: Path) -> tuple[Path, Path]:
    """An RSA key and its self-signed certificate for this run only (never kept)."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memory bench")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=1))
            .sign(key, hashes.SHA256()))
    key_path, cert_path = directory / "bench.key.pem", directory / "bench.pem"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def measure(tables: int, rounds: int, seed: int, store: Any) -> dict[str, int]:
    """Peak KiB of every step on one size (a fresh store per size)."""
    from ops.sim.simulator import simulate

    with tempfile.TemporaryDirectory() as tmp:
        feed = Path(tmp) / "feed.jsonl"
        with feed.open("wb") as out:
            for line in simulate(tables, rounds, seed):
                out.write(line)
        figures: dict[str, int] = {}
        with store(tmp, "a") as url:
            for name, args in steps(feed, url).items():
                figures[name] = peak_kib(args)[0]
            figures.update(export_steps(tmp, url))
        with store(tmp, "b") as url:
            parent, largest = peak_kib(["ingest", str(feed), "--db", url, "--workers", "2", "--allow-refusals"])
            figures["ingest_workers_2_parent"], figures["ingest_workers_2_largest"] = parent, largest
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
    parser.add_argument("--scale", default="10", help="the larger sizes, times the base's rounds: 10 or 10,20,40,80")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db-kind", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    scales = [1, *(int(x) for x in args.scale.split(","))]
    store = SqliteStore if args.db_kind == "sqlite" else PostgresStore
    sizes = [measure(args.tables, args.rounds * k, args.seed, store) for k in scales]
    report = {
        "store": args.db_kind, "tables": args.tables, "rounds": [args.rounds * k for k in scales],
        "ru_maxrss_of": "the step's own process; *_largest: it or a worker (KiB on Linux)",
        "self_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "steps": {name: {"kib": [size[name] for size in sizes],
                         "ratio": [round(size[name] / sizes[0][name], 2) for size in sizes[1:]]}
                  for name in sizes[0]},
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"peak resident memory, {args.db_kind}, {args.tables} tables x "
              + " / ".join(str(r) for r in report["rounds"]) + " rounds (MiB; ratio to the first):")
        for name, row in report["steps"].items():
            mib = " / ".join(f"{k / 1024:.1f}" for k in row["kib"])
            print(f"  {name:<24} {mib}  x" + " / x".join(str(r) for r in row["ratio"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`ledger wallet deliver` killed (-9) at random moments, and its PostgreSQL connections
terminated under it, against a misbehaving wallet: once it has run to the end, every wallet
holds the ledger's balances to the cent, nothing applied twice, nothing applied after its
rollback, every round completed or cancelled at the wallet (issue 31)."""
from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ledger.store import open_app
from ops.sim.simulator import simulate
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from tests.conftest import _pg_connect, pg_base_url
from tests.e2e.wallet.conftest import SECRET, config_file
from tests.support.fake_wallet import Chaos, FakeWallet
from tests.support.wallet_check import describe, problems

ROOT = Path(__file__).resolve().parents[3]
TRIALS_SQLITE = 20
TRIALS_POSTGRES = 5
RUN_MAX_S = 120
# Every misbehaviour at once, rarely each: a kill lands among them.
MIXED = {"drop": 0.04, "timeout": 0.02, "late": 0.02, "lost": 0.03, "5xx": 0.04, "5xx_after": 0.03,
         "duplicate": 0.04}


def deliver_process(url: str, config: Path, *more: str, env: dict[str, str] | None = None,
                    stderr: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "ops.cli", "wallet", "deliver", "--db", url, "--config",
                             str(config), *more], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=stderr)


def ingest(url: str, lines: list[bytes]) -> None:
    app = open_app(url)
    try:
        app.ingest(lines, batch_size=200)
    finally:
        app.close()


def finish(url: str, config: Path, env: dict[str, str] | None = None) -> None:
    proc = deliver_process(url, config, "--until-idle", env=env)
    _, err = proc.communicate(timeout=RUN_MAX_S)
    assert proc.returncode == 0, err.decode()


def _deliver(url: str, config: str) -> None:
    deliverer = Deliverer(url, load(config))
    deliverer.run()


def _forks() -> Any:
    """Processes forked from a server that imported the deliverer once, before any thread ran
    (the CLI's own start, its imports, takes seconds on a busy machine)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ops.wallet.deliverer", "tests.e2e.wallet.test_kill"])
    return ctx


def killed_at_random(url: str, config: Path, wallet: FakeWallet, rng: random.Random) -> int:
    """A deliverer process killed -9 after a random number of the wallet's requests, then a
    random pause. Returns the requests it made."""
    before = wallet.state.requests
    proc = _forks().Process(target=_deliver, args=(url, str(config)), daemon=True)
    proc.start()
    calls = rng.randint(1, 120)
    deadline, seen, quiet_since = time.monotonic() + 30, 0, time.monotonic()
    while wallet.state.requests - before < calls and time.monotonic() < deadline:
        if wallet.state.requests != seen:
            seen, quiet_since = wallet.state.requests, time.monotonic()
        elif seen > before and time.monotonic() - quiet_since > 0.5:
            break  # it has called all it had to (as far as the wallet sees): killed idle
        time.sleep(0.002)
    time.sleep(rng.uniform(0, 0.05))
    assert proc.is_alive()
    os.kill(proc.pid or 0, signal.SIGKILL)
    proc.join(10)
    assert proc.exitcode == -signal.SIGKILL, proc.exitcode
    return wallet.state.requests - before


def trial(url: str, tmp: Path, seed: int) -> None:
    """Half the day stored, the deliverer killed at a random moment, the rest of the day stored
    while it is down, killed again, then run to the end by `ledger wallet deliver --until-idle`
    (in process: the same code as the command)."""
    rng = random.Random(seed)
    lines = list(simulate(2, 5, seed, 300))
    half = len(lines) // 2
    ingest(url, lines[:half])
    with FakeWallet(SECRET, chaos=Chaos(MIXED, delay_s=0.35, seed=seed), latency_s=0.002) as wallet:
        config = config_file(tmp, wallet.url, timeout_s=0.25)
        assert killed_at_random(url, config, wallet, rng) > 0
        ingest(url, lines[half:])
        assert killed_at_random(url, config, wallet, rng) > 0
        deliverer = Deliverer(url, load(str(config)))
        try:
            deliverer.run(until_idle=True)
        finally:
            deliverer.close()
        assert problems(url, wallet.state) == [], describe(url, wallet.state)


@pytest.mark.parametrize("seed", range(TRIALS_SQLITE))
def test_killed_at_random_moments_sqlite(seed: int, tmp_path: Path) -> None:
    trial(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path, seed)


@pytest.mark.postgres
@pytest.mark.parametrize("seed", range(100, 100 + TRIALS_POSTGRES))
def test_killed_at_random_moments_postgres(seed: int, tmp_path: Path, pg_schema_url: str) -> None:
    trial(pg_schema_url, tmp_path, seed)


@pytest.mark.postgres
def test_postgres_connections_terminated(tmp_path: Path, pg_schema_url: str) -> None:
    """Every connection of the deliverer (found by its application name, so no other test's)
    terminated every few tenths of a second while it delivers."""
    ingest(pg_schema_url, list(simulate(2, 6, 41, 300)))
    name = f"wallet-test-{uuid.uuid4().hex[:12]}"
    stop, killed = threading.Event(), [0]

    def terminate() -> None:
        conn = _pg_connect(pg_base_url())
        try:
            while not stop.wait(0.3):
                rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                    "WHERE application_name = %s", (name,)).fetchall()
                killed[0] += len(rows)
        finally:
            conn.close()

    with FakeWallet(SECRET, chaos=Chaos(MIXED, delay_s=0.35, seed=5), latency_s=0.01) as wallet:
        config = config_file(tmp_path, wallet.url, timeout_s=0.25)
        proc = deliver_process(pg_schema_url, config, env={"PGAPPNAME": name})
        deadline = time.monotonic() + RUN_MAX_S
        while wallet.state.requests == 0:  # its start (imports) takes seconds on a busy machine
            assert proc.poll() is None and time.monotonic() < deadline, "the deliverer did not start"
            time.sleep(0.05)
        killer = threading.Thread(target=terminate, daemon=True)
        killer.start()
        try:
            time.sleep(3)
        finally:
            stop.set()
            killer.join()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=RUN_MAX_S)
        assert killed[0] > 0, "no connection was terminated"
        assert b"reconnecting" in err, err.decode()
        finish(pg_schema_url, config)
        assert problems(pg_schema_url, wallet.state) == [], describe(pg_schema_url, wallet.state)

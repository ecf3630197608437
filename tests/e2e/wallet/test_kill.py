"""`ledger wallet deliver` killed (-9) at random moments, and its PostgreSQL connections
terminated under it, against a misbehaving HTTP wallet and a JetStream operator: once it has
run to the end, every wallet holds the ledger's balances to the cent, nothing applied twice,
nothing applied after its rollback, every round completed or cancelled at the wallet, and the
stream holds each transaction once (issue 31). Two trials per store here; the many trials are
`python -m ops.bench.wallet_trials` (ops/bench/wallet_trials.py, figures in docs/wallet.md)."""
from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from ops.bench import wallet_trials
from ops.bench.fake_wallet import Chaos, FakeWallet
from ops.bench.wallet_check import describe, problems
from ops.bench.wallet_trials import MIXED, ledger_process
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from tests.conftest import terminate_sessions
from tests.e2e.wallet.conftest import SECRET, SECRET_ENV, config_file, deliver, filled

RUN_MAX_S = 120
TERMINATED = 2  # the deliverer's PostgreSQL sessions terminated under it
TRIALS = 2  # per store; the many trials: python -m ops.bench.wallet_trials --trials 20 (docs/wallet.md)


def deliver_process(url: str, config: Path, *, env: dict[str, str] | None = None, stderr: Path | None = None) -> Any:
    """`ledger wallet deliver` as a process of its own (a multiprocessing.Process, forked from a
    server that imported the CLI once: a fresh interpreter takes seconds to start when busy)."""
    return ledger_process(["wallet", "deliver", "--db", url, "--config", str(config)],
                          {SECRET_ENV: SECRET, **(env or {})}, stderr)


def test_trials_script_sqlite(capsys: pytest.CaptureFixture[str]) -> None:
    """The script as the docs run it (a SQLite file per trial), one trial."""
    assert wallet_trials.main(["--store", "sqlite", "--trials", "1", "--seed", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["trials"], report["passed"], report["kills"]) == (1, 1, 2), report
    (result,) = report["results"]
    assert result["http_requests"] > 0 and result["js_messages"] > 0, result


@pytest.mark.parametrize("seed", range(TRIALS - 1))
def test_killed_at_random_moments_sqlite(seed: int, tmp_path: Path) -> None:
    result = wallet_trials.trial(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path, seed)
    assert result.problems == [] and all(result.kills_after_calls), result


@pytest.mark.postgres
@pytest.mark.parametrize("seed", range(100, 100 + TRIALS))
def test_killed_at_random_moments_postgres(seed: int, tmp_path: Path, pg_schema_url: str) -> None:
    result = wallet_trials.trial(pg_schema_url, tmp_path, seed)
    assert result.problems == [] and all(result.kills_after_calls), result


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_killed_at_random_moments_batched(store: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """OP1 called with batches (batch_max 8, docs/wallet.md "Batches"), killed -9 as above."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}" if store == "sqlite" else request.getfixturevalue("pg_schema_url")
    result = wallet_trials.trial(url, tmp_path, 7, batch_max=8)
    assert result.problems == [] and all(result.kills_after_calls), result
    assert result.http_batched_transactions > result.http_requests, result  # more transactions than calls


@pytest.mark.postgres
def test_postgres_connections_terminated(tmp_path: Path, pg_schema_url: str) -> None:
    """Every connection of the deliverer (found by its application name, so no other test's)
    terminated every few tenths of a second while it delivers, until 2 were; it reconnects
    each time and goes on, and the wallet ends as the ledger."""
    filled(pg_schema_url, rounds=3, seed=38)
    name = f"wallet-test-{uuid.uuid4().hex[:12]}"
    called, stop, killed = threading.Event(), threading.Event(), [0]

    def terminate() -> None:
        while killed[0] < TERMINATED and not stop.wait(0.2):
            killed[0] += terminate_sessions(name)

    with FakeWallet(SECRET, chaos=Chaos(MIXED, delay_s=0.3, seed=5), latency_s=0.01, on_request=called.set) as wallet:
        config = config_file(tmp_path, wallet.url, timeout_s=0.2)
        proc = deliver_process(pg_schema_url, config, env={"PGAPPNAME": name}, stderr=tmp_path / "err")
        try:
            assert called.wait(RUN_MAX_S), "the deliverer did not start"
            killer = threading.Thread(target=terminate, daemon=True)
            killer.start()
            killer.join(RUN_MAX_S)
        finally:
            stop.set()
            proc.terminate()  # SIGTERM: it stops after its turn
            proc.join(RUN_MAX_S)
        err = (tmp_path / "err").read_text()
        assert proc.exitcode == 0, err
        assert killed[0] >= TERMINATED, "no connection was terminated"
        assert "reconnecting" in err, err
        deliver(pg_schema_url, config)
        assert problems(pg_schema_url, wallet.state) == [], describe(pg_schema_url, wallet.state)


@pytest.mark.postgres
def test_stopped_right_after_its_connections_were_terminated(tmp_path: Path, pg_schema_url: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop (SIGTERM) comes before any turn noticed the store went away: the deliverer
    stops as asked, with the last position it knew, not a store error (exit 2). A CI run of
    the test above met exactly this: both sessions terminated at once, then the SIGTERM."""
    url = filled(pg_schema_url, rounds=3, seed=38)
    name = f"wallet-stop-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("PGAPPNAME", name)  # the deliverer's own sessions, told from any other test's
    deliverer = Deliverer(url, load(str(config_file(tmp_path, "http://127.0.0.1:9/wallet"))))
    monkeypatch.delenv("PGAPPNAME")
    try:
        while deliverer.derive():
            pass
        known = deliverer.outbox.position()
        assert known > 0
        assert terminate_sessions(name) >= 1
        stop = threading.Event()
        stop.set()
        assert deliverer.run(stop=stop).position == known
    finally:
        deliverer.close()

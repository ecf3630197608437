"""`ledger serve --wallet-config`: the deliverer runs beside the service and stops with it;
/metrics shows delivery per operator."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ops.bench.fake_wallet import FakeWallet
from ops.bench.wallet_check import problems, statuses
from tests.e2e.service.conftest import free_port
from tests.e2e.wallet.conftest import SECRET, config_file, filled

START_S = 60


@pytest.mark.parametrize("batch_max", [1, 8])
def test_serve_runs_the_deliverer(tmp_path: Path, batch_max: int) -> None:
    """The configuration's batch_max reaches the deliverer (8: batched calls, docs/wallet.md "Batches")."""
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", rounds=3, seed=44)
    port = free_port()
    with FakeWallet(SECRET) as wallet:
        config = config_file(tmp_path, wallet.url, batch_max=batch_max)
        proc = subprocess.Popen([sys.executable, "-m", "ops.cli", "serve", "--db", url, "--port", str(port),
                                 "--wallet-config", str(config)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + START_S
            while problems(url, wallet.state) if _tables(url) else True:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the wallet did not get every payout"
                time.sleep(0.2)
            text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            assert 'ledger_wallet_delivery_lag_seconds{operator="default"}' in text
            assert 'ledger_wallet_transactions{operator="default",status="delivered"}' in text
            assert "ledger_wallet_events_behind 0.0" in text
            assert bool(wallet.batches) == (batch_max > 1) and wallet.state.requests >= len(wallet.batches)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
    assert SECRET.encode() not in err


def _tables(url: str) -> bool:
    try:
        return bool(statuses(url))
    except Exception:
        return False

"""One deliverer per store: a second `ledger wallet deliver` on the same store waits (one line on
stderr) and calls no wallet while the first runs; it takes over once the first stops. The first's
wallet answers 503 to everything, so it always has calls to make; the second has its own wallet,
which must hear nothing until the first is gone (issue 31)."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ops.bench.fake_wallet import Chaos, FakeWallet
from ops.bench.wallet_check import describe, problems
from tests.e2e.wallet.conftest import SECRET, config_file, deliver, filled
from tests.e2e.wallet.test_kill import RUN_MAX_S, deliver_process

WAITING = b"another deliverer is running on this store"


def _wait_for(what: str, done: Callable[[], bool], deadline: float) -> None:
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def second_waits(url: str, tmp: Path) -> None:
    filled(url, rounds=3, seed=44)
    first_called = threading.Event()
    with FakeWallet(SECRET, chaos=Chaos({"5xx": 1.0}), on_request=first_called.set) as first_wallet, \
            FakeWallet(SECRET) as second_wallet:
        (tmp / "a").mkdir()
        (tmp / "b").mkdir()
        first = deliver_process(url, config_file(tmp / "a", first_wallet.url, timeout_s=0.25))
        second = None
        err = tmp / "second.err"
        try:
            assert first_called.wait(RUN_MAX_S), "the first deliverer did not start"
            second = deliver_process(url, config_file(tmp / "b", second_wallet.url, timeout_s=0.25), stderr=err)
            deadline = time.monotonic() + RUN_MAX_S
            _wait_for("the second deliverer did not say it waits", lambda: err.exists() and WAITING in err.read_bytes(),
                      deadline)
            time.sleep(0.5)  # waiting, with calls to make: none reaches any wallet
            assert second_wallet.state.requests == 0
            assert second.is_alive(), err.read_text()
            assert err.read_bytes().count(b"\n") == 1, err.read_text()
            first.terminate()
            first.join(RUN_MAX_S)
            assert first.exitcode == 0
            _wait_for("the second did not take over", lambda: second_wallet.state.requests > 0, deadline)
        finally:
            for proc in (first, second):
                if proc is not None and proc.is_alive():
                    proc.terminate()
                    proc.join(RUN_MAX_S)
        deliver(url, config_file(tmp / "b", second_wallet.url, timeout_s=0.25))
        assert problems(url, second_wallet.state) == [], describe(url, second_wallet.state)


def test_second_deliverer_waits_sqlite(tmp_path: Path) -> None:
    second_waits(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path)


@pytest.mark.postgres
def test_second_deliverer_waits_postgres(tmp_path: Path, pg_schema_url: str) -> None:
    second_waits(pg_schema_url, tmp_path)

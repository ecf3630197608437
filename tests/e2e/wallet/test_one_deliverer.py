"""One deliverer per store: a second `ledger wallet deliver` on the same store waits (one line on
stderr) and calls no wallet while the first runs; it takes over once the first stops. The first's
wallet answers 503 to everything, so it always has calls to make; the second has its own wallet,
which must hear nothing until the first is gone (issue 31)."""
from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from ops.bench.fake_wallet import Chaos, FakeWallet
from ops.bench.wallet_check import describe, problems
from tests.e2e.wallet.conftest import SECRET, config_file, filled
from tests.e2e.wallet.test_kill import RUN_MAX_S, deliver_process, finish

WAITING = b"another deliverer is running on this store"


def _wait_for(what: str, done: object, deadline: float) -> None:
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def second_waits(url: str, tmp: Path) -> None:
    filled(url, rounds=4)
    with FakeWallet(SECRET, chaos=Chaos({"5xx": 1.0})) as first_wallet, FakeWallet(SECRET) as second_wallet:
        (tmp / "a").mkdir()
        (tmp / "b").mkdir()
        first = deliver_process(url, config_file(tmp / "a", first_wallet.url, timeout_s=0.25))
        deadline = time.monotonic() + RUN_MAX_S
        _wait_for("the first deliverer did not start", lambda: first_wallet.state.requests > 0, deadline)
        err_path = tmp / "second.err"
        with open(err_path, "wb") as err:
            second = deliver_process(url, config_file(tmp / "b", second_wallet.url, timeout_s=0.25), stderr=err)
            try:
                _wait_for("the second deliverer did not say it waits", lambda: WAITING in err_path.read_bytes(),
                          deadline)
                time.sleep(1.0)  # waiting, with calls to make: none reaches any wallet
                assert second_wallet.state.requests == 0
                assert second.poll() is None, err_path.read_bytes().decode()
                assert err_path.read_bytes().count(b"\n") == 1, err_path.read_bytes().decode()
                first.send_signal(signal.SIGTERM)
                assert first.wait(RUN_MAX_S) == 0
                _wait_for("the second did not take over", lambda: second_wallet.state.requests > 0, deadline)
            finally:
                for proc in (first, second):
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
                    proc.wait(RUN_MAX_S)
        finish(url, config_file(tmp / "b", second_wallet.url, timeout_s=0.25))
        assert problems(url, second_wallet.state) == [], describe(url, second_wallet.state)


def test_second_deliverer_waits_sqlite(tmp_path: Path) -> None:
    second_waits(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path)


@pytest.mark.postgres
def test_second_deliverer_waits_postgres(tmp_path: Path, pg_schema_url: str) -> None:
    second_waits(pg_schema_url, tmp_path)

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.store import open_app
from ops.sim.simulator import simulate
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer

SECRET_ENV = "LEDGER_WALLET_SECRET_TEST"
SECRET = "test-secret-not-for-production"


def filled(url: str, tables: int = 2, rounds: int = 10, seed: int = 7, faults: int = 300) -> str:
    """`url` with a simulated day ingested (voids, reversals and resettlements among its rounds)."""
    app = open_app(url)
    try:
        app.ingest(simulate(tables, rounds, seed, faults), batch_size=500)
    finally:
        app.close()
    return url


def config_file(tmp: Path, url: str, *, notices: bool = True, concurrency: int = 4, timeout_s: float = 0.3,
                backoff_s: float = 0.02, batch_max: int = 1) -> Path:
    path = tmp / "wallet.toml"
    path.write_text(f'[operators.default]\nurl = "{url}"\nsecret_env = "{SECRET_ENV}"\n'
                    f"debit_notices = {'true' if notices else 'false'}\nconcurrency = {concurrency}\n"
                    f"timeout_s = {timeout_s}\nbackoff_s = {backoff_s}\nbackoff_max_s = 0.2\nbatch_max = {batch_max}\n")
    return path


def deliver(url: str, config: Path) -> Deliverer:
    """`ledger wallet deliver --until-idle`, in process (the same code as the command)."""
    deliverer = Deliverer(url, load(str(config)))
    try:
        deliverer.run(until_idle=True)
    finally:
        deliverer.close()
    return deliverer


@pytest.fixture(autouse=True)
def wallet_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)

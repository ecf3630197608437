"""`Deliverer` against the fake wallet, in process, on SQLite and PostgreSQL: every wallet
ends as the ledger, to the cent, whatever the wallet does (docs/wallet.md)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ops.bench.fake_wallet import MISBEHAVIOURS, Chaos, FakeWallet
from ops.bench.wallet_check import describe, problems
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from tests.e2e.wallet.conftest import SECRET, config_file, filled


def deliver(url: str, config: Path) -> Deliverer:
    deliverer = Deliverer(url, load(str(config)))
    try:
        deliverer.run(until_idle=True)
    finally:
        deliverer.close()
    return deliverer


def test_a_calm_wallet_gets_every_payout_once(store_url: str, tmp_path: Path) -> None:
    url = filled(store_url)
    with FakeWallet(SECRET) as wallet:
        first = deliver(url, config_file(tmp_path, wallet.url))
        assert first.result.calls > 0 and set(first.result.outcomes) == {"ok"}
        assert problems(url, wallet.state) == [], describe(url, wallet.state)
        again = deliver(url, config_file(tmp_path, wallet.url))
        assert again.result.calls == 0 and again.result.events == 0


@pytest.mark.parametrize("how", MISBEHAVIOURS)
def test_each_misbehaviour(how: str, store_url: str, tmp_path: Path) -> None:
    url = filled(store_url, rounds=6)
    with FakeWallet(SECRET, chaos=Chaos({how: 0.3}, delay_s=0.45, seed=3)) as wallet:
        deliver(url, config_file(tmp_path, wallet.url))
        assert problems(url, wallet.state) == [], describe(url, wallet.state)

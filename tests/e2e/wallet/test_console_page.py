"""The console's wallet page (/ui/wallet): what `ledger wallet status` says, signed in."""
from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from ops.bench.fake_wallet import FakeWallet
from ops.cli import main as cli
from ops.service.app import Settings, create_app
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from tests.e2e.console.conftest import sign_in
from tests.e2e.service.conftest import make_keys
from tests.e2e.wallet.conftest import SECRET, config_file, filled
from tests.e2e.wallet.test_dead_letters import player_of


def test_the_page_shows_operators_dead_letters_and_decisions(tmp_path: Path) -> None:
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", rounds=3)
    keys = make_keys(url)
    with TestClient(create_app(Settings(db_url=url, key_cache_s=0.0))) as client:
        sign_in(client, keys["admin"])
        assert 'data-testid="no-deliverer"' in client.get("/ui/wallet").text
        assert '<a href="/ui/wallet" aria-current="page">Wallet</a>' in client.get("/ui/wallet").text
        assert '<a href="/ui/wallet" >Wallet</a>' in client.get("/ui/rounds").text  # in every page's navigation
        blocked = player_of(url)
        with FakeWallet(SECRET, refuse_players={blocked: "player_blocked"}) as wallet:
            deliverer = Deliverer(url, load(str(config_file(tmp_path, wallet.url))))
            try:
                deliverer.run(until_idle=True)
            finally:
                deliverer.close()
        page = client.get("/ui/wallet")
        assert page.status_code == 200
        text = page.text
        assert "default" in text and "delivered" in text and "player_blocked" in text and blocked in text
        tx_id = text.split('data-testid="dead"', 1)[1].split('<td class="mono">', 1)[1].split("<", 1)[0]
        assert cli(["wallet", "resolve", tx_id, "--by", "dora", "--why", "paid at the cage", "--db", url]) == 0
        text = client.get("/ui/wallet").text
        assert "paid at the cage" in text and "dora" in text
        client.cookies.clear()
        assert client.get("/ui/wallet", follow_redirects=False).status_code in (302, 303, 307)

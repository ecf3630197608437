"""A studio day dealt to 3 operators whose player ids overlap (the simulator's `--operators 3`,
with its voids, reversals and resettlements), delivered by one deliverer to 3 fake wallets,
each its own operator's with its own secret, on SQLite and PostgreSQL: each wallet's balances
equal that operator's `ledger balances --operator` to the cent, every round of its players
ends there, and no wallet receives another operator's player (a request naming another
operator is refused and kept; a request signed with another operator's secret fails)."""
from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from domain.operators import player_of
from ledger.store import open_app
from ops.bench.fake_wallet import FakeWallet
from ops.bench.wallet_check import describe, problems
from ops.cli import main
from ops.sim.simulator import Studio
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from projections.balances import PLAYER_PREFIX

OPERATORS = ("OP1", "OP2", "OP3")


def secret(op: str) -> str:
    return f"test-secret-{op}-not-for-production"


def config(tmp: Path, wallets: dict[str, FakeWallet], monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp / "wallet.toml"
    text = ""
    for op, wallet in wallets.items():
        monkeypatch.setenv(f"LEDGER_WALLET_SECRET_{op}", secret(op))
        text += (f'[operators.{op}]\nurl = "{wallet.url}"\nsecret_env = "LEDGER_WALLET_SECRET_{op}"\n'
                 "concurrency = 4\ntimeout_s = 0.5\nbackoff_s = 0.02\nbackoff_max_s = 0.2\n")
    path.write_text(text)
    return path


def balances(url: str, op: str, capsys: Any) -> dict[str, int]:
    """`ledger balances --operator OP --kind player`, by the operator's own player ids."""
    assert main(["balances", "--db", url, "--operator", op, "--kind", "player", "--json"]) == 0
    accounts = json.loads(capsys.readouterr().out)["accounts"]
    assert accounts and all(a["account"].startswith(PLAYER_PREFIX + op + "~") for a in accounts)
    return {player_of(a["account"][len(PLAYER_PREFIX):]): a["balance_minor"] for a in accounts}


def test_each_operators_wallet_gets_its_own_players_money(store_url: str, tmp_path: Path, capsys: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    app = open_app(store_url)
    try:
        app.ingest(Studio(3, 4, seed=7, fault_rate=300, operators=len(OPERATORS)).lines(), batch_size=500)
    finally:
        app.close()
    with ExitStack() as stack:
        wallets = {op: stack.enter_context(FakeWallet(secret(op), operator_id=op)) for op in OPERATORS}
        deliverer = Deliverer(store_url, load(str(config(tmp_path, wallets, monkeypatch))))
        try:
            deliverer.run(until_idle=True)
        finally:
            deliverer.close()
        assert set(deliverer.result.outcomes) == {"ok"}
        players = {}
        for op, wallet in wallets.items():
            state = wallet.state
            assert wallet.foreign == [] and wallet.bad_signatures == 0  # no other operator's player
            assert problems(store_url, state, operator=op) == [], describe(store_url, state)
            want = balances(store_url, op, capsys)
            assert {p: state.net(p) for p in state.balances} == want  # to the cent, every player
            assert all("~" not in p for p in state.balances) and all("~" not in p for _, p in state.rounds)
            players[op] = set(state.balances)
        assert players["OP1"] & players["OP2"] & players["OP3"]  # the same ids, three people, three wallets

"""`ledger wallet reconcile`: the store's delivered transactions against the wallet's statement
(docs/wallet.md, "Reconciling"). Empty after a delivery (the misbehaviour and kill tests check
it too, through ops/bench/wallet_check.py); each kind of difference found, exit 1."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ops.bench.fake_wallet import FakeWallet
from ops.cli import main as cli
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from tests.e2e.wallet.conftest import SECRET, config_file, filled


def reconciled(url: str, config: Path, statement: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    code = cli(["wallet", "reconcile", "--db", url, "--config", str(config), "--statement", str(statement), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_statement_compared(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = filled(store_url, rounds=4)
    with FakeWallet(SECRET) as wallet:
        config = config_file(tmp_path, wallet.url)
        deliverer = Deliverer(url, load(str(config)))
        try:
            deliverer.run(until_idle=True)
        finally:
            deliverer.close()
        lines = wallet.state.statement()
    assert lines and any(t["kind"] == "credit" for t in lines)
    for name in ("statement.csv", "statement.json"):
        code, report = reconciled(url, config, wallet.state.write_statement(tmp_path / name), capsys)
        assert (code, report["findings"], report["statement_transactions"]) == (0, 0, len(lines)), report

    credit = next(t for t in lines if t["kind"] == "credit")
    removed = [t for t in lines if t is not credit]
    code, report = reconciled(url, config, wallet.state.write_statement(tmp_path / "r.csv", removed), capsys)
    assert code == 1 and report["findings"] == 1
    assert [m["transaction_id"] for m in report["missing_at_wallet"]] == [credit["transaction_id"]]

    changed = [{**t, "amount_minor": t["amount_minor"] + 1} if t is credit else t for t in lines]
    stranger = {"transaction_id": "not-the-ledgers", "kind": "credit", "player_id": "p", "amount_minor": 5}
    edited = [*changed, lines[0], stranger]
    code, report = reconciled(url, config, wallet.state.write_statement(tmp_path / "e.json", edited), capsys)
    assert code == 1 and report["findings"] == 3, report
    assert report["differs"][0]["wallet"]["amount_minor"] == credit["amount_minor"] + 1
    assert report["duplicated"] == [{"transaction_id": lines[0]["transaction_id"], "times": 2}]
    assert report["not_applied_by_ledger"][0]["ledger_status"] == "unknown"


def test_unreadable_statement_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = filled(f"sqlite:///{tmp_path / 'ledger.db'}", rounds=1)
    config = config_file(tmp_path, "http://127.0.0.1:9/wallet")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"transaction_id": "x", "kind": "credit", "player_id": "p", "amount_minor": 1.5}]')
    assert cli(["wallet", "reconcile", "--db", url, "--config", str(config), "--statement", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "amount_minor must be an integer" in err and err.count("\n") == 1, err

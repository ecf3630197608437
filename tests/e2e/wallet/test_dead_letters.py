"""A permanent refusal parks the transaction as a dead letter with the wallet's answer; a
person's retry or resolve is a recorded decision (who, when, why); `ledger wallet status`
and /metrics show it; an operator without debit notices still ends as the ledger."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.eventlog import EventLog
from ops.bench.fake_wallet import FakeWallet
from ops.bench.wallet_check import problems
from ops.cli import main as cli
from ops.wallet.config import load
from ops.wallet.deliverer import Deliverer
from projections.sql import Db
from projections.wallet_outbox import Outbox
from tests.e2e.wallet.conftest import SECRET, config_file, deliver, filled


def player_of(url: str) -> str:
    log = EventLog.open(url)
    try:
        return next(r.player_id for r in log.records() if type(r).__name__ == "BetPlaced")
    finally:
        log.close()


def test_refused_then_retried_and_resolved(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = filled(store_url, rounds=3, seed=44)
    blocked = player_of(url)
    with FakeWallet(SECRET, refuse_players={blocked: "player_blocked"}) as wallet:
        config = config_file(tmp_path, wallet.url)
        deliver(url, config)
        assert cli(["wallet", "status", "--db", url, "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        dead = status["dead"]
        assert dead and {d["player_id"] for d in dead} == {blocked}
        assert all("player_blocked" in d["answer"] for d in dead)
        assert status["operators"]["default"]["failures"] >= len(dead)
        wallet.refuse_players.clear()  # the operator unblocked the player: a person retries
        first, *rest = dead
        assert cli(["wallet", "retry", first["tx_id"], "--by", "alice", "--why", "unblocked", "--db", url]) == 0
        for d in rest:
            assert cli(["wallet", "retry", d["tx_id"], "--by", "alice", "--why", "unblocked", "--db", url]) == 0
        assert cli(["wallet", "resolve", first["tx_id"], "--by", "bob", "--why", "again", "--db", url]) == 2
        capsys.readouterr()
        deliver(url, config)
        assert problems(url, wallet.state) == []
    db = Db.for_store(EventLog.open(url).backend)
    try:
        decisions = Outbox(db).decisions()
    finally:
        db.close()
    assert [(d["tx_id"], d["action"], d["decided_by"], d["why"]) for d in decisions][0] == \
        (first["tx_id"], "retry", "alice", "unblocked")
    assert len(decisions) == len(dead) and all(d["decided_at"] for d in decisions)


def test_resolve_records_the_decision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", rounds=3)
    blocked = player_of(url)
    with FakeWallet(SECRET, refuse_players={blocked: "player_blocked"}) as wallet:
        deliver(url, config_file(tmp_path, wallet.url))
    assert cli(["wallet", "status", "--db", url, "--json"]) == 0
    dead = json.loads(capsys.readouterr().out)["dead"][0]
    assert cli(["wallet", "resolve", dead["tx_id"], "--by", "carol", "--why", "paid by hand", "--db", url,
                "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "resolved"
    assert cli(["wallet", "status", "--db", url]) == 0
    out = capsys.readouterr().out
    assert "resolved 1" in out and dead["tx_id"] not in out
    assert cli(["wallet", "retry", "no-such-id", "--by", "x", "--why", "y", "--db", url]) == 2


def test_without_debit_notices_the_wallet_takes_the_stakes_itself(tmp_path: Path) -> None:
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", rounds=3, seed=38)
    with FakeWallet(SECRET) as wallet:
        deliverer = Deliverer(url, load(str(config_file(tmp_path, wallet.url, notices=False))))
        try:
            while deliverer.derive():
                pass
            stakes = deliverer.outbox.by_status(("notice_off",), limit=100_000)
            assert stakes and all(tx.kind == "debit" for tx in stakes)
            for tx in stakes:  # the operator's own debits, made as the bets were taken
                wallet.state.take_stake(tx.player_id, tx.reference, tx.amount_minor)
            deliverer.run(until_idle=True)
        finally:
            deliverer.close()
        assert not {tx.tx_id for tx in stakes} & set(wallet.state.applied)  # no stake sent as a notice
        assert any(kind == "rollback" for _, kind, _e in wallet.state.log)  # voids found the own debits
        assert problems(url, wallet.state) == []


def test_the_secret_is_never_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", rounds=2)
    with FakeWallet(SECRET) as wallet:
        config = config_file(tmp_path, wallet.url)
        assert cli(["wallet", "deliver", "--db", url, "--config", str(config), "--until-idle", "--json"]) == 0
        out = capsys.readouterr()
        assert json.loads(out.out)["calls"] > 0
        assert SECRET not in out.out + out.err
        assert SECRET not in repr(load(str(config)))
    db = Db.for_store(EventLog.open(url).backend)
    try:
        for table in ("wallet_tx", "wallet_attempts", "wallet_tracking"):
            assert not any(SECRET in str(row) for row in db.query(f"SELECT * FROM {table}"))
    finally:
        db.close()


def test_a_missing_secret_stops_before_anything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", rounds=1)
    monkeypatch.delenv("LEDGER_WALLET_SECRET_TEST")
    assert cli(["wallet", "deliver", "--db", url, "--config", str(config_file(tmp_path, "http://127.0.0.1:9"))]) == 2
    err = capsys.readouterr().err
    assert "LEDGER_WALLET_SECRET_TEST" in err and "input_invalid" in err

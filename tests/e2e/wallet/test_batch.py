"""Batched calls (`batch_max` > 1, docs/wallet.md "Batches") against the fake wallet's `/batch`,
under each of its misbehaviours: every wallet ends as the ledger to the cent, nothing applied
twice, nothing after its rollback, the reconcile report empty; a player's transactions in a
batch are a run in ledger order with a debit only alone, and each player's transactions are
applied in ledger order."""
from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from ledger.eventlog import EventLog
from ops.bench.fake_wallet import MISBEHAVIOURS, Chaos, FakeWallet
from ops.bench.wallet_check import describe, problems
from ops.cli import main as cli
from ops.wallet.client import NO_ANSWER, OK, ROLLED_BACK, classify_batch, sign
from projections.sql import Db
from tests.e2e.wallet.conftest import SECRET, config_file, deliver, filled

BATCH_MAX = 8


def seq_of(url: str) -> dict[str, int]:
    return {tx: int(seq) for tx, seq, _kind in txs_of(url)}


def kinds_of(url: str) -> dict[str, str]:
    return {tx: kind for tx, _seq, kind in txs_of(url)}


def txs_of(url: str) -> list[tuple[str, int, str]]:
    db = Db.for_store(EventLog.open(url).backend)
    try:
        return [tuple(row) for row in db.query("SELECT tx_id, seq, kind FROM wallet_tx")]  # type: ignore[misc]
    finally:
        db.close()


def assert_batched_rightly(url: str, wallet: FakeWallet) -> None:
    """In each batch a player's items are together, in ledger order, a debit only alone; each
    player's transactions were first applied in ledger order."""
    assert wallet.batches, "no batch was posted"
    seq, kinds = seq_of(url), kinds_of(url)
    for batch in wallet.batches:
        assert len(batch) <= BATCH_MAX
        runs: dict[str, list[str]] = {}
        for i, (player, tx) in enumerate(batch):
            assert player not in runs or batch[i - 1][0] == player, f"{player}'s items apart in {batch}"
            runs.setdefault(player, []).append(tx)
        for player, run in runs.items():
            assert [seq[tx] for tx in run] == sorted(seq[tx] for tx in run), f"{player}: {run} out of ledger order"
            assert len(run) == 1 or "debit" not in {kinds[tx] for tx in run}, f"{player}: a debit in the run {run}"
    last: dict[str, int] = {}
    for tx, _kind, effect in wallet.state.log:
        if effect != "applied" or tx not in seq:
            continue
        player = wallet.state.applied[tx].player
        assert seq[tx] > last.get(player, -1), f"{tx} of {player} applied out of ledger order"
        last[player] = seq[tx]


def test_a_calm_wallet_gets_every_payout_once_in_batches(store_url: str, tmp_path: Path) -> None:
    url = filled(store_url, tables=4, rounds=3, seed=38)
    with FakeWallet(SECRET) as wallet:
        first = deliver(url, config_file(tmp_path, wallet.url, batch_max=BATCH_MAX))
        result = first.result
        assert set(result.outcomes) == {"ok"} and result.calls == len(wallet.batches) == wallet.state.requests
        assert result.transactions > result.calls  # more than one transaction per call
        assert max(result.batch_sizes) > 1 and sum(n * k for n, k in result.batch_sizes.items()) == result.transactions
        assert problems(url, wallet.state) == [], describe(url, wallet.state)
        assert_batched_rightly(url, wallet)
        assert any(len({p for p, _ in b}) < len(b) for b in wallet.batches), "no batch carried a player's run"
        again = deliver(url, config_file(tmp_path, wallet.url, batch_max=BATCH_MAX))
        assert again.result.calls == 0 and again.result.events == 0


def misbehaving(url: str, tmp: Path, chaos: Chaos) -> FakeWallet:
    filled(url, tables=3, rounds=3, seed=38)
    with FakeWallet(SECRET, chaos=chaos) as wallet:
        deliver(url, config_file(tmp, wallet.url, concurrency=4, timeout_s=0.12, batch_max=BATCH_MAX))
        assert problems(url, wallet.state) == [], describe(url, wallet.state)
        assert {kind for _tx, kind, _effect in wallet.state.log} == {"debit", "credit", "rollback", "round"}
        assert_batched_rightly(url, wallet)
    return wallet


@pytest.mark.parametrize("how", MISBEHAVIOURS)
def test_each_misbehaviour_batched(how: str, tmp_path: Path) -> None:
    wallet = misbehaving(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path, Chaos({how: 0.3}, delay_s=0.2, seed=3))
    assert any(len(batch) > 1 for batch in wallet.batches)


def test_every_misbehaviour_at_once_batched(store_url: str, tmp_path: Path) -> None:
    misbehaving(store_url, tmp_path, Chaos(dict.fromkeys(MISBEHAVIOURS, 0.05), delay_s=0.2, seed=4))


def test_refused_items_are_dead_letters_and_the_rest_delivered(tmp_path: Path) -> None:
    """A permanent refusal of one item parks that transaction only; its batch's others are delivered."""
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", tables=3, rounds=3, seed=44)
    log = EventLog.open(url)
    try:
        blocked = next(r.player_id for r in log.records() if type(r).__name__ == "BetPlaced")
    finally:
        log.close()
    with FakeWallet(SECRET, refuse_players={blocked: "player_blocked"}) as wallet:
        deliver(url, config_file(tmp_path, wallet.url, batch_max=BATCH_MAX))
        mixed = [b for b in wallet.batches if blocked in {p for p, _ in b} and len(b) > 1]
        assert mixed, "no batch carried the refused player beside others"
        db = Db.for_store(EventLog.open(url).backend)
        try:
            statuses = dict(db.query("SELECT tx_id, status FROM wallet_tx"))
        finally:
            db.close()
        for batch in mixed:
            for player, tx in batch:
                assert statuses[tx] == ("dead" if player == blocked else "delivered"), (player, tx, statuses[tx])
        wallet.refuse_players.clear()
        for tx, status in statuses.items():
            if status == "dead":
                assert cli(["wallet", "retry", tx, "--by", "alice", "--why", "unblocked", "--db", url]) == 0
        deliver(url, config_file(tmp_path, wallet.url, batch_max=BATCH_MAX))
        assert problems(url, wallet.state) == [], describe(url, wallet.state)


def test_the_command_reads_batch_max(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`ledger wallet deliver --config` (what `ledger serve --wallet-config` runs) batches as configured."""
    url = filled(f"sqlite:///{tmp_path / 'l.db'}", tables=3, rounds=2)
    with FakeWallet(SECRET) as wallet:
        config = config_file(tmp_path, wallet.url, batch_max=BATCH_MAX)
        assert cli(["wallet", "deliver", "--db", url, "--config", str(config), "--until-idle"]) == 0
        assert wallet.batches and wallet.state.requests == len(wallet.batches)
        assert problems(url, wallet.state) == []
    capsys.readouterr()


def test_the_wallet_applies_nothing_after_a_players_item_it_did_not_apply() -> None:
    """The fake wallet's rule for a player's run (docs/wallet.md, "Batches")."""
    def item(kind: str, tx: str, player: str, **more: object) -> dict[str, object]:
        return {"kind": kind, "transaction_id": tx, "player_id": player, "amount_minor": 100,
                "reference": f"bet-{tx}", "round_id": "r1", "reason": "return", **more}

    with FakeWallet(SECRET, start_balance=1000) as wallet:
        wallet.state.handle("rollback", item("rollback", "rb1", "p1", reference_transaction_id="d1"))
        raw = json.dumps({"transactions": [item("debit", "d1", "p1"), item("credit", "c1", "p1"),
                                           item("credit", "c2", "p2"), item("round", "o1", "p1")]}).encode()
        url = urlparse(wallet.url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
        try:
            conn.request("POST", f"{url.path}/batch", raw, {"X-Ledger-Signature": sign(raw, SECRET.encode())})
            resp = conn.getresponse()
            status, results = resp.status, json.loads(resp.read())["results"]
        finally:
            conn.close()
        assert status == 200
        assert [(r["transaction_id"], r["http_status"], r.get("error")) for r in results] == [
            ("d1", 409, "transaction_rolled_back"), ("c1", 409, "previous_not_applied"), ("c2", 200, None),
            ("o1", 409, "previous_not_applied")]
        assert set(wallet.state.applied) == {"rb1", "c2"}
        kinds = ["debit", "credit", "credit", "round"]
        answers = classify_batch([(k, r["transaction_id"], "{}") for k, r in zip(kinds, results)], status,
                                 json.dumps({"results": results}))
        assert [a.outcome for a in answers] == [ROLLED_BACK, NO_ANSWER, OK, NO_ANSWER]

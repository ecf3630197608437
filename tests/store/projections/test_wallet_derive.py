"""What the stored events mean to a wallet (projections/wallet_tx.py): over a simulated day
full of voids, reversals and resettlements, the transactions derived move each player's
wallet exactly as the ledger moved the player's account; derived twice, they are the same
(same ids, same bodies: what makes every redelivery idempotent). Dealt to 3 operators, each
transaction names the operator of its player key and the player's own id."""
from __future__ import annotations

import json
from collections import Counter

from domain.operators import DEFAULT_OPERATOR_ID, player_key
from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.bench.wallet_check import ledger_balances
from ops.sim.simulator import Studio, simulate
from projections.wallet_tx import Deriver, WalletTx, key_of

SIGN = {"debit": -1, "credit": 1, "rollback": 1, "round": 0}


def derived(log: EventLog, notices: bool = True) -> list[WalletTx]:
    return Deriver(log.round_records, lambda _op: notices).derive(log.records())


def test_the_wallet_moves_as_the_ledger(store_url: str) -> None:
    app = open_app(store_url)
    app.ingest(simulate(5, 40, 11, 500), batch_size=1000)
    app.close()
    log = EventLog.open(store_url)
    try:
        txs, again = derived(log), derived(log)
        records = list(log.records())
    finally:
        log.close()
    assert [(t.tx_id, t.body, t.seq) for t in txs] == [(t.tx_id, t.body, t.seq) for t in again]
    assert len({t.tx_id for t in txs}) == len(txs)
    net: Counter[str] = Counter()
    for t in txs:
        net[key_of(t)] += SIGN[t.kind] * t.amount_minor
    assert {p: n for p, n in net.items() if n} == {p: n for p, n in ledger_balances(records).items() if n}
    reasons = Counter((t.kind, t.reason) for t in txs)
    assert reasons[("rollback", "void")] and reasons[("debit", "correction")] and reasons[("round", "cancelled")]
    assert all(t.operator_id == DEFAULT_OPERATOR_ID and key_of(t) == t.player_id for t in txs)
    seqs = [t.seq for t in txs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # ledger order, no ties


def test_without_debit_notices_the_stakes_are_kept_unsent(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/l.db"
    app = open_app(url)
    app.ingest(simulate(1, 5, 3, 0), batch_size=1000)
    app.close()
    log = EventLog.open(url)
    try:
        txs = derived(log, notices=False)
    finally:
        log.close()
    debits = [t for t in txs if t.kind == "debit"]
    assert debits and all(t.status == "notice_off" for t in debits)
    assert all(t.status == "pending" for t in txs if t.kind != "debit")


def test_each_operators_transactions_name_its_own_players(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/l.db"
    app = open_app(url)
    app.ingest(Studio(3, 20, seed=5, fault_rate=500, operators=3).lines(), batch_size=1000)
    app.close()
    log = EventLog.open(url)
    try:
        txs = derived(log)
        records = list(log.records())
    finally:
        log.close()
    assert {t.operator_id for t in txs} == {"OP1", "OP2", "OP3"}
    for t in txs:  # the operator's own player id, in the row and in the body sent
        body = json.loads(t.body)
        assert "~" not in t.player_id and (body["operator_id"], body["player_id"]) == (t.operator_id, t.player_id)
    net: Counter[str] = Counter()
    for t in txs:
        net[player_key(t.operator_id, t.player_id)] += SIGN[t.kind] * t.amount_minor
    want = {p: n for p, n in ledger_balances(records).items() if n}
    assert {p: n for p, n in net.items() if n} == want and all("~" in p for p in want)
    reasons = Counter((t.kind, t.reason) for t in txs)
    assert reasons[("rollback", "void")] and reasons[("round", "cancelled")] and reasons[("credit", "return")]

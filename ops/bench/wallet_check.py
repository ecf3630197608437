"""What the wallet must hold when delivery is done (issue 31, "How to know it is done"),
computed from the ledger's own events and compared with the fake wallet's state."""
from __future__ import annotations

from collections import Counter
from typing import Any

from domain.operators import DEFAULT_OPERATOR_ID, operator_of, player_of
from ledger.eventlog import EventLog
from ledger.records import BetPlaced, Opened, Record, Settled, SettlementReversed, Voided
from ops.bench.fake_wallet import WalletState
from projections.balances import PLAYER_PREFIX


def ledger_balances(records: list[Record]) -> dict[str, int]:
    """Every player's balance in the ledger: the sum of the player's postings."""
    out: Counter[str] = Counter()
    for r in records:
        for leg in getattr(r, "postings", ()):
            if leg.account.startswith(PLAYER_PREFIX):
                out[leg.account[len(PLAYER_PREFIX):]] += leg.amount_minor
    return dict(out)


def round_endings(records: list[Record]) -> dict[tuple[str, str], str]:
    """(round id, player) -> completed | cancelled, as the ledger ended each round with bets."""
    players: dict[str, set[str]] = {}
    ended: dict[str, str] = {}
    for r in records:
        if isinstance(r, BetPlaced):
            players.setdefault(r.originator_id, set()).add(r.player_id)
        elif isinstance(r, Settled):
            ended[r.originator_id] = "completed"
        elif isinstance(r, SettlementReversed):
            ended.pop(r.originator_id, None)
        elif isinstance(r, Voided) and r.refunds:
            ended[r.originator_id] = "cancelled"
    return {(rid, p): how for rid, how in ended.items() for p in players.get(rid, ())}


def problems(url: str, wallet: WalletState, *, notices: bool = True, operator: str | None = None) -> list[str]:
    """Every way the wallet differs from the ledger (empty: delivered exactly once in effect).
    `operator`: the wallet is that operator's (its players only, by their own ids)."""
    log = EventLog.open(url)
    try:
        records = list(log.records())
    finally:
        log.close()
    assert any(isinstance(r, Opened) for r in records), "no rounds in the store"
    found = []
    want, endings = ledger_balances(records), round_endings(records)
    if operator is not None:
        want = {player_of(k): n for k, n in want.items() if operator_of(k) == operator}
        endings = {(r, player_of(k)): how for (r, k), how in endings.items() if operator_of(k) == operator}
    for player in sorted(set(want) | set(wallet.balances)):
        got = wallet.net(player)
        if got != want.get(player, 0):
            found.append(f"balance of {player}: wallet {got}, ledger {want.get(player, 0)}")
    found += [f"{tx} applied {n} times" for tx, n in wallet.applies.items() if n > 1]
    rolled: set[str] = set()
    for tx, kind, effect in wallet.log:  # nothing applied after its rollback
        if effect == "applied" and tx in rolled:
            found.append(f"{kind} {tx} applied after its rollback")
        if effect == "rolled_back":
            rolled.add(tx)
    for key, how in sorted(endings.items()):
        if wallet.rounds.get(key) != how:
            found.append(f"round {key[0]} player {key[1]}: ledger {how}, wallet {wallet.rounds.get(key)}")
    return found + [f"reconcile: {line}" for line in reconcile_findings(url, wallet, operator or DEFAULT_OPERATOR_ID)]


def reconcile_findings(url: str, wallet: WalletState, operator: str = DEFAULT_OPERATOR_ID) -> list[str]:
    """`ledger wallet reconcile`'s findings (in process) for the wallet's own statement."""
    from ledger.backend import Backend
    from ops.wallet.reconcile import Line, reconcile
    from projections.sql import Db
    from projections.wallet_outbox import Outbox

    lines = [Line(t["transaction_id"], t["kind"], t["player_id"], t["amount_minor"]) for t in wallet.statement()]
    outbox = Outbox(Db.for_store(Backend.of_url(url)))
    try:
        report = reconcile(outbox, operator, lines)
    finally:
        outbox.db.close()
    return [f"{key}: {item}" for key in ("missing_at_wallet", "not_applied_by_ledger", "duplicated", "differs")
            for item in report[key]]


def statuses(url: str) -> dict[str, int]:
    from ledger.backend import Backend
    from projections.sql import Db

    db = Db.for_store(Backend.of_url(url))
    try:
        return {s: int(n) for s, n in db.query("SELECT status, COUNT(*) FROM wallet_tx GROUP BY status")}
    finally:
        db.close()


def describe(url: str, wallet: WalletState) -> dict[str, Any]:
    return {"statuses": statuses(url), "requests": wallet.requests, "log": len(wallet.log)}

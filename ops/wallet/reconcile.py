"""What the store says each operator's wallet applied, compared with the wallet's statement
(docs/wallet.md, "Reconciling"): by transaction id, missing on either side, duplicated, or
differing in kind, player or amount. Reads only."""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from projections.wallet_outbox import Outbox
from projections.wallet_tx import OPEN, WalletTx

STATEMENT_FIELDS = ("transaction_id", "kind", "player_id", "amount_minor")
# What the store's status says of the wallet: applied (it answered so), maybe applied (a debit
# with no answer, then rolled back; settled outside), never applied (refused, never sent).
APPLIED = ("delivered",)
MAYBE = ("unanswered", "resolved")


class StatementError(Exception):
    """The statement cannot be read (one line naming where)."""


@dataclass(frozen=True)
class Line:
    tx_id: str
    kind: str
    player_id: str
    amount_minor: int


def read_statement(data: bytes, name: str) -> list[Line]:
    """The statement's lines: JSON (a list of objects, or {"transactions": [...]}) or CSV with a
    header row; either with at least the fields of STATEMENT_FIELDS (others are ignored)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StatementError(f"{name}: not UTF-8 text") from exc
    if text.lstrip()[:1] in ("[", "{"):
        try:
            rows: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StatementError(f"{name}: not JSON: {exc}") from exc
        rows = rows.get("transactions") if isinstance(rows, dict) else rows
        if not isinstance(rows, list):
            raise StatementError(f'{name}: JSON must be a list of transactions or {{"transactions": [...]}}')
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
    return [_line(row, f"{name}: transaction {i + 1}") for i, row in enumerate(rows)]


def _line(row: Any, where: str) -> Line:
    if not isinstance(row, dict):
        raise StatementError(f"{where}: not an object")
    missing = [f for f in STATEMENT_FIELDS if row.get(f) in (None, "")]
    if missing:
        raise StatementError(f"{where}: no {', '.join(missing)}")
    amount = row["amount_minor"]
    if isinstance(amount, str) and amount.lstrip("-").isdigit():
        amount = int(amount)
    if type(amount) is not int:  # money is integers in minor units: never a float
        raise StatementError(f"{where}: amount_minor must be an integer (minor units), not {amount!r}")
    return Line(str(row["transaction_id"]), str(row["kind"]), str(row["player_id"]), amount)


def reconcile(outbox: Outbox, operator: str, statement: list[Line]) -> dict[str, Any]:
    """Every difference between the store's transactions of `operator` and the statement."""
    txs = {tx.tx_id: tx for tx in outbox.of_operator(operator)}
    times = Counter(line.tx_id for line in statement)
    seen = {line.tx_id: line for line in statement}
    report: dict[str, Any] = {
        "operator": operator, "statement_transactions": len(statement),
        "missing_at_wallet": [_tx(tx) for tx in txs.values() if tx.status in APPLIED and tx.tx_id not in seen],
        "not_applied_by_ledger": [_unexpected(line, txs.get(line.tx_id)) for line in seen.values()
                                  if txs.get(line.tx_id) is None
                                  or txs[line.tx_id].status not in APPLIED + MAYBE],
        "duplicated": [{"transaction_id": tx_id, "times": n} for tx_id, n in sorted(times.items()) if n > 1],
        "differs": [d for line in seen.values() if (d := _differs(txs.get(line.tx_id), line))],
        "open": sum(1 for tx in txs.values() if tx.status in OPEN),
    }
    report["findings"] = sum(len(report[k]) for k in
                             ("missing_at_wallet", "not_applied_by_ledger", "duplicated", "differs"))
    return report


def _tx(tx: WalletTx) -> dict[str, Any]:
    return {"transaction_id": tx.tx_id, "kind": tx.kind, "reason": tx.reason, "player_id": tx.player_id,
            "amount_minor": tx.amount_minor, "currency": tx.currency, "status": tx.status}


def _unexpected(line: Line, tx: WalletTx | None) -> dict[str, Any]:
    return {"transaction_id": line.tx_id, "kind": line.kind, "player_id": line.player_id,
            "amount_minor": line.amount_minor, "ledger_status": tx.status if tx else "unknown"}


def _differs(tx: WalletTx | None, line: Line) -> dict[str, Any] | None:
    """A rollback may have moved nothing (the debit it names never reached the wallet:
    `unknown_transaction`), so 0 is its other right amount."""
    if tx is None or tx.status not in APPLIED + MAYBE:
        return None
    amounts = (tx.amount_minor, 0) if tx.kind == "rollback" else (tx.amount_minor,)
    if (tx.kind, tx.player_id) == (line.kind, line.player_id) and line.amount_minor in amounts:
        return None
    return {"transaction_id": tx.tx_id, "ledger": {"kind": tx.kind, "player_id": tx.player_id,
                                                   "amount_minor": tx.amount_minor},
            "wallet": {"kind": line.kind, "player_id": line.player_id, "amount_minor": line.amount_minor}}

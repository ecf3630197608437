"""Wallet reconciliation: which money movements the operator's wallet must have
made, read from the ledger's records, matched with a wallet file.

Movements (docs/projections.md, "Wallet reconciliation"); the match key is
(type, reference):

| ledger event | type | reference | amount_minor |
|---|---|---|---|
| BetPlaced | debit | `<bet_id>` | the stake |
| stake move (DecisionTaken / FollowDecided) | debit | `<line_id>+<reason>` (`.2`, `.3`... when repeated) | the amount |
| Settled, line with returned_minor > 0 | credit | `<line_id>` (settlement 1), `<line_id>@s<n>` (n > 1) | returned |
| Voided, per refund line | cancel | `<bet_id>` | refunded (back to the player) |
| SettlementReversed, per player paid in it | cancel | `<round_id>@s<n>` | what that settlement paid the player (taken back) |

Amounts are positive; the type says the direction.
"""
from __future__ import annotations

import csv
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ledger.records import (
    BetPlaced,
    DecisionTaken,
    FollowDecided,
    Opened,
    Record,
    Settled,
    SettlementReversed,
    Voided,
)
from projections.balances import PLAYER_PREFIX
from projections.state import day_of, iso

WALLET_COLUMNS = ("transaction_id", "type", "reference", "player", "amount_minor", "currency", "time")
MOVEMENT_TYPES = ("debit", "credit", "cancel")
CATEGORIES = ("matched", "missing_in_wallet", "missing_in_ledger", "duplicated", "amount_differs")
UNKNOWN_TABLE = "-"


@dataclass(frozen=True, slots=True)
class Movement:
    type: str
    reference: str
    player: str
    amount_minor: int
    currency: str
    time: str  # server time of the ledger event, ISO 8601 UTC
    day: str
    table_id: str
    round_id: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.reference)


# ------------------------------------------------------------ expectations
class _Movements:
    """Collects the movements in event order, each (type, reference) kept distinct."""

    def __init__(self) -> None:
        self.rounds: dict[str, tuple[str, str]] = {}  # round id -> (table, currency)
        self.moves_seen: Counter[str] = Counter()
        self.keys: Counter[tuple[str, str]] = Counter()
        self.out: list[Movement] = []

    def emit(self, ev: Record, type_: str, reference: str, player: str, amount: int) -> None:
        table, currency = self.rounds.get(ev.aggregate_id, (UNKNOWN_TABLE, ""))
        self.keys[(type_, reference)] += 1
        if self.keys[(type_, reference)] > 1:  # ids reused across rounds: keep every movement distinct
            reference = f"{reference}#{self.keys[(type_, reference)]}"
        self.out.append(Movement(type_, reference, player, amount, currency, iso(ev.server_time),
                                 day_of(ev.server_time), table, ev.aggregate_id))

    def add(self, ev: Record) -> None:
        match ev:
            case Opened():
                self.rounds[ev.aggregate_id] = (ev.table_id, ev.currency)
            case BetPlaced():
                self.emit(ev, "debit", ev.bet_id, ev.player_id, ev.stake_minor)
            case DecisionTaken() | FollowDecided():
                for m in ev.stake_moves:
                    base = f"{m.bet_id}+{m.reason}"
                    self.moves_seen[base] += 1
                    reference = base if self.moves_seen[base] == 1 else f"{base}.{self.moves_seen[base]}"
                    self.emit(ev, "debit", reference, m.player_id, m.amount_minor)
            case Settled():
                n = ev.settlement_no
                for r in ev.results:
                    if r.returned_minor > 0:
                        self.emit(ev, "credit", r.bet_id if n == 1 else f"{r.bet_id}@s{n}", r.player_id,
                                  r.returned_minor)
            case Voided():
                refunded: dict[tuple[str, str], int] = {}
                for f in ev.refunds:
                    refunded[(f.bet_id, f.player_id)] = refunded.get((f.bet_id, f.player_id), 0) + f.amount_minor
                for (bet_id, player), amount in refunded.items():
                    self.emit(ev, "cancel", bet_id, player, amount)
            case SettlementReversed():
                for leg in ev.postings:
                    if leg.account.startswith(PLAYER_PREFIX) and leg.amount_minor < 0:
                        self.emit(ev, "cancel", f"{ev.aggregate_id}@s{ev.settlement_no}",
                                  leg.account[len(PLAYER_PREFIX):], -leg.amount_minor)


def expected_movements(events: Iterable[Record]) -> list[Movement]:
    """Every wallet movement the ledger's events imply, in event order."""
    movements = _Movements()
    for ev in events:
        movements.add(ev)
    return movements.out


# ------------------------------------------------------------ wallet files
class WalletFormatError(ValueError):
    pass


def read_wallet(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a wallet CSV; a malformed row raises WalletFormatError naming its line."""
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = set(WALLET_COLUMNS) - set(reader.fieldnames or ())
        if missing:
            raise WalletFormatError(f"{path}: missing columns {sorted(missing)} (need {', '.join(WALLET_COLUMNS)})")
        for row in reader:
            line = reader.line_num
            if row["type"] not in MOVEMENT_TYPES:
                raise WalletFormatError(f"{path}:{line}: type must be one of {MOVEMENT_TYPES}, got {row['type']!r}")
            try:
                row["amount_minor"] = int(row["amount_minor"])
            except ValueError:
                raise WalletFormatError(f"{path}:{line}: amount_minor must be an integer, got {row['amount_minor']!r}") from None
            row["line"] = line
            rows.append(row)
    return rows


# --------------------------------------------------------- reconciliation
@dataclass
class Reconciliation:
    counts: Counter[str] = field(default_factory=Counter)
    findings: list[dict[str, Any]] = field(default_factory=list)  # every non-matched key
    by_day_table: dict[tuple[str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    @property
    def discrepancies(self) -> int:
        return sum(self.counts[c] for c in CATEGORIES if c != "matched")

    def add(self, category: str, day: str, table: str, **details: Any) -> None:
        self.counts[category] += 1
        self.by_day_table[(day, table)][category] += 1
        if category != "matched":
            self.findings.append({"category": category, "day": day, "table_id": table, **details})

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": {c: self.counts[c] for c in CATEGORIES},
            "discrepancies": self.discrepancies,
            "by_day_and_table": [
                {"day": d, "table_id": t, **{c: n[c] for c in CATEGORIES}}
                for (d, t), n in sorted(self.by_day_table.items())
            ],
            "findings": self.findings,
        }


def reconcile(wallet_rows: list[dict[str, Any]], movements: list[Movement]) -> Reconciliation:
    """Match wallet rows to expected movements by (type, reference). Zero-amount
    credits (some wallets close lost bets that way; no money moved) are ignored."""
    report = Reconciliation()
    wallet: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in wallet_rows:
        if row["type"] == "credit" and row["amount_minor"] == 0:
            continue
        wallet[(row["type"], row["reference"])].append(row)
    tables_by_ref = {m.reference: m.table_id for m in movements}
    expected_keys = set()
    for m in movements:
        expected_keys.add(m.key)
        found = wallet.get(m.key, [])
        ident = {"type": m.type, "reference": m.reference, "player": m.player, "round_id": m.round_id}
        if not found:
            report.add("missing_in_wallet", m.day, m.table_id, **ident, ledger_amount_minor=m.amount_minor)
            continue
        if len(found) > 1:
            report.add("duplicated", m.day, m.table_id, **ident, times=len(found),
                       transaction_ids=[w["transaction_id"] for w in found])
        first = found[0]
        differs = [k for k, mine in (("amount_minor", m.amount_minor), ("player", m.player), ("currency", m.currency))
                   if first[k] != mine]
        if differs:
            report.add("amount_differs", m.day, m.table_id, **ident, differs=differs,
                       ledger_amount_minor=m.amount_minor, wallet_amount_minor=first["amount_minor"],
                       wallet_player=first["player"], transaction_id=first["transaction_id"])
        elif len(found) == 1:
            report.add("matched", m.day, m.table_id)
    for key, rows in wallet.items():
        if key in expected_keys:
            continue
        base = key[1].split("+")[0].split("@")[0]
        table = tables_by_ref.get(base, UNKNOWN_TABLE)
        report.add("missing_in_ledger", rows[0]["time"][:10], table, type=key[0], reference=key[1],
                   player=rows[0]["player"], wallet_amount_minor=rows[0]["amount_minor"], times=len(rows),
                   transaction_ids=[w["transaction_id"] for w in rows])
    return report


def movement_dicts(movements: list[Movement]) -> list[dict[str, Any]]:
    return [asdict(m) for m in movements]

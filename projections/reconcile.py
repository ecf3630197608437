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

Amounts are positive; the type says the direction. A movement's time is the studio
time of its event (the wallet books what the studio did, not when the ledger heard of
it) and its day the gaming day of that time in the studio's time zone (UTC by default).
A mismatch is named by what differs: amount, player or currency. Wallet rows that
cannot be matched at all (negative or non-integer amounts, a malformed currency or
time, an unknown type) are findings of their own, and so is a transaction id repeated.
"""
from __future__ import annotations

import csv
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from domain.errors import Refusal
from domain.money import check_currency, format_minor
from domain.operators import EVERY_OPERATOR, OperatorScope, player_of
from ledger.records import (
    BetPlaced,
    DecisionTaken,
    FollowDecided,
    Opened,
    OperatorConfigured,
    Record,
    RoundRecord,
    Settled,
    SettlementReversed,
    TableApplied,
    TableConfigured,
    Voided,
)
from projections.balances import PLAYER_PREFIX
from projections.folding import Zones, as_zones, studio_utc
from projections.operators import OperatorZones

WALLET_COLUMNS = ("transaction_id", "type", "reference", "player", "amount_minor", "currency", "time")
# The wallet file's movement types, its format and not the ledger's words: a stake the wallet
# takes from the player, a payout it credits, and money given back by a void's refund or
# taken back by a settlement's reversal (the wallet's word for both of those is "cancel").
DEBIT, CREDIT, REFUND_OR_REVERSAL = "debit", "credit", "cancel"
MOVEMENT_TYPES = (DEBIT, CREDIT, REFUND_OR_REVERSAL)
CATEGORIES = ("matched", "missing_in_wallet", "missing_in_ledger", "duplicated", "amount_differs",
              "player_differs", "currency_differs", "invalid_row", "repeated_transaction_id")
UNKNOWN_TABLE = "-"


@dataclass(frozen=True, slots=True)
class Movement:
    type: str
    reference: str
    player: str
    amount_minor: int
    currency: str
    time: str  # studio time of the ledger event, ISO 8601 as the feed gave it
    day: str  # gaming day of `time` in the studio's zone
    table_id: str
    round_id: str
    round: str  # TABLE#ROUND_NO, what a clerk looks up

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.reference)


# ------------------------------------------------------------ expectations
class _Movements:
    """Collects the movements in event order, each (type, reference) kept distinct."""

    def __init__(self, zone: tzinfo | Zones, scope: OperatorScope = EVERY_OPERATOR) -> None:
        self.zones = as_zones(zone)
        self.scope = scope
        self.rounds: dict[str, tuple[str, str, str]] = {}  # round id -> (table, currency, TABLE#NO)
        self.moves_seen: Counter[str] = Counter()
        self.keys: Counter[tuple[str, str]] = Counter()
        self.out: list[Movement] = []
        self.config_zones: dict[tuple[str, int], str] = {}  # (table, config version) -> its timezone
        self.round_zones: dict[str, str] = {}  # round id -> timezone of the configuration it opened under

    def emit(self, ev: RoundRecord, type_: str, reference: str, player: str, amount: int) -> None:
        if not self.scope.everyone:  # one operator's wallet: its players, named as it names them
            if not self.scope.allows_key(player):
                return
            player = player_of(player)
        table, currency, label = self.rounds.get(ev.originator_id, (UNKNOWN_TABLE, "", ev.originator_id))
        self.keys[(type_, reference)] += 1
        if self.keys[(type_, reference)] > 1:  # ids reused across rounds: keep every movement distinct
            reference = f"{reference}#{self.keys[(type_, reference)]}"
        self.out.append(Movement(type_, reference, player, amount, currency, ev.studio_time,
                                 studio_utc(ev.studio_time, ev.timestamp).astimezone(self.zones.of(self.round_zones.get(ev.originator_id))).date().isoformat(), table, ev.originator_id, label))

    def add(self, ev: Record) -> None:
        match ev:
            case Opened():
                self.rounds[ev.originator_id] = (ev.table_id, ev.currency, f"{ev.table_id}#{ev.round_no}")
            case TableConfigured():
                self.config_zones[(ev.table_id, ev.config_version)] = ev.timezone
            case OperatorConfigured() if ev.operator_id == self.scope.only():  # its gaming days, in its zone
                self.zones = OperatorZones(ZoneInfo(ev.timezone))
            case TableApplied():
                table = self.rounds.get(ev.originator_id, (UNKNOWN_TABLE,))[0]
                zone = self.config_zones.get((table, ev.config_version))
                if zone is not None:
                    self.round_zones[ev.originator_id] = zone
            case BetPlaced():
                self.emit(ev, DEBIT, ev.bet_id, ev.player_id, ev.stake_minor)
            case DecisionTaken() | FollowDecided():
                for m in ev.stake_moves:
                    base = f"{m.bet_id}+{m.reason}"
                    self.moves_seen[base] += 1
                    reference = base if self.moves_seen[base] == 1 else f"{base}.{self.moves_seen[base]}"
                    self.emit(ev, DEBIT, reference, m.player_id, m.amount_minor)
            case Settled():
                n = ev.settlement_no
                for r in ev.results:
                    if r.returned_minor > 0:
                        self.emit(ev, CREDIT, r.bet_id if n == 1 else f"{r.bet_id}@s{n}", r.player_id,
                                  r.returned_minor)
            case Voided():
                refunded: dict[tuple[str, str], int] = {}
                for f in ev.refunds:
                    refunded[(f.bet_id, f.player_id)] = refunded.get((f.bet_id, f.player_id), 0) + f.amount_minor
                for (bet_id, player), amount in refunded.items():
                    self.emit(ev, REFUND_OR_REVERSAL, bet_id, player, amount)
            case SettlementReversed():
                for leg in ev.postings:
                    if leg.account.startswith(PLAYER_PREFIX) and leg.amount_minor < 0:
                        self.emit(ev, REFUND_OR_REVERSAL, f"{ev.originator_id}@s{ev.settlement_no}",
                                  leg.account[len(PLAYER_PREFIX):], -leg.amount_minor)


def expected_movements(events: Iterable[Record], zone: tzinfo | Zones = UTC,
                       scope: OperatorScope = EVERY_OPERATOR) -> list[Movement]:
    """Every wallet movement the ledger's events imply, in event order; days in the time zone
    of the table configuration each round opened under (Round.TableApplied), else `zone`."""
    movements = _Movements(zone, scope)
    for ev in events:
        movements.add(ev)
    return movements.out


# ------------------------------------------------------------ wallet files
class WalletFormatError(ValueError):
    pass


class WalletEmpty(WalletFormatError):
    """A wallet file with no transactions (not even a header, or only one)."""


def read_wallet(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a wallet CSV with `line` and, for a row that cannot be matched, `invalid`
    (why). A file without the columns raises WalletFormatError; an empty one, WalletEmpty
    (a header alone is a wallet without transactions: no rows)."""
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None:
            raise WalletEmpty(f"{path} is empty")
        missing = set(WALLET_COLUMNS) - set(reader.fieldnames)
        if missing:
            raise WalletFormatError(f"{path}: missing columns {sorted(missing)} (need {', '.join(WALLET_COLUMNS)})")
        for row in reader:
            row["line"] = reader.line_num
            if problem := _row_problem(row):
                row["invalid"] = problem
            rows.append(row)
    return rows


def _row_problem(row: dict[str, Any]) -> str | None:
    """Why a wallet row cannot be matched (None: it can); converts amount_minor to int."""
    if row["type"] not in MOVEMENT_TYPES:
        return f"type must be one of {', '.join(MOVEMENT_TYPES)}, got {row['type']!r}"
    try:
        row["amount_minor"] = int(row["amount_minor"])
    except (TypeError, ValueError):
        return f"amount_minor must be a whole number of minor units, got {row['amount_minor']!r}"
    if row["amount_minor"] < 0:
        return f"amount_minor must not be negative (the type says the direction), got {row['amount_minor']}"
    try:
        check_currency(row["currency"])
    except Refusal as refusal:
        return refusal.message
    try:
        if datetime.fromisoformat(row["time"] or "").tzinfo is None:
            return f"time {row['time']!r} has no UTC offset"
    except ValueError:
        return f"time {row['time']!r} is not an ISO 8601 time"
    return None


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
    wallet = _usable_rows(wallet_rows, report)
    tables_by_ref = {m.reference: m.table_id for m in movements}
    expected_keys = set()
    for m in movements:
        expected_keys.add(m.key)
        found = wallet.get(m.key, [])
        ident = {"type": m.type, "reference": m.reference, "player": m.player, "round": m.round,
                 "round_id": m.round_id, "currency": m.currency}  # the amounts' currency, for text
        if not found:
            report.add("missing_in_wallet", m.day, m.table_id, **ident, ledger_amount_minor=m.amount_minor)
            continue
        if len(found) > 1:
            report.add("duplicated", m.day, m.table_id, **ident, times=len(found),
                       transaction_ids=[w["transaction_id"] for w in found])
        first = found[0]
        differs = _differences(m, first)
        for category, ledger_value, wallet_value in differs:
            report.add(category, m.day, m.table_id, **ident, ledger=ledger_value, wallet=wallet_value,
                       transaction_id=first["transaction_id"])
        if not differs and len(found) == 1:
            report.add("matched", m.day, m.table_id)
    for key, rows in wallet.items():
        if key in expected_keys:
            continue
        base = key[1].split("+")[0].split("@")[0]
        table = tables_by_ref.get(base, UNKNOWN_TABLE)
        report.add("missing_in_ledger", rows[0]["time"][:10], table, type=key[0], reference=key[1],
                   player=rows[0]["player"], currency=rows[0]["currency"],
                   wallet_amount_minor=rows[0]["amount_minor"], times=len(rows),
                   transaction_ids=[w["transaction_id"] for w in rows])
    return report


def _usable_rows(wallet_rows: list[dict[str, Any]], report: Reconciliation) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Wallet rows by match key; invalid rows and repeated transaction ids become findings
    and are not matched. Zero credits are skipped (no money moved)."""
    wallet: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    seen: dict[str, int] = {}
    for row in wallet_rows:
        where = {"line": row["line"], "transaction_id": row["transaction_id"], "type": row["type"],
                 "reference": row["reference"]}
        day = (row.get("time") or "")[:10]
        if "invalid" in row:
            report.add("invalid_row", day, UNKNOWN_TABLE, **where, reason=row["invalid"])
        elif row["transaction_id"] in seen:
            report.add("repeated_transaction_id", day, UNKNOWN_TABLE, **where,
                       first_line=seen[row["transaction_id"]])
        elif not (row["type"] == CREDIT and row["amount_minor"] == 0):
            seen[row["transaction_id"]] = row["line"]
            wallet[(row["type"], row["reference"])].append(row)
    return wallet


def _differences(m: Movement, row: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(category, ledger value, wallet value) for each field of a matched row that differs."""
    pairs = (("amount_differs", m.amount_minor, row["amount_minor"]), ("player_differs", m.player, row["player"]),
             ("currency_differs", m.currency, row["currency"]))
    return [(category, mine, theirs) for category, mine, theirs in pairs if mine != theirs]


SHOWN_APART = ("category", "day", "table_id", "type", "reference", "round", "round_id", "currency")
AMOUNT_KEYS = {"ledger_amount_minor": "ledger", "wallet_amount_minor": "wallet"}


def finding_text(f: dict[str, Any]) -> str:
    """A finding's other fields, amounts as money with the currency (`ledger=1.00 EUR
    wallet=4.34 EUR`, never minor units: --json keeps those), lists comma-separated."""
    money = f["category"] == "amount_differs"
    parts = []
    for k, v in f.items():
        if k in SHOWN_APART:
            continue
        if k in AMOUNT_KEYS or (money and k in ("ledger", "wallet")):
            parts.append(f"{AMOUNT_KEYS.get(k, k)}={format_minor(v, f.get('currency'))}")
        elif isinstance(v, list):  # transaction ids: W1-7,W1-8, not a Python list's repr
            parts.append(f"{k}={','.join(map(str, v))}")
        else:
            parts.append(f"{k}={v}")
    return " ".join(parts)

"""The operator's wallet, seen from the ledger: which money movements the
wallet must have made, a wallet file writer for simulations (with planted
discrepancies), and reconciliation of a wallet file against the ledger.

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
import random
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from domain.errors import require
from projections.reader import RecordedEvent, read_events
from projections.state import day_of, iso

WALLET_COLUMNS = ("transaction_id", "type", "reference", "player", "amount_minor", "currency", "time")
MOVEMENT_TYPES = ("debit", "credit", "cancel")
CATEGORIES = ("matched", "missing_in_wallet", "missing_in_ledger", "duplicated", "amount_differs")
DISCREPANCY_KINDS = ("missing_in_wallet", "missing_in_ledger", "duplicated", "amount_differs")
DISCREPANCIES_MAX = 100_000
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
def expected_movements(events: Iterable[RecordedEvent]) -> list[Movement]:
    """Every wallet movement the ledger's events imply, in event order."""
    rounds: dict[str, tuple[str, str]] = {}  # round id -> (table, currency)
    moves_seen: Counter[tuple[str, str]] = Counter()
    keys: Counter[tuple[str, str]] = Counter()
    out: list[Movement] = []

    def emit(ev: RecordedEvent, type_: str, reference: str, player: str, amount: int) -> None:
        table, currency = rounds.get(ev.originator_id, (UNKNOWN_TABLE, ""))
        keys[(type_, reference)] += 1
        if keys[(type_, reference)] > 1:  # ids reused across rounds: keep every movement distinct
            reference = f"{reference}#{keys[(type_, reference)]}"
        out.append(Movement(type_, reference, player, amount, currency, iso(ev.timestamp), day_of(ev.timestamp),
                            table, ev.originator_id))

    for ev in events:
        f = ev.fields
        if ev.name == "Round.Opened":
            rounds[ev.originator_id] = (f["table_id"], f["currency"])
        elif ev.name == "Round.BetPlaced":
            emit(ev, "debit", f["bet_id"], f["player_id"], f["stake_minor"])
        elif ev.name in ("Round.DecisionTaken", "Round.FollowDecided"):
            for m in f["stake_moves"]:
                base = f"{m['bet_id']}+{m['reason']}"
                moves_seen[base] += 1
                reference = base if moves_seen[base] == 1 else f"{base}.{moves_seen[base]}"
                emit(ev, "debit", reference, m["player_id"], m["amount_minor"])
        elif ev.name == "Round.Settled":
            n = f["settlement_no"]
            for r in f["results"]:
                if r["returned_minor"] > 0:
                    emit(ev, "credit", r["bet_id"] if n == 1 else f"{r['bet_id']}@s{n}", r["player_id"],
                         r["returned_minor"])
        elif ev.name == "Round.Voided":
            refunded: dict[tuple[str, str], int] = {}
            for r in f.get("refunds") or []:
                refunded[(r["bet_id"], r["player_id"])] = refunded.get((r["bet_id"], r["player_id"]), 0) + r["amount_minor"]
            for (bet_id, player), amount in refunded.items():
                emit(ev, "cancel", bet_id, player, amount)
        elif ev.name == "Round.SettlementReversed":
            for leg in f["postings"]:
                if leg["account"].startswith("player:") and leg["amount_minor"] < 0:
                    emit(ev, "cancel", f"{ev.originator_id}@s{f['settlement_no']}",
                         leg["account"][len("player:"):], -leg["amount_minor"])
    return out


# ------------------------------------------------------------ wallet files
@dataclass(frozen=True, slots=True)
class Injected:
    kind: str
    type: str
    reference: str


def events_of(feed_or_events: Any) -> list[RecordedEvent]:
    """RecordedEvents as given, or the events the ledger records for a feed
    (lines as bytes/str, or a path to a JSONL file), ingested into a
    temporary SQLite ledger."""
    if isinstance(feed_or_events, (str, Path)) and Path(feed_or_events).is_file():
        feed_or_events = Path(feed_or_events).read_bytes().splitlines()
    items = list(feed_or_events)
    if not items or isinstance(items[0], RecordedEvent):
        return items
    from ledger.store import open_app

    with tempfile.TemporaryDirectory(prefix="wallet-") as tmp:
        app = open_app(f"sqlite:///{tmp}/ledger.db")
        try:
            app.ingest([line for line in items if line.strip()])
            return list(read_events(app))
        finally:
            app.close()


def write_wallet(feed_or_events: Any, path: str | Path, discrepancies: int = 0, seed: int = 0) -> list[Injected]:
    """Write the wallet CSV the operator would have for this feed / these
    events, with `discrepancies` planted ones (kinds taken in turn from
    DISCREPANCY_KINDS, each on a different movement). Returns what was planted."""
    require(0 <= discrepancies <= DISCREPANCIES_MAX, f"discrepancies {discrepancies} outside 0..{DISCREPANCIES_MAX}")
    movements = expected_movements(events_of(feed_or_events))
    rng = random.Random(seed)
    kinds = [DISCREPANCY_KINDS[(i + seed) % len(DISCREPANCY_KINDS)] for i in range(discrepancies)]
    on_movements = [k for k in kinds if k != "missing_in_ledger"]
    if len(on_movements) > len(movements):
        raise ValueError(f"{discrepancies} discrepancies need more than the {len(movements)} movements of this feed")
    targets = iter(rng.sample(range(len(movements)), len(on_movements)))
    plan: dict[int, str] = {}
    injected: list[Injected] = []
    extras: list[dict[str, Any]] = []
    for i, kind in enumerate(kinds):
        if kind == "missing_in_ledger":
            like = movements[rng.randrange(len(movements))] if movements else None
            row = {"type": "debit", "reference": f"wallet-only-{seed}-{i}", "player": like.player if like else "p0",
                   "amount_minor": rng.randint(1, 10_000), "currency": like.currency if like else "EUR",
                   "time": like.time if like else "1970-01-01T00:00:00+00:00"}
            extras.append(row)
            injected.append(Injected(kind, row["type"], row["reference"]))
            continue
        target = next(targets)
        plan[target] = kind
        injected.append(Injected(kind, movements[target].type, movements[target].reference))

    rows: list[dict[str, Any]] = []
    for i, m in enumerate(movements):
        kind = plan.get(i)
        if kind == "missing_in_wallet":
            continue
        row = {"type": m.type, "reference": m.reference, "player": m.player, "amount_minor": m.amount_minor,
               "currency": m.currency, "time": m.time}
        if kind == "amount_differs":
            delta = rng.randint(1, 500)  # stays positive and different (a zero credit would be ignored)
            row["amount_minor"] = m.amount_minor - delta if m.amount_minor > delta and rng.random() < 0.5 else m.amount_minor + delta
        rows.append(row)
        if kind == "duplicated":
            rows.append(dict(row))  # the same movement booked twice
    for row in extras:
        rows.insert(rng.randrange(len(rows) + 1), row)
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(WALLET_COLUMNS)
        for n, row in enumerate(rows, 1):
            writer.writerow([f"W{seed}-{n:08d}", *(row[c] for c in WALLET_COLUMNS[1:])])
    return injected


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


def findings_as_injected(report: Reconciliation) -> list[Injected]:
    """The findings in the shape `write_wallet` reports what it planted (for checks)."""
    return [Injected(f["category"], f["type"], f["reference"]) for f in report.findings]


def movement_dicts(movements: list[Movement]) -> list[dict[str, Any]]:
    return [asdict(m) for m in movements]

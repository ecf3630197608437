"""A wallet file writer for simulations: the operator's wallet CSV for a feed
(or for the ledger's records), with planted discrepancies that
`projections.reconcile` must find. Reconciliation itself lives there."""
from __future__ import annotations

import csv
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from domain.errors import require
from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.eventlog import EventLog
from ledger.records import Record
from ledger.store import open_app
from projections.reconcile import WALLET_COLUMNS, Reconciliation, expected_movements

DISCREPANCY_KINDS = ("missing_in_wallet", "missing_in_ledger", "duplicated", "amount_differs")
DISCREPANCIES_MAX = 100_000


@dataclass(frozen=True, slots=True)
class Injected:
    kind: str
    type: str
    reference: str


def events_of(feed_or_events: Any) -> list[Record]:
    """Records as given, or the records the ledger makes of a feed (lines as
    bytes/str, or a path to a JSONL file), ingested into a temporary SQLite ledger."""
    if isinstance(feed_or_events, (str, Path)) and Path(feed_or_events).is_file():
        feed_or_events = Path(feed_or_events).read_bytes().splitlines()
    items = list(feed_or_events)
    if not items or not isinstance(items[0], (bytes, str)):
        return items
    with tempfile.TemporaryDirectory(prefix="wallet-") as tmp:
        log = EventLog(open_app(f"sqlite:///{tmp}/ledger.db"))
        try:
            log.app.ingest([line for line in items if line.strip()])
            return list(log.records())
        finally:
            log.close()


def write_wallet(feed_or_events: Any, path: str | Path, discrepancies: int = 0, seed: int = 0,
                 scope: OperatorScope = EVERY_OPERATOR) -> list[Injected]:
    """Write the wallet CSV the operator would have for this feed / these
    events, with `discrepancies` planted ones (kinds taken in turn from
    DISCREPANCY_KINDS, each on a different movement). Returns what was planted.
    For one operator (`scope`), that operator's wallet: its players, by its own ids."""
    require(0 <= discrepancies <= DISCREPANCIES_MAX, f"discrepancies {discrepancies} outside 0..{DISCREPANCIES_MAX}")
    movements = expected_movements(events_of(feed_or_events), scope=scope)
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
            row: dict[str, Any] = {"type": "debit", "reference": f"wallet-only-{seed}-{i}", "player": like.player if like else "p0",
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
        change = plan.get(i)
        if change == "missing_in_wallet":
            continue
        row = {"type": m.type, "reference": m.reference, "player": m.player, "amount_minor": m.amount_minor,
               "currency": m.currency, "time": m.time}
        if change == "amount_differs":
            delta = rng.randint(1, 500)  # stays positive and different (a zero credit would be ignored)
            row["amount_minor"] = m.amount_minor - delta if m.amount_minor > delta and rng.random() < 0.5 else m.amount_minor + delta
        rows.append(row)
        if change == "duplicated":
            rows.append(dict(row))  # the same movement booked twice
    for row in extras:
        rows.insert(rng.randrange(len(rows) + 1), row)
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(WALLET_COLUMNS)
        for n, row in enumerate(rows, 1):
            writer.writerow([f"W{seed}-{n:08d}", *(row[c] for c in WALLET_COLUMNS[1:])])
    return injected




def findings_as_injected(report: Reconciliation) -> list[Injected]:
    """The findings in the shape `write_wallet` reports what it planted (for checks)."""
    return [Injected(f["category"], f["type"], f["reference"]) for f in report.findings]

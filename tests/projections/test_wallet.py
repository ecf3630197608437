"""Wallet reconciliation: a wallet written for a feed matches the ledger
exactly; every planted discrepancy is found, and nothing else (SQLite and
PostgreSQL ledgers)."""
from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.simulator import simulate
from ops.wallet import findings_as_injected, write_wallet
from projections.reconcile import expected_movements, read_wallet, reconcile
from tests.projections.synthetic import RoundScript, number


def test_expected_movements_of_one_round_with_a_reversal_and_a_void() -> None:
    s = RoundScript("t1", 1).open().bet("b1", "alice", 1000).bet("b2", "bob", 500).double("b1", "alice", 1000)
    s.settle({"b1": (3000, Fraction(0))}).reverse().void("human_error")
    got = [(m.type, m.reference, m.player, m.amount_minor, m.table_id) for m in expected_movements(number(s.events))]
    assert got == [
        ("debit", "b1", "alice", 1000, "t1"), ("debit", "b2", "bob", 500, "t1"),
        ("debit", "b1+double", "alice", 1000, "t1"),
        ("credit", "b1", "alice", 3000, "t1"),
        ("cancel", f"{s.id}@s1", "alice", 3000, "t1"),
        ("cancel", "b1", "alice", 2000, "t1"), ("cancel", "b2", "bob", 500, "t1"),
    ]


@pytest.fixture(scope="module")
def feed() -> list[bytes]:
    return list(simulate(tables=5, rounds=8, seed=21, fault_rate=250))


@pytest.fixture
def ledger_events(store_url, feed):
    app = open_app(store_url)
    app.ingest(feed)
    events = list(EventLog(app).records())
    app.close()
    return events


def test_clean_wallet_matches_everything(ledger_events, feed, tmp_path) -> None:
    ledger_movements = expected_movements(ledger_events)
    assert write_wallet(feed, tmp_path / "w.csv", 0, 1) == []
    report = reconcile(read_wallet(tmp_path / "w.csv"), ledger_movements)
    assert report.discrepancies == 0
    assert report.counts["matched"] == len(ledger_movements) > 100
    assert {m.type for m in ledger_movements} == {"debit", "credit", "cancel"}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(discrepancies=st.integers(1, 12), seed=st.integers(0, 1000))
def test_every_planted_discrepancy_is_found_and_nothing_else(ledger_events, tmp_path_factory,
                                                             discrepancies: int, seed: int) -> None:
    ledger_movements = expected_movements(ledger_events)
    path = tmp_path_factory.mktemp("wallet") / "w.csv"
    planted = write_wallet(ledger_events, path, discrepancies, seed)
    assert len(planted) == discrepancies
    report = reconcile(read_wallet(path), ledger_movements)
    assert Counter(findings_as_injected(report)) == Counter(planted)
    assert report.counts["matched"] == len(ledger_movements) - sum(
        1 for p in planted if p.kind != "missing_in_ledger")

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
from ops.sim.simulator import simulate
from ops.sim.wallet import findings_as_injected, write_wallet
from projections.reconcile import expected_movements, read_wallet, reconcile
from tests.support.synthetic import RoundScript, number


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


# ------------------------------------------------------------ wallet checks (issue 9)
HEADER = "transaction_id,type,reference,player,amount_minor,currency,time\n"


def wallet_file(tmp_path, *rows: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "w.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows))
    return path


def one_round() -> list:
    s = RoundScript("t1", 7).open().bet("b1", "alice", 1000)
    s.settle({"b1": (2000, Fraction(0))})
    return expected_movements(number(s.events))


def test_rows_that_cannot_be_matched_are_findings_of_their_own(tmp_path) -> None:
    path = wallet_file(
        tmp_path,
        "W1,debit,b1,alice,-1000,EUR,2026-01-01T10:00:00+00:00",
        "W2,debit,b1,alice,1000,euro,2026-01-01T10:00:00+00:00",
        "W3,debit,b1,alice,1000,EUR,yesterday",
        "W4,debit,b1,alice,1000,EUR,2026-01-01T10:00:00",
        "W5,debit,b1,alice,ten,EUR,2026-01-01T10:00:00+00:00",
        "W6,refund,b1,alice,1000,EUR,2026-01-01T10:00:00+00:00",
    )
    report = reconcile(read_wallet(path), one_round())
    invalid = [f for f in report.findings if f["category"] == "invalid_row"]
    assert [f["transaction_id"] for f in invalid] == ["W1", "W2", "W3", "W4", "W5", "W6"]
    assert "negative" in invalid[0]["reason"] and "ISO 4217" in invalid[1]["reason"]
    assert report.counts["missing_in_wallet"] == 2  # the invalid rows matched nothing


def test_a_repeated_transaction_id_is_a_finding(tmp_path) -> None:
    movements = one_round()
    rows = [f"W{n},{m.type},{m.reference},{m.player},{m.amount_minor},{m.currency},{m.time}"
            for n, m in enumerate(movements)]
    path = wallet_file(tmp_path, *rows, rows[0])
    report = reconcile(read_wallet(path), movements)
    assert report.counts["repeated_transaction_id"] == 1 and report.counts["matched"] == len(movements)
    assert report.counts["duplicated"] == 0  # the repeat is not booked twice: it is the same transaction


def test_player_and_currency_mismatches_are_named_and_rounds_are_table_and_number(tmp_path) -> None:
    debit, credit = one_round()
    path = wallet_file(
        tmp_path,
        f"W1,debit,{debit.reference},bob,{debit.amount_minor},EUR,{debit.time}",
        f"W2,credit,{credit.reference},alice,{credit.amount_minor},USD,{credit.time}",
    )
    report = reconcile(read_wallet(path), [debit, credit])
    assert [(f["category"], f["round"], f["ledger"], f["wallet"]) for f in report.findings] == [
        ("player_differs", "t1#7", "alice", "bob"), ("currency_differs", "t1#7", "EUR", "USD")]
    assert report.counts["amount_differs"] == 0


def test_days_are_gaming_days_of_the_studio_time_in_the_studio_zone() -> None:
    from zoneinfo import ZoneInfo

    s = RoundScript("t1", 1).open().bet("b1", "alice", 1000)
    events = number(s.events)
    bet = next(e for e in events if type(e).__name__ == "BetPlaced")
    late = bet._replace(studio_time="2026-03-01T23:30:00+00:00")
    utc = expected_movements([events[0], late])
    malta = expected_movements([events[0], late], ZoneInfo("Europe/Malta"))
    assert (utc[0].day, malta[0].day) == ("2026-03-01", "2026-03-02")
    assert utc[0].time == "2026-03-01T23:30:00+00:00"  # studio time, whatever the server recorded


def test_the_simulated_wallet_file_is_byte_identical_for_the_same_arguments(feed, tmp_path) -> None:
    write_wallet(feed, tmp_path / "a.csv", 5, 3)
    write_wallet(feed, tmp_path / "b.csv", 5, 3)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()

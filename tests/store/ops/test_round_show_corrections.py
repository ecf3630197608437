"""`ledger round show` of corrected rounds: each settlement marked in force or reversed,
the refunds beside their bets, each player's final net, and a tombstone's page of facts."""
from __future__ import annotations

import pytest

from ledger.store import open_app
from ops.cli import main as cli
from tests.support.dispute_rounds import RESETTLED, REVERSED_VOIDED, TOMBSTONE, ingest_corrections


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('show') / 'ledger.db'}"
    app = open_app(url)
    ingest_corrections(app)
    app.close()
    return url


def show(store: str, ref: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert cli(["round", "show", ref, "--db", store]) == 0
    return capsys.readouterr().out


def test_reversed_then_voided(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = show(store, REVERSED_VOIDED, capsys)
    assert "settlement 1 (REVERSED, not in force):" in out
    assert "status: voided  (phase voided)" in out
    assert "outcome: VOIDED after settlement 1 was reversed: human_error by supervisor-1" in out
    assert "hands: A: Pair of kings, kicker 2 (pair), win; B: High Card A-7-4 (high_card), lose" in out
    assert "REVERSED at position" in out and "by supervisor-1" in out and "wrong card keyed; then voided" in out
    tp_a = next(line for line in out.splitlines() if line.strip().startswith("tp-a ") and "put in" in line)
    assert "put in 10.00 EUR; now refunded 10.00 EUR (void); net 0.00 EUR; " \
           "REVERSED settlement 1: win, returned 19.50 EUR" in tp_a
    assert "alice        0.00 EUR  (put in 10.00 EUR, returned 0.00 EUR, refunded 10.00 EUR)" in out
    assert ("    what the correction changed: every bet's result of settlement 1 replaced by the refund of what "
            "it put in (void)") in out
    assert "      tp-a (alice, player_a): win, staked 10.00 EUR, returned 19.50 EUR -> refunded 10.00 EUR (void)" in out


def test_reversed_then_resettled(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = show(store, RESETTLED, capsys)
    assert "settlement 1 (REVERSED, not in force):" in out and "settlement 2 (in force):" in out
    assert "outcome: Player wins 8–5 (settlement 2 in force after settlement 1 was reversed)" in out
    assert "then settled again (settlement 2)" in out
    # settlement 2 is settlement 1 again: the page says so rather than showing two identical lists
    assert ("    what the correction changed: changed nothing: settlement 2 settles every bet as settlement 1 did "
            "(same outcomes, stakes and returns)") in out
    assert "alice        10.00 EUR  (put in 10.00 EUR, returned 20.00 EUR, refunded 0.00 EUR)" in out
    assert "bob          -20.00 EUR" in out


def test_tombstone(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = show(store, TOMBSTONE, capsys)
    assert out.startswith("round dispute-tomb#7  ")
    assert "phase voided (before it opened)" in out
    assert "voided before it opened (dispute-tomb#7): system_error by supervisor-1 at studio time " \
           "2024-05-01T12:00:01.000000Z: test void" in out  # times as every read answers them
    assert "None" not in out and "round #0" not in out

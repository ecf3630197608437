"""The three rounds the dispute page and bundle tests look at: a split blackjack round
with a bet behind that follows the split, a baccarat round, and a voided baccarat round."""
from __future__ import annotations

from typing import Any

from tests.support.feed import Feed, baccarat_round, lines, teen_patti_round

SPLIT, BACCARAT, VOIDED = "dispute-bj#1", "dispute-bacc#1", "dispute-void#1"


def split_with_bet_behind() -> list[bytes]:
    f = Feed("dispute-bj")
    return lines(
        f.open("blackjack/live-8d"),
        f.bet("m1", "p1", "seat:1", "main", 1000),
        f.bet("bb", "p2", "behind:1", "main", 500),
        f.close(),
        f.cards("8S>seat:1", "6H>dealer", "8D>seat:1"),
        f.decide("seat:1", "split"),
        f.follow("bb", "split", True),
        f.card("TS", "seat:1.1"),
        f.decide("seat:1.1", "stand"),
        f.card("9C", "seat:1.2"),
        f.decide("seat:1.2", "stand"),
        f.cards("TD>dealer", "9H>dealer"),  # dealer 16 draws to 25: bust
    )


def voided_baccarat() -> list[bytes]:
    f = Feed("dispute-void")
    return lines(
        f.open("baccarat/live-8d"),
        f.bet("v1", "alice", "table", "player", 1000),
        f.bet("v2", "bob", "table", "tie", 350),
        f.close(),
        f.cards("AS>burn", "5H>burn"),
        f.pause("player_connection_lost", note="alice lost connection", player_id="alice"),  # Interrupted
        f.pause("system_error", note="camera down"),
        f.void(),
    )


def ingest_three(app: Any) -> None:
    for feed in (split_with_bet_behind(), lines(*baccarat_round(Feed("dispute-bacc"))), voided_baccarat()):
        results = app.ingest(feed)
        assert all(r.status == "accepted" for r in results), [(r.status, r.code) for r in results]


# Corrected rounds (issue 20): what a page must say is in force and what was reversed.
REVERSED_VOIDED, RESETTLED, TOMBSTONE = "dispute-tp#1", "dispute-rs#1", "dispute-tomb#7"


def reversed_then_voided() -> list[bytes]:
    """Teen Patti: A (alice, 10.00) wins with a pair of kings, settled; then the settlement
    is reversed and the round voided: alice's win is not in force, every stake refunded."""
    f = Feed("dispute-tp")
    return lines(*teen_patti_round(f), f.reverse(then="void"))


def reversed_then_resettled() -> list[bytes]:
    """Baccarat (Player natural 8 beats 5), settled, reversed, settled again (settlement 2)."""
    f = Feed("dispute-rs")
    return lines(*baccarat_round(f), f.reverse(then="resettle"))


def tombstone() -> list[bytes]:
    """A void that arrived before its round opened: one Voided event, no table in it."""
    return lines(Feed("dispute-tomb", 7).void("system_error"))


def ingest_corrections(app: Any) -> None:
    for feed in (reversed_then_voided(), reversed_then_resettled(), tombstone()):
        results = app.ingest(feed)
        assert all(r.status == "accepted" for r in results), [(r.status, r.code) for r in results]


def simulated_with_corrections(url: str, tables: int, rounds: int, seed: int, fault_rate: int) -> str:
    """A store at `url` holding a simulated studio (faults on) and the corrected dispute rounds
    (reversed then voided, reversed then resettled, a tombstone); returns `url`."""
    from ledger.store import open_app
    from ops.sim.simulator import simulate

    app = open_app(url)
    try:
        app.ingest([line.rstrip(b"\n") for line in simulate(tables, rounds, seed, fault_rate=fault_rate)])
        ingest_corrections(app)
    finally:
        app.close()
    return url

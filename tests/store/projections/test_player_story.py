"""A player's own story (projections/recall.py `player_story`, queries.player_story and
queries.recall): on a simulated studio with faults (voids, reversals then void or
resettlement) and the corrected dispute rounds, every page of every player's rounds is in
ledger order, each row adds up (before + net = after, net = returned + refunded - staked),
each row starts where the one before it ended, across pages, and the totals are the sums
of the rows; over the whole history the closing balance is the player's account."""
from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime

import pytest

from ledger.eventlog import EventLog
from projections import queries
from projections.runner import Projector
from projections.sql import Db
from tests.support.dispute_rounds import RESETTLED, REVERSED_VOIDED, simulated_with_corrections
from tests.support.story import assert_adds_up


def walk(db: Db, player: str, rows: int, since: datetime | None = None,
         until: datetime | None = None) -> tuple[list[queries.StoryRound], dict[str, queries.StoryTotal]]:
    """Every page of the player's story, oldest page first, each page's rounds as shown."""
    pages, page = [], 1
    while True:
        story = queries.player_story(db, player, since, until, page, rows)
        pages.append(story)
        assert story.totals == pages[0].totals  # the period's totals, whatever the page
        if not story.older:
            break
        page += 1
    return [r for s in reversed(pages) for r in s.rounds], pages[0].totals


def check_adds_up(rounds: list[queries.StoryRound], totals: dict[str, queries.StoryTotal]) -> None:
    assert_adds_up([asdict(r) for r in rounds], {c: asdict(t) for c, t in totals.items()}, every_round=True)


@pytest.fixture
def story_store(store_url: str) -> str:
    return simulated_with_corrections(store_url, 4, 30, 7, 200)


def test_every_page_of_every_player_adds_up(story_store: str) -> None:
    log = EventLog.open(story_store)
    projector = Projector(log)
    try:
        projector.catch_up()
        db = projector.db
        statuses = {r[0] for r in db.query("SELECT status FROM proj_recall")}
        corrected = db.query("SELECT COUNT(*) FROM proj_recall WHERE corrections <> '[]'")[0][0]
        assert {"settled", "voided"} <= statuses and corrected > 0  # faults and corrections are in it
        accounts = {(b.owner, b.currency): b.balance_minor for b in queries.balances(db, kind="player").accounts}
        players = sorted({r[0] for r in db.query("SELECT player_id FROM proj_recall")})
        for player in players:
            rounds, totals = walk(db, player, rows=7)
            check_adds_up(rounds, totals)
            assert len(rounds) == sum(t.rounds for t in totals.values()) > 0
            for cur, t in totals.items():  # the whole history: from nothing to the account's balance
                assert t.opening_minor == 0 and t.closing_minor == accounts[(player, cur)], (player, cur)
        # A period: the opening balance is the nets of the rounds before it, and the rows still add up.
        busiest = max(players, key=lambda p: sum(t.rounds for t in walk(db, p, 50)[1].values()))
        everything, _ = walk(db, busiest, 50)
        middle = sorted(datetime.fromisoformat(r.studio_at) for r in everything)[len(everything) // 3]
        later = sorted(datetime.fromisoformat(r.studio_at) for r in everything)[2 * len(everything) // 3]
        rounds, totals = walk(db, busiest, 5, since=middle, until=later)
        check_adds_up(rounds, totals)
        assert rounds and all(middle <= datetime.fromisoformat(r.studio_at) < later for r in rounds)
        for cur, t in totals.items():
            assert t.opening_minor == sum(r.net_minor for r in everything
                                          if r.currency == cur and datetime.fromisoformat(r.studio_at) < middle)
    finally:
        projector.close()
        log.close()


def test_a_corrected_round_counts_what_is_in_force_and_says_what_changed(story_store: str) -> None:
    log = EventLog.open(story_store)
    projector = Projector(log)
    try:
        projector.catch_up()
        rounds = {f"{r.table_id}#{r.round_no}": r for r in queries.recall(projector.db, "alice", 10).rounds}
    finally:
        projector.close()
        log.close()
    voided = rounds[REVERSED_VOIDED]  # won 19.50 on 10.00, reversed, then voided: the stake back
    assert (voided.status, voided.staked_minor, voided.returned_minor, voided.refunded_minor, voided.net_minor) == (
        "voided", 1000, 0, 1000, 0)
    assert voided.corrections == [{"settlement_no": 1, "returned_minor": 1950}]
    assert voided.correction == ("corrected: settlement 1 reversed (it had returned 19.50 EUR); "
                                 "then voided: refunded 10.00 EUR")
    resettled = rounds[RESETTLED]  # Player wins in both settlements: nothing changed for alice
    assert (resettled.status, resettled.net_minor) == ("settled", 1000)
    assert resettled.correction == ("corrected: settlement 1 reversed (it had returned 20.00 EUR); "
                                    "settled again: returns 20.00 EUR (no change for this player)")
    assert rounds[REVERSED_VOIDED].timeline and datetime.fromisoformat(voided.studio_at).tzinfo == UTC

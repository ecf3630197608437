"""Seeded mutation fuzz of ingest (tests/support/fuzz.py), on SQLite and PostgreSQL.

10,000 malformed lines of every class, interleaved at random with a valid simulated feed:
nothing crashes, every bad line is refused `bad_command` and kept in the rejections log, and
the valid commands get exactly the results and events a clean ingest of the valid feed alone gives.
"""
from __future__ import annotations

import json
import random

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.sim.simulator import simulate
from tests.store.ledger.test_shards import _round_facts
from tests.support.fuzz import MUTATIONS, malformed

BAD_LINES = 10_000
SEED = 20261123
CONFIGURE_SHARE = 0.25  # of the malformed lines, made from a configure_table line


def _configure(command_id: str, table_id: str, ruleset_id: str, **settings: object) -> bytes:
    line = {"type": "configure_table", "command_id": command_id, "table_id": table_id,
            "studio_time": "2026-11-21T11:00:00.000+00:00", "game": ruleset_id.split("/")[0],
            "ruleset_id": ruleset_id, "ruleset_version": 1, "currency": "EUR"} | settings
    return json.dumps(line).encode() + b"\n"


# Accepted, refused (a limit or game the rule set forbids) and repeated configurations.
CONFIGURES = (
    _configure("cfg/1", "bacc-1", "baccarat/live-8d", timezone="Europe/Malta",
               limits={"banker": {"min_minor": 100, "max_minor": 500_000}}),
    _configure("cfg/2", "bj-live-1", "blackjack/live-8d", timezone="Asia/Kolkata"),
    _configure("cfg/3", "bj-spielbank-1", "blackjack/spielbank", boxes_per_player_max=2, stakes_per_box_max=4),
    _configure("cfg/4", "bj-tour-1", "baccarat/live-8d"),  # a baccarat rule set at a blackjack table's rounds
    _configure("cfg/5", "bacc-2", "baccarat/live-8d", limits={"banker": {"min_minor": 100, "max_minor": 500_000}},
               difference_max_minor=1_000_000),  # refused before the table's first version: no Table
    _configure("cfg/7", "bj-tour-1", "blackjack/casino-tour", limits={"main": {"min_minor": 100, "max_minor": 10**13}}),
    _configure("cfg/2", "bj-live-1", "blackjack/live-8d", timezone="Asia/Kolkata"),  # duplicate command id
)
RECONFIGURE = _configure("cfg/6", "bacc-1", "baccarat/live-8d", timezone="UTC")  # mid-feed: version 2


def _valid_feed() -> list[bytes]:
    """A simulated feed (with refused and duplicate commands) at configured tables, one reconfigured mid-feed."""
    simulated = list(simulate(4, 30, seed=3, fault_rate=100))
    middle = len(simulated) // 2
    return [*CONFIGURES, *simulated[:middle], RECONFIGURE, *simulated[middle:]]


def _interleaved(valid: list[bytes], rng: random.Random) -> tuple[list[bytes], set[int]]:
    """The valid feed with BAD_LINES malformed lines dropped in at random places; their positions."""
    configures = [line for line in valid if b'"configure_table"' in line]
    bad = [malformed(rng, rng.choice(configures if rng.random() < CONFIGURE_SHARE else valid)) for _ in range(BAD_LINES)]
    slots = sorted(rng.choices(range(len(valid) + 1), k=BAD_LINES))
    feed: list[bytes] = []
    positions: set[int] = set()
    it = iter(bad)
    k = 0
    for i, line in enumerate(valid + [b""]):
        while k < len(slots) and slots[k] == i:
            positions.add(len(feed))
            feed.append(next(it))
            k += 1
        if i < len(valid):
            feed.append(line)
    return feed, positions


def test_malformed_lines_are_refused_and_the_valid_feed_lands_as_if_alone(store_url, second_store) -> None:
    rng = random.Random(SEED)
    valid = _valid_feed()
    feed, bad_at = _interleaved(valid, rng)
    fuzzed, clean = open_app(store_url), open_app(second_store)
    try:
        results = fuzzed.ingest(feed)  # must not raise
        alone = clean.ingest(valid)
        assert len(results) == len(feed)
        bad = [r for i, r in enumerate(results) if i in bad_at]
        # a mutation that leaves a control character or a lone surrogate in a string is text_invalid
        assert {(r.status, r.code) for r in bad} == {("refused", "bad_command"), ("refused", "text_invalid")}
        good = [r.as_dict() for i, r in enumerate(results) if i not in bad_at]
        assert good == [r.as_dict() for r in alone]
        assert {r.status for r in alone[:len(CONFIGURES)]} == {"accepted", "refused", "duplicate"}
        assert _round_facts(fuzzed) == _round_facts(clean)
        logged = fuzzed.rejections(limit=len(feed) + 1)
        assert len(logged) == len(bad) + len(clean.rejections(limit=len(feed) + 1))
        assert sum(1 for row in logged if row["code"] in ("bad_command", "text_invalid")) >= len(bad)
    finally:
        fuzzed.close()
        clean.close()
    log = EventLog.open(store_url)
    try:
        assert [t.timezone for t in log.table_history("bacc-1")] == ["Europe/Malta", "UTC"]
    finally:
        log.close()


def test_the_fuzz_draws_every_class_of_damage() -> None:
    rng = random.Random(SEED)
    line = next(iter(simulate(1, 1, seed=3)))
    drawn = {rng.choice(MUTATIONS) for _ in range(500)}
    assert drawn == set(MUTATIONS)
    assert all(malformed(rng, line) != line for _ in range(200))

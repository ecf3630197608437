"""Seeded mutation fuzz of ingest (tests/ledger/fuzz.py), on SQLite and PostgreSQL.

10,000 malformed lines of every class, interleaved at random with a valid simulated feed:
nothing crashes, every bad line is refused `bad_command` and kept in the rejections log, and
the valid commands get exactly the results and events a clean ingest of the valid feed alone gives.
"""
from __future__ import annotations

import random

from ledger.store import open_app
from ops.simulator import simulate
from tests.ledger.fuzz import MUTATIONS, malformed
from tests.ledger.test_shards import _round_facts

BAD_LINES = 10_000
SEED = 20261123


def _interleaved(valid: list[bytes], rng: random.Random) -> tuple[list[bytes], set[int]]:
    """The valid feed with BAD_LINES malformed lines dropped in at random places; their positions."""
    bad = [malformed(rng, rng.choice(valid)) for _ in range(BAD_LINES)]
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
    valid = list(simulate(4, 30, seed=3, fault_rate=100))  # includes refused and duplicate valid commands
    feed, bad_at = _interleaved(valid, rng)
    fuzzed, clean = open_app(store_url), open_app(second_store)
    try:
        results = fuzzed.ingest(feed)  # must not raise
        alone = clean.ingest(valid)
        assert len(results) == len(feed)
        bad = [r for i, r in enumerate(results) if i in bad_at]
        assert {(r.status, r.code) for r in bad} == {("refused", "bad_command")}
        good = [r.as_dict() for i, r in enumerate(results) if i not in bad_at]
        assert good == [r.as_dict() for r in alone]
        assert _round_facts(fuzzed) == _round_facts(clean)
        logged = fuzzed.rejections(limit=len(feed) + 1)
        assert len(logged) == len(bad) + len(clean.rejections(limit=len(feed) + 1))
        assert sum(1 for row in logged if row["code"] == "bad_command") >= len(bad)
    finally:
        fuzzed.close()
        clean.close()


def test_the_fuzz_draws_every_class_of_damage() -> None:
    rng = random.Random(SEED)
    line = next(iter(simulate(1, 1, seed=3)))
    drawn = {rng.choice(MUTATIONS) for _ in range(500)}
    assert drawn == set(MUTATIONS)
    assert all(malformed(rng, line) != line for _ in range(200))

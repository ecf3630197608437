"""Several writers on one store (`ledger serve --workers N`, consumers on several machines):
each decides on rounds it cached earlier, and another may have moved them on since. Every
decision, refusals included, is checked against the store's versions in the write's own
transaction (UnitOfWork.read_at, LedgerRows.reads), so whatever writer takes each command,
the answers and the events are those of one `ledger ingest` of the same feed."""
from __future__ import annotations

import random

import pytest

from ledger.store import open_app
from ops.service.committer import write_batch
from ops.sim.simulator import simulate
from tests.store.ledger.test_shards import _round_facts


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_writers_taking_turns_answer_as_one_ingest(store_url, second_store, seed) -> None:
    feed = list(simulate(2, 12, seed=seed, fault_rate=150))  # duplicates, voids, dealer errors
    reference = open_app(store_url)
    expected = [r.as_dict() for r in reference.ingest(feed, batch_size=1)]
    writers = [open_app(second_store), open_app(second_store)]
    pick = random.Random(seed)
    try:
        # One command per batch, the writer picked at random (a load balancer, a reconnect):
        # each writer's cache is stale about half the time.
        got = [write_batch(writers[pick.randrange(2)], [raw])[0].as_dict() for raw in feed]
        differ = [(i, e, g) for i, (e, g) in enumerate(zip(expected, got)) if e != g]
        assert not differ, f"{len(differ)} of {len(feed)} answers differ, first: {differ[0]}"
        assert _round_facts(writers[0]) == _round_facts(reference)
        # A stale batch fails its check before its events draw ids: the sequence has no gap.
        ids = [n.id for n in writers[0].recorder.select_notifications(1, 100_000)]
        assert ids == list(range(1, len(ids) + 1))
    finally:
        for app in (*writers, reference):
            app.close()


def test_a_refusal_decided_on_a_stale_round_is_not_committed(store_url) -> None:
    """The failure mode of issue 19: writer B refuses a card as out of sequence because its
    cached round is behind what writer A stored; a refusal writes no event, so only the read
    check can catch it."""
    feed = list(simulate(1, 3, seed=5, fault_rate=0))
    a, b = open_app(store_url), open_app(store_url)
    try:
        for raw in feed[:8]:
            assert write_batch(a, [raw])[0].status == "accepted"
        b.handle(feed[8])  # b caches the round as of command 9
        for raw in feed[9:12]:
            assert write_batch(a, [raw])[0].status == "accepted"
        result = write_batch(b, [feed[12]])[0]  # b's cache is 3 commands behind
        assert result.status == "accepted", result
    finally:
        a.close()
        b.close()

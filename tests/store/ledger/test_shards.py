"""Ingest over several processes (ledger/partitions.py), on SQLite and PostgreSQL.

Sharded ingest must give every command the result the one-process ingest gives,
and every round the same events, because a table's commands stay together and
in feed order. Also: routing, balance, a command id reused across tables, a
failing worker, and the parent's cache after the workers changed the rounds."""
from __future__ import annotations

import json

import pytest
from eventsourcing.application import AggregateNotFoundError

from ledger.commands import parse_command
from ledger.partitions import ShardFailed, split, table_of
from ops.sim.simulator import simulate
from tests.support.feed import Feed, lines


@pytest.mark.parametrize("raw, table", [
    (b'{"type":"void","table_id":"bj-1","round_no":1}', "bj-1"),
    ('{"type": "void", "table_id": "bj 2", "round_no": 1}', "bj 2"),  # spaces: parsed
    (b'{"note":"say \\"table_id\\":\\"x\\"","table_id":"t3"}', "t3"),  # the key inside a string is escaped
    (b'{"table_id":"a\\"b"}', 'a"b'),  # an escape in the value: parsed
    (b'{"table_id":7}', ""),
    (b"not json", ""),
    (b"[1, 2]", ""),
])
def test_table_of_reads_the_table_of_any_raw_command(raw, table) -> None:
    assert table_of(raw) == table


def test_table_of_a_parsed_command() -> None:
    cmd = parse_command(json.dumps(Feed("tp-9").open("teen-patti/20-20")))
    assert table_of(cmd) == "tp-9"


def test_split_keeps_tables_whole_in_feed_order_and_balanced() -> None:
    feed = list(simulate(7, 20, seed=5, fault_rate=0))
    shards = split(feed, 2)
    assert sorted(i for s in shards for i, _ in s) == list(range(len(feed)))
    homes: dict[str, set[int]] = {}
    for k, shard in enumerate(shards):
        assert [i for i, _ in shard] == sorted(i for i, _ in shard)
        for _, raw in shard:
            homes.setdefault(table_of(raw), set()).add(k)
    assert all(len(h) == 1 for h in homes.values()) and len(homes) == 7
    biggest_table = max(sum(1 for r in feed if table_of(r) == t) for t in homes)
    assert abs(len(shards[0]) - len(shards[1])) <= biggest_table
    assert split(feed, 2) == shards  # the same feed splits the same way


def _round_facts(app):  # type: ignore[no-untyped-def]
    """Every round's events without server times: what must not depend on the workers."""
    facts: dict[str, list] = {}
    for n in app.recorder.select_notifications(1, 100_000):
        event = app.mapper.to_domain_event(n)
        state = {k: v for k, v in vars(event).items() if k not in ("timestamp", "originator_id")}
        facts.setdefault(str(event.originator_id), []).append((type(event).__name__, state))
    return facts


def test_two_workers_give_the_same_results_and_rounds_as_one(store_url, second_store) -> None:
    from ledger.store import open_app

    feed = list(simulate(6, 25, seed=11, fault_rate=150))  # duplicates, early voids, dealer errors ...
    one, two = open_app(store_url), open_app(second_store)
    seen: list[int] = []
    sequential = one.ingest(feed, batch_size=40)
    sharded = two.ingest(feed, batch_size=40, workers=2, on_batch=lambda rs: seen.append(len(rs)))
    assert [r.as_dict() for r in sharded] == [r.as_dict() for r in sequential]
    assert {r.status for r in sequential} >= {"accepted", "duplicate", "refused"}
    assert sum(seen) == len(feed)
    assert _round_facts(two) == _round_facts(one)
    one.close()
    two.close()


def test_a_command_id_reused_across_tables_is_accepted_once(ledger) -> None:
    a, b = Feed("A"), Feed("B")
    open_a, open_b = a.open("teen-patti/20-20"), b.open("teen-patti/20-20")
    open_b["command_id"] = open_a["command_id"]  # same id, other table, other payload
    results = ledger.ingest(lines(open_a, open_b), workers=2)
    won = [r for r in results if r.status == "accepted"]
    lost = [r for r in results if r.status != "accepted"]
    assert len(won) == 1 and len(lost) == 1
    # the loser's batch held only it: `conflict` (retry); a bigger batch is rerun and refused at once
    assert (lost[0].status, lost[0].code) in (("conflict", "concurrency_conflict"), ("refused", "command_id_conflict"))
    loser = open_a if results[0].status != "accepted" else open_b
    retry = ledger.handle(lines(loser)[0])
    assert (retry.status, retry.code) == ("refused", "command_id_conflict")


def test_a_failing_worker_raises_and_the_other_shard_lands(open_ledger, monkeypatch) -> None:
    ledger = open_ledger()
    recorder_class = type(ledger.recorder)
    original = recorder_class.insert_events

    def failing(recorder, stored_events, **kwargs):  # type: ignore[no-untyped-def]
        if any(b'"BAD"' in e.state for e in stored_events):  # the BAD table's events
            raise RuntimeError("disk on fire")
        return original(recorder, stored_events, **kwargs)

    monkeypatch.setattr(recorder_class, "insert_events", failing)  # the forked workers inherit the patch
    good, bad = Feed("GOOD"), Feed("BAD")
    with pytest.raises(ShardFailed, match="disk on fire"):
        ledger.ingest(lines(good.open("teen-patti/20-20"), bad.open("teen-patti/20-20")), workers=2)
    fresh = open_ledger()
    assert fresh.find_round("GOOD", 1).version == 1
    with pytest.raises(AggregateNotFoundError):
        fresh.find_round("BAD", 1)


def test_the_parent_reads_what_the_workers_wrote(ledger) -> None:
    f = Feed("C")
    ledger.ingest(lines(f.open("teen-patti/20-20")))
    ledger.find_round("C", 1)  # cached in the parent at version 1
    other = Feed("D")
    ledger.ingest(lines(f.bet("b1", "p1", "table", "player_a", 100), other.open("teen-patti/20-20")), workers=2)
    again = ledger.handle(lines(f.bet("b1", "p2", "table", "player_b", 100))[0])  # same bet id, new command
    assert (again.status, again.code) == ("refused", "duplicate_bet_id")

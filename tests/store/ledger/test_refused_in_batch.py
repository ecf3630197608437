"""A command refused early in a batch leaves no trace the batch's later commands can see:
the same feed gives the same results in one batch as line by line (found by the mutation fuzz,
tests/store/ledger/test_fuzz.py, once it drew configure_table lines)."""
from __future__ import annotations

from typing import Any

from ledger.store import open_app
from tests.support.feed import Feed, lines, teen_patti_round

FORBIDDEN = {"type": "configure_table", "command_id": "cfg-x", "table_id": "bacc-9", "studio_time": "2024-05-01T11:00:00+00:00",
             "game": "baccarat", "ruleset_id": "baccarat/live-8d", "ruleset_version": 1, "currency": "EUR",
             "limits": {"banker": {"min_minor": 100, "max_minor": 500_000}}, "difference_max_minor": 1_000_000}


def _results(url: str, feed: list[bytes], one_by_one: bool) -> list[dict[str, Any]]:
    app = open_app(url)
    try:
        if one_by_one:
            return [r.as_dict() for line in feed for r in app.ingest([line])]
        return [r.as_dict() for r in app.ingest(feed)]
    finally:
        app.close()


def test_a_table_whose_first_configuration_was_refused_plays_unconfigured(store_url: str, second_store: str) -> None:
    f = Feed("bacc-9")
    feed = lines(FORBIDDEN, f.open("baccarat/live-8d"), f.bet("b1", "alice", "table", "banker", 1000))
    batched = _results(store_url, feed, one_by_one=False)  # raised InvariantBroken before the fix
    assert [(r["status"], r["code"]) for r in batched] == [
        ("refused", "table_setting_forbidden"), ("accepted", None), ("accepted", None)]
    assert batched == _results(second_store, feed, one_by_one=True)


def test_commands_after_a_refused_open_read_the_same_in_one_batch(store_url: str, second_store: str) -> None:
    f = Feed("TP-1")
    bad_open = f.open("teen-patti/20-20") | {"ruleset_version": 99}
    feed = lines(bad_open, *teen_patti_round(f)[1:3])
    batched = _results(store_url, feed, one_by_one=False)
    assert [r["code"] for r in batched[1:]] == ["round_not_open", "round_not_open"]
    assert batched == _results(second_store, feed, one_by_one=True)  # the message named the round's uuid

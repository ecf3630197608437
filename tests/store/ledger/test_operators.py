"""Operators through the application, on SQLite and PostgreSQL: configure_operator versions,
bets naming an operator (refusals table-driven), two operators' same player id as two
players, and a default operator's bet stored byte for byte as before operators existed."""
from __future__ import annotations

import json
from typing import Any

import pytest

from domain.operators import DEFAULT_OPERATOR_ID, player_key, split_key
from ledger.eventlog import EventLog
from ledger.records import BetPlaced, OperatorConfigured, Settled, fields_of
from ledger.store import open_app
from projections.replay import recompute
from tests.support.feed import EPOCH, Feed, lines, teen_patti_round


def configure(n: int, operator_id: str = "OP2", **fields: Any) -> bytes:
    cmd = {"type": "configure_operator", "command_id": f"op-{operator_id}-{n}", "operator_id": operator_id,
           "studio_time": EPOCH.isoformat(), "name": f"Casino {operator_id}", "currencies": ["EUR"],
           "timezone": "Europe/Madrid", "jurisdictions": ["ES"], **fields}
    return json.dumps(cmd).encode()


def test_configuration_versions(ledger: Any) -> None:
    first = ledger.handle(configure(1))
    assert first.status == "accepted" and first.events == ("Operator.Configured",) and first.round_id is None
    assert ledger.handle(configure(2)).events == ()  # the same content: nothing recorded
    assert ledger.handle(configure(3, currencies=["GBP", "EUR"])).events == ("Operator.Configured",)
    refused = ledger.handle(configure(4, timezone="Mars/Olympus"))
    assert refused.code == "bad_timezone" and "operator OP2" in refused.message


REFUSALS = [  # (operator_id on the bet, currency configured, the code)
    ("OP7", None, "unknown_operator"),
    ("OP2", ["GBP"], "operator_mismatch"),
    ("op 2", ["EUR"], "bad_command"),
    ("OP~2", ["EUR"], "bad_command"),
    ("OP2", ["EUR"], None),
    (DEFAULT_OPERATOR_ID, None, None),  # the default operator plays unconfigured
]


@pytest.mark.parametrize(("operator_id", "currencies", "code"), REFUSALS)
def test_a_bet_naming_an_operator(ledger: Any, operator_id: str, currencies: list[str] | None,
                                  code: str | None) -> None:
    if currencies is not None:
        assert ledger.handle(configure(1, currencies=currencies)).status == "accepted"
    f = Feed("TP1")
    assert ledger.handle(json.dumps(f.open("teen-patti/20-20")).encode()).status == "accepted"
    result = ledger.handle(json.dumps(f.bet("b1", "p-17", "table", "player_a", 1000, operator_id=operator_id)).encode())
    assert result.code == code, result.message


def test_two_operators_same_player_id_are_two_players(ledger: Any, store_url: str) -> None:
    assert ledger.handle(configure(1)).status == "accepted"
    f = Feed("TP1")
    feed = teen_patti_round(f)
    feed.insert(3, f.bet("tp-a2", "alice", "table", "player_a", 700, operator_id="OP2"))
    results = ledger.ingest(lines(*feed))
    assert all(r.status == "accepted" for r in results), [r.message for r in results]
    log = EventLog.open(store_url)
    try:
        records = list(log.records())
        bets = [r for r in records if isinstance(r, BetPlaced)]
        assert {(b.bet_id, b.operator_id, b.player_id) for b in bets if b.bet_id.startswith("tp-a")} == {
            ("tp-a", DEFAULT_OPERATOR_ID, "alice"), ("tp-a2", "OP2", "OP2~alice")}
        settled = next(r for r in records if isinstance(r, Settled))
        accounts = {p.account for p in settled.postings}
        assert {"player:alice", "player:OP2~alice"} <= accounts
        assert split_key(player_key("OP2", "alice")) == ("OP2", "alice")
        default_bet = next(b for b in bets if b.bet_id == "tp-a")
        assert "operator_id" not in fields_of(default_bet)  # stored as before operators existed
        assert [r.operator_id for r in records if isinstance(r, OperatorConfigured)] == ["OP2"]
        rows = log.app.recorder.select_notifications(1, 100)
        stored = {json.loads(n.state)["bet_id"]: n.state for n in rows if n.topic.endswith("BetPlaced")}
        assert b"operator_id" not in stored["tp-a"] and b"class_version" not in stored["tp-a"]
        assert b'"operator_id":"OP2"' in stored["tp-a2"] and b'"class_version":2' in stored["tp-a2"]
        replay = recompute([r for r in records if r.originator_id == settled.originator_id])
        assert replay.findings == [], replay.findings
    finally:
        log.close()
    later = open_app(store_url)  # a fresh process: the aggregate loads through the library's upcast
    try:
        r1 = later.find_round("TP1", 1)
        assert {b.player_id for b in r1.bets.values()} == {"alice", "OP2~alice", "bob"}
    finally:
        later.close()


def test_an_old_store_takes_operators_and_keeps_its_chain(tmp_path: Any) -> None:
    """The committed store of an earlier version: its events and audit chain are unchanged after
    operators' bets are added, and every round, old and new, replays without a finding."""
    import gzip

    from projections.audit import chain
    from tests.store.golden.make_golden import STORE

    db = tmp_path / "old.db"
    db.write_bytes(gzip.decompress((STORE.parent / "store-v0.db.gz").read_bytes()))
    url = f"sqlite:///{db}"
    log = EventLog.open(url)
    before = [link.hash for link in chain(log.stored())]
    log.close()
    app = open_app(url)
    try:
        assert app.handle(configure(1)).status == "accepted"
        f = Feed("TP-NEW")
        feed = teen_patti_round(f)
        feed.insert(3, f.bet("tp-a2", "alice", "table", "player_a", 700, operator_id="OP2"))
        assert all(r.status == "accepted" for r in app.ingest(lines(*feed)))
    finally:
        app.close()
    log = EventLog.open(url)
    try:
        after = [link.hash for link in chain(log.stored())]
        assert after[:len(before)] == before and len(after) > len(before)
        records = list(log.records())
        by_round: dict[str, list[Any]] = {}
        for r in records:
            by_round.setdefault(r.originator_id, []).append(r)
        replayed = [recompute(rs) for rs in by_round.values() if any(isinstance(x, Settled) for x in rs)]
        assert len(replayed) > 50 and all(r.findings == [] for r in replayed)
    finally:
        log.close()


def test_parallel_ingest_commits_an_operator_before_the_bets_after_it(ledger: Any) -> None:
    """With several workers, a configure_operator (no table) is committed alone, after every
    command before it and before any after it: no bet of another partition meets it unknown."""
    from ops.sim.simulator import Studio

    feed = list(Studio(4, 6, seed=9, operators=3).lines())
    late = feed[:40] + [configure(1, "OP9")] + [
        line.replace(b'"operator_id":"OP1"', b'"operator_id":"OP9"') for line in feed[40:]]
    results = ledger.ingest(late, batch_size=16, workers=2)
    refused = [(r.command_id, r.code, r.message) for r in results if r.status != "accepted"]
    assert refused == []
    assert sum(1 for r in results if r.command_id == "op-OP9-1") == 1


def test_two_service_writers_a_bet_after_its_operators_answered_configuration(open_ledger: Any) -> None:
    """`ledger serve --workers 2`: two writers of one store, whose commands keep no order but the
    answer's (a command answered is committed). Writer B has OP1 cached at version 1 (EUR) from a
    bet it refused for its USD; writer A then answers OP1's version 2 (EUR, USD): B's next USD bet
    is checked against version 2, never refused by its stale copy (the read's version check)."""
    from ops.service.committer import write_batch
    from ops.sim.simulator import Studio

    feed = [json.loads(x) for x in Studio(1, 2, seed=3, operators=1).lines()]
    for c in feed:
        if c["type"] == "open_round":
            c["currency"] = "USD"
    sent = [json.dumps(c).encode() for c in feed]
    bets = [i for i, c in enumerate(feed) if c["type"] == "place_bet"]
    a, b = open_ledger(), open_ledger()
    assert write_batch(a, sent[:1])[0].status == "accepted"  # OP1, version 1: EUR
    assert write_batch(b, sent[1:bets[0] + 1])[-1].code == "operator_mismatch"
    assert write_batch(a, [configure(2, "OP1", currencies=["EUR", "USD"])])[0].events == ("Operator.Configured",)
    later = write_batch(b, sent[bets[0] + 1:])
    assert [(r.command_id, r.code) for r in later if r.status != "accepted"] == []

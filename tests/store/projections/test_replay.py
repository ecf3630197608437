"""Exact replay: every round of a simulated day (faults included) replays with no
finding on SQLite and PostgreSQL; a payout altered in the stored Settled event
is found, by position, by `ledger replay` and `ledger audit replay`."""
from __future__ import annotations

import json
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.records import CardDealt, FollowDecided, Opened, Paused, Record, Settled, SettlementReversed, Voided
from ledger.store import open_app
from ops.cli import main as cli
from ops.cli.commands.audit import replay_all
from ops.sim.simulator import simulate
from projections.audit_store import parse_round_ref, round_events
from projections.replay import recompute
from tests.store.projections.test_audit_store import Store

TABLES, ROUNDS, SEED, FAULTS_PER_MILLE = 5, 6, 4, 250


@pytest.fixture
def day(store_url: str) -> tuple[str, Any]:
    app = open_app(store_url)
    app.ingest(simulate(TABLES, ROUNDS, SEED, FAULTS_PER_MILLE))
    return store_url, app


def first_event(app: Any, kind: type, where: Any = lambda e: True) -> Any:
    return next(e for e in EventLog(app).records() if isinstance(e, kind) and where(e))


def test_every_round_of_a_simulated_day_replays_without_findings(day) -> None:
    _, app = day
    summary = replay_all(EventLog(app))
    assert summary["rounds"] == TABLES * ROUNDS
    assert summary["findings"] == []
    kinds = {type(e) for e in EventLog(app).records()}
    assert {Voided, Paused, SettlementReversed, FollowDecided} <= kinds  # the day had faults worth checking


def test_altered_payout_in_the_store_is_a_finding(day, capsys) -> None:
    url, app = day
    settled = first_event(app, Settled, lambda e: any(r.returned_minor > 0 for r in e.results))
    opened = round_events(EventLog(app), parse_round_ref(settled.originator_id))[0]
    table, number = opened.table_id, opened.round_no
    paid = next(i for i, r in enumerate(settled.results) if r.returned_minor > 0)

    def pay_more(state: dict) -> None:
        state["results"][paid]["returned_minor"] += 1000

    Store(app).edit_state(settled.position, pay_more)
    summary = replay_all(EventLog.open(url))
    assert [(f.kind, f.position) for f in summary["findings"]] == [("payout_differs", settled.position)]
    bet_id = settled.results[paid].bet_id
    assert f"bet {bet_id}" in summary["findings"][0].message

    capsys.readouterr()
    assert cli(["replay", f"{table}#{number}", "--db", url]) == 1
    out = capsys.readouterr().out
    assert "payout_differs" in out and f"position {settled.position}" in out and "[DIFF]" in out
    assert cli(["audit", "replay", "--db", url, "--quiet"]) == 1
    assert "1 finding(s)" in capsys.readouterr().out


def test_changed_rule_set_hash_is_a_finding(day) -> None:
    _, app = day
    opened = first_event(app, Opened)
    Store(app).edit_state(opened.position, lambda s: s.update(ruleset_hash="0" * 64))
    events = round_events(EventLog(app), parse_round_ref(opened.originator_id))
    kinds = [(f.kind, f.position) for f in recompute(events).findings]
    assert ("ruleset_hash_mismatch", opened.position) in kinds


def test_replay_json_and_as_of_an_event(day, capsys) -> None:
    url, app = day
    opened = first_event(app, Opened, lambda e: e.game == "blackjack")
    ref = f"{opened.table_id}#{opened.round_no}"
    assert cli(["replay", ref, "--db", url, "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["round_id"] == opened.originator_id and full["findings"] == []
    assert [s["n"] for s in full["steps"]] == list(range(1, len(full["steps"]) + 1))
    assert full["results"] and all(r["agrees"] for r in full["results"])
    assert all(r["recomputed"]["explanation"] for r in full["results"])
    assert cli(["replay", ref, "--db", url, "--json", "--at", "3"]) == 0
    early = json.loads(capsys.readouterr().out)
    assert len(early["steps"]) == 3 and early["results"] == []
    assert early["steps"][-1]["state"] == full["steps"][2]["state"]
    assert cli(["replay", "nope#1", "--db", url]) == 1  # no such round: the answer is "no"


# ------------------------------------------------------------------ pure recompute, no store


def _round(app: Any, kind: type = Settled) -> list[Record]:
    settled = first_event(app, kind)
    return round_events(EventLog(app), parse_round_ref(settled.originator_id))


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_missing_event_and_refused_fact_are_findings(day) -> None:
    _, app = day
    events = _round(app)
    cards = [i for i, e in enumerate(events) if isinstance(e, CardDealt)]
    gap = events[: cards[0]] + events[cards[0] + 1:]  # a card vanished from the middle of the round
    kinds = {f.kind for f in recompute(gap).findings}
    assert "missing_event" in kinds and ("refused" in kinds or "payout_differs" in kinds or "settled_incomplete" in kinds)


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_void_refunds_are_checked(day) -> None:
    _, app = day
    events = _round(app, Voided)
    voided = next(e for e in events if isinstance(e, Voided))
    if not voided.refunds:
        pytest.skip("tombstone void: nothing to refund")
    altered = [e if e is not voided else voided._replace(refunds=voided.refunds[1:]) for e in events]
    assert "refunds_differ" in {f.kind for f in recompute(altered).findings}

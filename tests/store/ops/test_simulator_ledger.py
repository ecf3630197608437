"""Simulator feeds through the real ledger (SQLite): the money invariants hold
for any seed, faults included; a clean feed is accepted whole; `ledger demo`
runs and reports its invariant check as OK."""
from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.eventlog import EventLog
from ledger.records import (
    BetPlaced,
    Interrupted,
    Opened,
    Settled,
    SettlementReversed,
    Voided,
    event_name,
    postings_of,
)
from ledger.store import open_app
from ops.cli.commands.demo import run_demo
from ops.cli.errors import CliError
from ops.sim.simulator import Studio, simulate

# Every refusal a faulty feed may cause, each on purpose (see ops/sim/table.py FAULT_KINDS).
EXPECTED_FAULT_CODES = {
    "round_voided",  # commands of a round whose void came first (or that a dealer error voided)
    "wrong_target", "impossible_card", "card_not_expected",  # dealer errors
    "bet_not_offered", "stake_below_minimum",  # bad commands, late side bets
}


def ingest(lines: list[bytes], directory: str):
    app = open_app(f"sqlite:///{Path(directory) / 'ledger.db'}")
    return app, app.ingest(lines, batch_size=200)


def check_money(app) -> tuple[int, int]:
    """Every event's postings sum to zero; every closed round's account is zero;
    all accounts sum to zero. Returns (events with postings, closed rounds)."""
    balances: Counter[str] = Counter()
    phase: dict[str, type] = {}
    with_postings = 0
    for ev in EventLog(app).records():
        postings = postings_of(ev)
        assert sum(p.amount_minor for p in postings) == 0, (event_name(ev), ev.position, postings)
        with_postings += bool(postings)
        for p in postings:
            balances[p.account] += p.amount_minor
        if isinstance(ev, (Settled, Voided, SettlementReversed)):
            phase[ev.originator_id] = type(ev)
    closed = [rid for rid, kind in phase.items() if kind is not SettlementReversed]
    for rid in closed:
        assert balances[f"round:{rid}"] == 0, rid
    assert sum(balances.values()) == 0
    return with_postings, len(closed)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**32), fault_rate=st.sampled_from([0, 150, 400]))
def test_ledger_money_invariants_hold_for_any_simulated_studio(seed: int, fault_rate: int) -> None:
    lines = list(simulate(5, 5, seed, fault_rate))
    with tempfile.TemporaryDirectory() as tmp:
        app, results = ingest(lines, tmp)
        statuses = Counter(r.status for r in results)
        assert statuses["conflict"] == 0
        unexpected = {r.code for r in results if r.status == "refused"} - EXPECTED_FAULT_CODES
        assert not unexpected, unexpected
        if fault_rate == 0:
            assert statuses == Counter({"accepted": len(lines)})
        with_postings, closed = check_money(app)
        assert with_postings > 0 and closed > 0


def test_clean_feed_settles_every_round_in_the_ledger() -> None:
    studio = Studio(5, 6, seed=77)
    lines = list(studio.lines())
    with tempfile.TemporaryDirectory() as tmp:
        app, results = ingest(lines, tmp)
        assert all(r.status == "accepted" for r in results)
        settled = [ev for ev in EventLog(app).records() if isinstance(ev, Settled)]
        assert len(settled) == studio.stats.rounds_total == 30


def test_duplicates_are_recognised_and_early_voids_leave_tombstones() -> None:
    studio = Studio(10, 20, seed=4, fault_rate=500, fault_kinds=("duplicate", "early_void"))
    lines = list(studio.lines())
    with tempfile.TemporaryDirectory() as tmp:
        app, results = ingest(lines, tmp)
    statuses = Counter(r.status for r in results)
    assert statuses["duplicate"] == studio.stats.faults["duplicate"] > 0
    opens_refused = sum(1 for line, r in zip(lines, results)
                        if json.loads(line)["type"] == "open_round" and r.code == "round_voided")
    assert opens_refused == studio.stats.faults["early_void"] > 0


def test_every_simulated_disconnect_names_its_player_and_leaves_a_trace() -> None:
    """The studio names the player of a player-side pause; the ledger records one Interrupted
    per disconnect, for a player with a bet in the round, in every game."""
    studio = Studio(10, 20, seed=11, fault_rate=500, fault_kinds=("disconnect",))
    lines = list(studio.lines())
    with tempfile.TemporaryDirectory() as tmp:
        app, results = ingest(lines, tmp)
        assert all(r.status == "accepted" for r in results), {r.code for r in results}
        records = list(EventLog(app).records())
    interrupted = [ev for ev in records if isinstance(ev, Interrupted)]
    assert len(interrupted) == studio.stats.faults["disconnect"] > 0
    bettors = {(ev.originator_id, ev.player_id) for ev in records if isinstance(ev, BetPlaced)}
    assert all((ev.originator_id, ev.player_id) in bettors for ev in interrupted)
    games = {ev.originator_id: ev.game for ev in records if isinstance(ev, Opened)}
    assert {games[ev.originator_id] for ev in interrupted} == {"blackjack", "baccarat", "teen-patti"}


def test_demo_smoke(tmp_path, capsys) -> None:
    args = argparse.Namespace(db=f"sqlite:///{tmp_path / 'demo.db'}", tables=5, rounds=6, seed=3,
                              fault_rate=200, quiet=True, audit_dir=str(tmp_path / "audit"))
    assert run_demo(args) == 0
    out = capsys.readouterr().out
    assert "invariant check: OK" in out
    for title in ("Rounds by game and outcome", "Voids by cause", "Money", "Refusals by code", "Invariants",
                  "Projections", "Audit trail", "Replay check"):
        assert title in out
    assert "all accounts in the balances view sum to zero: OK" in out
    assert "intact, no findings" in out and "every payout matches" in out
    assert (tmp_path / "audit" / "manifest.json").exists()
    assert "teen-patti/20-20" in out and "blackjack/spielbank" in out
    # a second run on a store holding the first one's events is refused; --force starts it afresh:
    # the same ingest outcome and event count
    with pytest.raises(CliError):
        run_demo(args)
    args.force = True
    assert run_demo(args) == 0
    second = capsys.readouterr().out

    def ingest_lines(text: str) -> list[str]:
        return [x for x in text.splitlines() if x.startswith(("  ingest:", "  events recorded:"))]

    assert len(ingest_lines(out)) == 2 and ingest_lines(second) == ingest_lines(out)


def test_demo_fails_when_a_recorded_payout_was_altered(tmp_path, capsys, monkeypatch) -> None:
    """The closing replay check is real: a tampered settlement makes the demo exit 1."""
    from projections.replay import recompute as real_recompute

    def tampering_recompute(events, **kw):  # type: ignore[no-untyped-def]
        events = list(events)
        for i, e in enumerate(events):
            if isinstance(e, Settled) and e.results:
                first = e.results[0]._replace(returned_minor=e.results[0].returned_minor + 1)
                events[i] = e._replace(results=(first, *e.results[1:]))
                break
        return real_recompute(events, **kw)

    monkeypatch.setattr("projections.replay.recompute", tampering_recompute)
    args = argparse.Namespace(db=f"sqlite:///{tmp_path / 'demo.db'}", tables=5, rounds=3, seed=5,
                              fault_rate=0, quiet=True, audit_dir=str(tmp_path / "audit"))
    assert run_demo(args) == 1
    assert "finding(s)" in capsys.readouterr().out

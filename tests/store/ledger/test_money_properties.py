"""Money invariants under random command sequences and random simulator feeds with faults:
every event's postings sum to zero, every closed round's account is zero, all accounts
together sum to zero, and a round rebuilt from its events equals the live one."""
from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.money import round_account
from ledger.round import Round
from ledger.store import open_app
from ops.sim.simulator import simulate
from tests.support.feed import Feed, lines

CARDS = [r + s for r in "A23456789TJQK" for s in "SHDC"]
TP_TARGETS = ["A", "B"]
BET_TYPES = ["player_a", "player_b", "tie", "pair_plus_a", "six_card_bonus"]


def check_store(app) -> None:  # type: ignore[no-untyped-def]
    """Read every event back (second path of the balance invariant) and check the money."""
    totals: dict[str, int] = defaultdict(int)
    rounds: dict = {}  # type: ignore[type-arg]
    start = 1
    while True:
        notes = app.recorder.select_notifications(start, 500)
        if not notes:
            break
        for n in notes:
            event = app.mapper.to_domain_event(n)
            postings = getattr(event, "postings", [])
            assert sum(p["amount_minor"] for p in postings) == 0, event
            for p in postings:
                totals[p["account"]] += p["amount_minor"]
            if isinstance(event, Round.Event):
                rounds[event.originator_id] = event
        start = notes[-1].id + 1
    assert sum(totals.values()) == 0
    for round_id in rounds:
        live = app.repository.get(round_id)
        if live.phase in ("settled", "voided"):
            assert totals.get(round_account(str(round_id)), 0) == 0, live
        assert live.balance_minor == totals.get(round_account(str(round_id)), 0)


step = st.one_of(
    st.tuples(st.just("bet"), st.sampled_from(BET_TYPES), st.integers(50, 3000)),
    st.tuples(st.just("close")),
    st.tuples(st.just("card"), st.sampled_from(CARDS), st.sampled_from(TP_TARGETS)),
    st.tuples(st.just("pause"), st.sampled_from(["system_error", "host_interruption", "player_connection_lost"])),
    st.tuples(st.just("resume")),
    st.tuples(st.just("void")),
    st.tuples(st.just("reverse"), st.sampled_from(["void", "resettle"])),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, min_size=1, max_size=25), seed=st.integers(0, 10**9))
def test_random_teen_patti_sequences_keep_the_books_balanced(tmp_path_factory, steps, seed):
    app = open_app(f"sqlite:///{tmp_path_factory.mktemp('prop') / 'ledger.db'}")
    try:
        f = Feed(f"P{seed}")
        cmds = [f.open("teen-patti/20-20")]
        for i, s in enumerate(steps):
            if s[0] == "bet":
                cmds.append(f.bet(f"b{i}", f"p{i % 3}", "table", s[1], s[2]))
            elif s[0] == "close":
                cmds.append(f.close())
            elif s[0] == "card":
                cmds.append(f.card(s[1], s[2]))
            elif s[0] == "pause":  # a player-side cause names a player (one with a bet, or not yet)
                cmds.append(f.pause(s[1], **({"player_id": f"p{i % 3}"} if s[1].startswith("player_") else {})))
            elif s[0] == "resume":
                cmds.append(f.resume())
            elif s[0] == "void":
                cmds.append(f.void())
            else:
                cmds.append(f.reverse(s[1]))
        results = app.ingest(lines(*cmds), batch_size=7)
        assert len(results) == len(cmds)
        assert {r.status for r in results} <= {"accepted", "refused"}
        check_store(app)
    finally:
        app.close()


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6))
def test_simulated_feeds_with_faults_keep_the_books_balanced(tmp_path_factory, seed):
    app = open_app(f"sqlite:///{tmp_path_factory.mktemp('sim') / 'ledger.db'}")
    try:
        feed = list(simulate(5, 6, seed=seed, fault_rate=400))
        results = app.ingest(feed, batch_size=64)
        assert len(results) == len(feed)
        assert any(r.status == "accepted" for r in results)
        check_store(app)
        # replay: a fresh app rebuilds the same rounds
        settled = [r.round_id for r in results if "Settled" in r.events][:5]
        fresh = open_app(app.env.get("SQLITE_DBNAME") and f"sqlite:///{app.env.get('SQLITE_DBNAME')}")
        try:
            for rid in settled:
                from uuid import UUID

                a, b = app.repository.get(UUID(rid)), fresh.repository.get(UUID(rid))
                assert (a.version, a.phase, a.cards, a.settlements) == (b.version, b.phase, b.cards, b.settlements)
                assert a.model.view() == b.model.view()
        finally:
            fresh.close()
    finally:
        app.close()

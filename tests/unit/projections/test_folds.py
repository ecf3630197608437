"""Each view's fold over synthetic events (docs/events.md shapes), no database."""
from __future__ import annotations

from datetime import datetime
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.records import Posting
from projections.folding import MemoryRows, parse_fraction, utc_text
from projections.recall import expand_timeline
from projections.runner import ALL_VIEWS
from tests.support.synthetic import RoundScript, number, random_history


def fold_all(events, views=ALL_VIEWS) -> MemoryRows:
    rows = MemoryRows([t for v in views for t in v.tables])
    for ev in events:
        for view in views:
            if type(ev) in view.handles:
                view.fold(rows, ev)
    return rows


def balances(rows: MemoryRows) -> dict[tuple[str, str], tuple[int, int]]:
    return {(r["account"], r["currency"]): (r["balance_minor"], r["funds_on_game_minor"])
            for r in rows.rows("proj_balances")}


def settled_round() -> RoundScript:
    s = RoundScript("t1", 7).open().bet("b1", "alice", 1000).bet("b2", "bob", 500, "pair").close()
    s.card("AS", "seat:1").card("TD", "seat:1").double("b1", "alice", 1000)
    return s.settle({"b1": (3000, Fraction(0)), "b2": (0, Fraction(0))})


# --------------------------------------------------------------- balances
def test_balances_follow_a_round_from_bets_to_settlement() -> None:
    s = RoundScript("t1", 7).open().bet("b1", "alice", 1000).bet("b2", "bob", 500).close()
    s.double("b1", "alice", 1000)
    rows = fold_all(number(s.events))
    assert balances(rows) == {
        ("player:alice", "EUR"): (-2000, 2000), ("player:bob", "EUR"): (-500, 500),
        (s.account, "EUR"): (2500, 0),
    }
    s.settle({"b1": (3000, Fraction(0))})
    rows = fold_all(number(s.events))
    assert balances(rows) == {
        ("player:alice", "EUR"): (1000, 0), ("player:bob", "EUR"): (-500, 0),
        (s.account, "EUR"): (0, 0), ("house:t1", "EUR"): (-500, 0),
    }


def test_reversal_puts_funds_back_on_game_and_void_refunds_them() -> None:
    s = settled_round().reverse()
    rows = fold_all(number(s.events))
    assert balances(rows)[("player:alice", "EUR")] == (-2000, 2000)
    s.void("human_error")
    rows = fold_all(number(s.events))
    assert balances(rows)[("player:alice", "EUR")] == (0, 0)
    assert balances(rows)[("house:t1", "EUR")] == (0, 0)


def test_unbalanced_postings_are_a_broken_invariant() -> None:
    from domain.errors import InvariantBroken

    s = RoundScript("t1", 1).open().bet("b1", "alice", 100)
    bad = s.events[-1]._replace(postings=(Posting("player:alice", -100),))
    with pytest.raises(InvariantBroken, match="sum to zero"):
        fold_all(number([s.events[0], bad]))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_all_accounts_sum_to_zero_per_currency(seed: int) -> None:
    rows = fold_all(random_history(seed))
    totals: dict[str, int] = {}
    for (_account, currency), (balance, _) in balances(rows).items():
        totals[currency] = totals.get(currency, 0) + balance
    assert set(totals.values()) <= {0}
    # A closed round's account is zero; funds on game equal what open rounds hold.
    open_rounds = {r["round_id"] for r in rows.rows("proj_rounds") if r["status"] in ("open", "paused", "reversed")}
    on_game = sum(fog for (a, _), (_, fog) in balances(rows).items() if a.startswith("player:"))
    held = 0
    for (account, _), (balance, _) in balances(rows).items():
        if account.startswith("round:"):
            if account[len("round:"):] in open_rounds:
                held += balance
            else:
                assert balance == 0, account
    assert on_game == held


# ------------------------------------------------------------------ rounds
@pytest.mark.parametrize("script, status, settlement_no", [
    (lambda: RoundScript("t1", 1).open().bet("b", "a", 10), "open", 0),
    (lambda: RoundScript("t1", 1).open().pause(), "paused", 0),
    (lambda: RoundScript("t1", 1).open().pause().resume(), "open", 0),
    (lambda: settled_round(), "settled", 1),
    (lambda: settled_round().reverse(), "reversed", 1),
    (lambda: settled_round().reverse().settle({}), "settled", 2),
    (lambda: RoundScript("t1", 1).open().bet("b", "a", 10).void(), "voided", 0),
    (lambda: RoundScript("t1", 1).tombstone(), "voided", 0),
])
def test_round_status(script, status, settlement_no) -> None:
    (row,) = fold_all(number(script().events)).rows("proj_rounds")
    assert (row["status"], row["settlement_no"]) == (status, settlement_no)


# ----------------------------------------------------------------- refunds
def test_one_refund_row_per_refunded_bet_with_round_facts() -> None:
    s = RoundScript("t9", 3, game="baccarat").open().bet("b1", "alice", 100).bet("b2", "bob", 200, "tie")
    s.pause("system_error").void("system_error")
    rows = fold_all(number(s.events)).rows("proj_refunds")
    assert [(r["bet_id"], r["player_id"], r["amount_minor"]) for r in rows] == [("b1", "alice", 100), ("b2", "bob", 200)]
    r = rows[0]
    assert (r["table_id"], r["round_no"], r["game"], r["cause"], r["voided_by"]) == ("t9", 3, "baccarat", "system_error", "pitboss")
    void = next(e for e in number(s.events) if type(e).__name__ == "Voided")
    assert r["studio_at"] == utc_text(datetime.fromisoformat(void.studio_time))  # studio time, not recorded time


def test_a_tombstone_void_refunds_nothing() -> None:
    assert fold_all(number(RoundScript("t1", 1).tombstone().events)).rows("proj_refunds") == []


# ----------------------------------------------------------------- recall
def test_recall_keeps_bets_moves_results_and_no_balance() -> None:
    first = RoundScript("t1", 1).open().bet("a1", "alice", 100).close().settle({"a1": (200, Fraction(0))})
    second = settled_round()
    rows = fold_all(number(first.events + second.events))
    mine = sorted((r for r in rows.rows("proj_recall") if r["player_id"] == "alice"), key=lambda r: r["seq"])
    assert [r["round_no"] for r in mine] == [1, 7]
    r1, r2 = mine
    # a balance at a moment mixes in other rounds: the running balance is made when read (player_story)
    assert "balance_before_minor" not in r1 and "balance_after_minor" not in r2
    assert (r1["staked_minor"], r1["returned_minor"], r1["corrections"]) == (100, 200, [])
    assert r2["bets"] == [{"bet_id": "b1", "bet_type": "main", "spot": "seat:1", "stake_minor": 1000}]
    assert r2["stake_moves"] == [{"bet_id": "b1", "amount_minor": 1000, "reason": "double"}]
    assert [(x["outcome"], x["returned_minor"]) for x in r2["results"]] == [("win", 3000)]
    assert (r2["staked_minor"], r2["returned_minor"], r2["status"]) == (2000, 3000, "settled")
    (timeline_row,) = [r for r in rows.rows("proj_recall_rounds") if r["round_id"] == second.id]
    timeline = expand_timeline(timeline_row["timeline"])
    events = [e["event"] for e in timeline]
    assert events == ["Opened", "BetPlaced", "BetPlaced", "BettingClosed", "CardDealt", "CardDealt",
                      "DecisionTaken", "Settled"]
    assert [e["card"] for e in timeline if e["event"] == "CardDealt"] == ["AS", "TD"]
    assert timeline_row["status"] == "settled"


def test_recall_after_void_shows_refunds() -> None:
    s = RoundScript("t1", 1).open().bet("a1", "alice", 100).void()
    (row,) = fold_all(number(s.events)).rows("proj_recall")
    assert row["refunds"] == [{"bet_id": "a1", "amount_minor": 100}]
    assert (row["staked_minor"], row["refunded_minor"], row["status"]) == (100, 100, "voided")


def test_recall_keeps_what_a_reversed_settlement_had_returned() -> None:
    s = RoundScript("t1", 1).open().bet("a1", "alice", 100).close().settle({"a1": (200, Fraction(0))})
    s.reverse().void("human_error")
    (row,) = fold_all(number(s.events)).rows("proj_recall")
    assert row["corrections"] == [{"settlement_no": 1, "returned_minor": 200}]
    assert (row["results"], row["returned_minor"], row["refunded_minor"], row["status"]) == ([], 0, 100, "voided")


# --------------------------------------------------------------------- ggr
def test_ggr_books_settlement_reversal_and_void_on_their_day() -> None:
    s = RoundScript("t1", 1).open().bet("b1", "alice", 1000).bet("b2", "bob", 1001).close()
    s.settle({"b1": (2500, Fraction(0)), "b2": (1001 + 950, Fraction(19, 20))})
    rows = fold_all(number(s.events))
    (g,) = rows.rows("proj_ggr")
    assert (g["staked_minor"], g["paid_minor"], g["refunded_minor"], g["ggr_minor"]) == (2001, 4451, 0, -2450)
    assert parse_fraction(g["rounding_kept"]) == Fraction(19, 20)
    s.reverse().void("human_error")
    rows = fold_all(number(s.events))
    totals = {k: sum(r[k] for r in rows.rows("proj_ggr")) for k in ("staked_minor", "paid_minor", "refunded_minor", "ggr_minor", "rounds_closed")}
    assert totals == {"staked_minor": 2001, "paid_minor": 0, "refunded_minor": 2001, "ggr_minor": 0, "rounds_closed": 1}
    assert sum((parse_fraction(r["rounding_kept"]) for r in rows.rows("proj_ggr")), Fraction(0)) == 0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_ggr_per_table_equals_the_house_account(seed: int) -> None:
    rows = fold_all(random_history(seed))
    ggr: dict[tuple[str, str], int] = {}
    for r in rows.rows("proj_ggr"):
        ggr[(r["table_id"], r["currency"])] = ggr.get((r["table_id"], r["currency"]), 0) + r["ggr_minor"]
    house = {(a[len("house:"):], c): b for (a, c), (b, _) in balances(rows).items() if a.startswith("house:")}
    assert {k: v for k, v in ggr.items() if v} == {k: v for k, v in house.items() if v}


@pytest.mark.parametrize("seed", range(8))
def test_balances_two_leg_stakes_fold_as_the_general_path_does(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bets and stake moves (two legs that balance) take a shortcut in the balances fold:
    every view's rows equal those of the general path (postings_delta, funds on game by account)."""
    from ledger.records import postings_of
    from projections import balances as view

    events = random_history(seed)
    taken: list[int] = []
    shortcut = view._two_legs

    def counted(rows, ev, *legs) -> None:  # type: ignore[no-untyped-def]
        taken.append(ev.position)
        shortcut(rows, ev, *legs)

    monkeypatch.setattr(view, "_two_legs", counted)
    fast = fold_all(events)
    monkeypatch.setattr(view, "_two_legs", lambda rows, ev, *legs: view._any_legs(rows, ev, postings_of(ev), type(ev), True))
    general = fold_all(events)
    assert len(taken) > 10  # the shortcut ran
    for name in fast.tables:
        assert fast.rows(name) == general.rows(name), name

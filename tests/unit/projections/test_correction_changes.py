"""What a correction changed (projections/round_story.py): each reversed settlement's lines
against what took their place, bet by bet (outcome, stake, return as money), or that it
changed nothing; the same sentences `ledger round show` and the console's round page print."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

from projections.round_story import round_story, story_lines
from tests.support.synthetic import RoundScript, number


def reversal(script: RoundScript, settlement_no: int = 1) -> dict[str, Any]:
    story = round_story(script.id, number(script.events), None)
    s = next(s for s in story["settlements"] if s["settlement_no"] == settlement_no)
    assert s["status"] == "reversed"
    reversed_: dict[str, Any] = s["reversal"]
    return reversed_


def played() -> RoundScript:
    s = RoundScript("t1", 1, game="baccarat").open().bet("a1", "alice", 1000).bet("b1", "bob", 500).close()
    return s.settle({"a1": (2000, Fraction(0))})  # alice wins 20.00, bob loses


def test_a_resettlement_that_pays_differently_names_each_bet_before_and_after() -> None:
    s = played().reverse().settle({"b1": (1000, Fraction(0))})  # now bob wins and alice loses
    r = reversal(s)
    assert r["changed"] == "changed 2 of 2 bets (settlement 1 -> settlement 2)"
    assert [c["text"] for c in r["changes"]] == [
        "a1 (alice, main): win, staked 10.00 EUR, returned 20.00 EUR -> lose, staked 10.00 EUR, returned 0.00 EUR",
        "b1 (bob, main): lose, staked 5.00 EUR, returned 0.00 EUR -> win, staked 5.00 EUR, returned 10.00 EUR"]
    assert r["changes"][0]["before"]["returned_minor"] == 2000 and r["changes"][0]["after"]["returned_minor"] == 0


def test_only_the_bets_that_changed_are_listed() -> None:
    r = reversal(played().reverse().settle({"a1": (1900, Fraction(0))}))
    assert r["changed"] == "changed 1 of 2 bets (settlement 1 -> settlement 2)"
    assert [c["bet_id"] for c in r["changes"]] == ["a1"]


def test_a_resettlement_alike_changed_nothing() -> None:
    r = reversal(played().reverse().settle({"a1": (2000, Fraction(0))}))
    assert r["changes"] == []
    assert r["changed"] == ("changed nothing: settlement 2 settles every bet as settlement 1 did "
                            "(same outcomes, stakes and returns)")


def test_a_void_after_the_reversal_refunds_every_bet() -> None:
    r = reversal(played().reverse().void("human_error"))
    assert r["changed"] == "every bet's result of settlement 1 replaced by the refund of what it put in (void)"
    assert [c["text"] for c in r["changes"]] == [
        "a1 (alice, main): win, staked 10.00 EUR, returned 20.00 EUR -> refunded 10.00 EUR (void)",
        "b1 (bob, main): lose, staked 5.00 EUR, returned 0.00 EUR -> refunded 5.00 EUR (void)"]


def test_a_reversal_waiting_takes_every_result_back() -> None:
    r = reversal(played().reverse())
    assert r["changed"].startswith("every bet's result of settlement 1 taken back")
    assert r["changes"][0]["after"] is None and r["changes"][0]["text"].endswith("-> nothing in force")


def test_round_show_lines_say_what_each_correction_changed() -> None:
    s = played().reverse().settle({"b1": (1000, Fraction(0))}).reverse().settle({"b1": (1000, Fraction(0))})
    lines = story_lines(round_story(s.id, number(s.events), None), "EUR")
    assert "  what the correction changed: changed 2 of 2 bets (settlement 1 -> settlement 2)" in lines
    assert ("    a1 (alice, main): win, staked 10.00 EUR, returned 20.00 EUR -> lose, staked 10.00 EUR, "
            "returned 0.00 EUR") in lines
    assert ("  what the correction changed: changed nothing: settlement 3 settles every bet as settlement 2 did "
            "(same outcomes, stakes and returns)") in lines

"""DGOJ sessions from plays (pure): the gap rule at its boundary, tables apart,
completeness by the studio clock, money from the players' posting legs through a
reversal; amounts rendered exactly from integer cents."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.records import (
    BetPlaced,
    Opened,
    Posting,
    Settled,
    SettlementReversed,
    Voided,
    record_of,
)
from projections.dgoj import ExportRules, Play, collect_plays, sessions_of
from projections.dgoj_xml import ExportError, cantidad, fecha_tz

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
GAP = timedelta(minutes=20)


def play(table: str, no: int, bet_s: float, close_s: float | None, player: str = "p1") -> Play:
    return Play(f"r-{table}-{no}", table, no, "baccarat", "baccarat/live-8d", "EUR", player,
                T0 + timedelta(seconds=bet_s), None if close_s is None else T0 + timedelta(seconds=close_s),
                "settled" if close_s is not None else "open", 100, 0, 50)


def shapes(sessions) -> list[list[int]]:
    return [[p.round_no for p in s.plays] for s in sessions]


def test_gap_at_the_limit_joins_and_one_second_more_splits() -> None:
    rules = ExportRules(session_gap=GAP)
    limit = GAP.total_seconds()
    plays = [play("t", 1, 0, 50), play("t", 2, 50 + limit, 60 + limit),  # exactly the gap: same session
             play("t", 3, 60 + 2 * limit + 1, 70 + 2 * limit)]  # one second more: a new one
    assert shapes(sessions_of(plays, rules, None)) == [[1, 2], [3]]
    # Another table, or another player, is another session whatever the times.
    mixed = [play("t", 1, 0, 50), play("u", 1, 10, 40), play("t", 2, 60, 90, player="p2")]
    assert sorted((s.table_id, s.player_id) for s in sessions_of(mixed, rules, None)) == [
        ("t", "p1"), ("t", "p2"), ("u", "p1")]


def test_complete_only_when_closed_and_the_studio_clock_passed_the_gap() -> None:
    rules = ExportRules(session_gap=GAP)
    closed = [play("t", 1, 0, 50)]
    end = T0 + timedelta(seconds=50)
    assert not sessions_of(closed, rules, end + GAP)[0].complete
    assert sessions_of(closed, rules, end + GAP + timedelta(seconds=1))[0].complete
    still_open = [play("t", 1, 0, 50), play("t", 2, 60, None)]
    (s,) = sessions_of(still_open, rules, end + timedelta(days=1))
    assert not s.closed and not s.complete


def _records():
    """A round: a bet of 10.00, settled paying 20.00, reversed, then voided (refund 10.00)."""
    rid = "11111111-1111-1111-1111-111111111111"

    def rec(kind, n, seconds, **fields):
        if "postings" in fields:  # stored form: legs as dicts
            fields["postings"] = [leg._asdict() for leg in fields["postings"]]
        return record_of(kind, n, rid, n, T0, {"command_id": f"c{n}",
                                               "studio_time": (T0 + timedelta(seconds=seconds)).isoformat(), **fields})

    hold = (Posting("player:p1", -1000), Posting(f"round:{rid}", 1000))
    pay = (Posting(f"round:{rid}", -1000), Posting("house:t", -1000), Posting("player:p1", 2000))
    back = tuple(Posting(a, -m) for a, m in pay)
    refund = (Posting(f"round:{rid}", -1000), Posting("player:p1", 1000))
    return [
        rec(Opened, 1, 0, table_id="t", round_no=1, game="baccarat", ruleset_id="baccarat/live-8d",
            ruleset_version=1, ruleset_hash="h", currency="EUR", shoe_id="s", round_in_shoe=1, dealer_id="d"),
        rec(BetPlaced, 2, 5, bet_id="b1", player_id="p1", spot="table", bet_type="player", stake_minor=1000,
            mode=None, seat_no=None, postings=hold),
        rec(Settled, 3, 40, settlement_no=1, ruleset_id="baccarat/live-8d", ruleset_version=1, results=(),
            postings=pay),
        rec(SettlementReversed, 4, 900, settlement_no=1, by="sup", reason="r", postings=back),
        rec(Voided, 5, 901, cause="human_error", by="sup", note="", refunds=(), postings=refund),
    ]


def test_money_from_the_player_legs_through_a_reversal_and_the_first_close_kept() -> None:
    records = _records()
    plays, clock = collect_plays(records[:3])
    (p,) = plays
    assert (p.staked_minor, p.refunded_minor, p.won_minor, p.status) == (1000, 0, 2000, "settled")
    plays, clock = collect_plays(records)
    (p,) = plays
    assert (p.staked_minor, p.refunded_minor, p.won_minor, p.status) == (1000, 1000, 0, "voided")
    assert p.first_bet_at == T0 + timedelta(seconds=5) and p.closed_at == T0 + timedelta(seconds=40)
    assert clock == T0 + timedelta(seconds=901)
    plays, _ = collect_plays(records[:4])  # reversed, not voided yet: not closed, so not exported
    assert plays[0].status == "reversed" and not plays[0].closed


@pytest.mark.parametrize(("minor", "text"), [
    (0, "0.00"), (1, "0.01"), (10, "0.10"), (99, "0.99"), (100, "1.00"), (123456789, "1234567.89"),
    (-5, "-0.05"), (10**12 - 1, "9999999999.99")])
def test_cantidad_exact(minor: int, text: str) -> None:
    assert cantidad(minor) == text


@given(st.integers(-(10**12) + 1, 10**12 - 1))
def test_cantidad_round_trips_every_cent(minor: int) -> None:
    assert Decimal(cantidad(minor)) * 100 == minor


def test_cantidad_refuses_what_dgoj_cannot_hold() -> None:
    for bad in (10**12, 1.5, True):
        with pytest.raises(ExportError):
            cantidad(bad)  # type: ignore[arg-type]
    madrid = datetime(2026, 11, 21, 13, 0, 1, tzinfo=UTC).astimezone(ZoneInfo("Europe/Madrid"))
    assert fecha_tz(madrid) == "20261121130001+0000"  # always written in UTC


def test_a_register_row_from_before_the_complete_flag_is_rectified_once_complete() -> None:
    """Rows registered before `complete` was in the content cannot say whether they were sent
    complete: unchanged while the session is incomplete, rectified (S) once it is complete."""
    from projections.dgoj_register import unchanged

    rules = ExportRules(session_gap=GAP)
    end = T0 + timedelta(seconds=50)
    (incomplete,) = sessions_of([play("t", 1, 0, 50)], rules, end)
    (complete,) = sessions_of([play("t", 1, 0, 50)], rules, end + GAP + timedelta(seconds=1))
    old_row = incomplete.content("PUN", with_complete=False)
    assert '"complete"' not in old_row
    assert unchanged(old_row, incomplete, "PUN") and not unchanged(old_row, complete, "PUN")
    # Rows written now say it: N then S is a change, S then S is not.
    assert not unchanged(incomplete.content("PUN"), complete, "PUN")
    assert unchanged(complete.content("PUN"), complete, "PUN")

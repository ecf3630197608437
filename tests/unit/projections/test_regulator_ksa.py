"""The regulator seam's rules and the KSA values, without a store: the register's placement,
scope and period; amounts from integer minor units; UTC times; UIDs of the XSD's pattern."""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from domain.operators import DEFAULT_OPERATOR_ID, player_key
from projections import ksa
from projections.dgoj import Play
from projections.regulator import Period, Scope, placement


def test_placement_is_new_unchanged_or_a_correction() -> None:
    assert placement(None, "a") == "new"
    assert placement("a", "a") == "unchanged"
    assert placement("a", "b") == "correction"


def test_scope_holds_one_operators_bets_the_default_by_default() -> None:
    assert Scope().holds(None) and Scope().holds(DEFAULT_OPERATOR_ID)
    assert not Scope().holds("op-2") and Scope("op-2").holds("op-2") and not Scope("op-2").holds(None)


def test_scope_holds_a_play_by_its_player_key() -> None:
    assert Scope().holds_key(player_key(None, "p-1")) and not Scope().holds_key(player_key("op-2", "p-1"))
    assert Scope("op-2").holds_key(player_key("op-2", "p-1")) and not Scope("op-2").holds_key("p-1")


def test_period_is_since_inclusive_until_exclusive() -> None:
    day = datetime(2026, 11, 21, tzinfo=UTC)
    p = Period(day, day + timedelta(days=1))
    assert p.holds(day) and not p.holds(day + timedelta(days=1)) and not p.holds(day - timedelta(microseconds=1))
    assert Period().holds(day)


@pytest.mark.parametrize(("minor", "text"), [(0, "0.00"), (1, "0.01"), (250, "2.50"), (-250, "-2.50"),
                                             (123456789012345, "1234567890123.45")])
def test_amount_from_integer_minor_units(minor: int, text: str) -> None:
    assert ksa.amount(minor) == text


def test_a_float_is_refused() -> None:
    with pytest.raises(ksa.KsaError):
        ksa.amount(2.5)  # type: ignore[arg-type]


def test_utc_times_with_z_whole_seconds() -> None:
    at = datetime(2026, 11, 24, 17, 30, 1, 999000, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert ksa.utc(at) == "2026-11-24T12:00:01Z"


def test_uids_match_the_xsd_pattern_and_are_stable() -> None:
    uid = ksa.uid("tx/r1/p1/STAKE")
    assert re.fullmatch(r"[a-z0-9]{8}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{12}", uid)
    assert uid == ksa.uid("tx/r1/p1/STAKE") != ksa.uid("tx/r1/p1/WINNING")


def test_a_session_with_a_play_in_another_currency_stops_the_export_naming_its_round() -> None:
    at = datetime(2026, 11, 24, 12, tzinfo=UTC)
    eur = Play("r-eur", "t1", 1, "baccarat", "baccarat", "EUR", "p1", at)
    gbp = Play("r-gbp", "t1", 2, "baccarat", "baccarat", "GBP", "p1", at)
    ksa.check_currency((eur,))
    with pytest.raises(ksa.KsaError, match="round r-gbp: currency GBP"):
        ksa.check_currency((eur, gbp))

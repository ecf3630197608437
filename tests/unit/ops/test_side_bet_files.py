"""A new side bet is its game's module (bet type, how it resolves, a new rule-set version) and its
counts in domain/gamemath.py's COUNTS: `ledger rtp`, the game math's derivation and the simulator
take the new version from the registry, so none of ops/gamemath/rtp.py, derive() or
ops/sim/simulator.py needs a change (docs/architecture.md, "Where a change goes"). Here a
"v2" is baccarat/live-8d v1 republished, and v1 is played as if it had no 3-card Lucky Six yet."""
from __future__ import annotations

import dataclasses

import pytest

from domain import baccarat as bac
from domain import gamemath
from domain import teenpatti as tp
from domain.registry import all_rule_sets
from ops.gamemath import rtp
from ops.sim.simulator import simulated_rule_sets

NEW_BET = "lucky_six_3"
V1 = dataclasses.replace(bac.LIVE_8D_V1, limits=tuple((t, lim) for t, lim in bac.LIVE_8D_V1.limits if t != NEW_BET))
V2 = dataclasses.replace(bac.LIVE_8D_V1, version=2)


def published() -> list:
    return [r for r in all_rule_sets() if r.id != V1.id] + [V1, V2]


def test_ledger_rtp_shows_the_latest_version_of_each_game() -> None:
    assert rtp.RULE_SETS == rtp.latest_rule_sets() == {"baccarat": bac.LIVE_8D_V1, "teen-patti": tp.TWENTY_TWENTY_V1}
    assert rtp.latest_rule_sets(published())["baccarat"] is V2


def test_a_bet_type_a_version_does_not_offer_is_no_line_of_it() -> None:
    assert (NEW_BET, None) not in gamemath.baccarat_lines(V1)
    assert (NEW_BET, None) in gamemath.baccarat_lines(V2) == gamemath.baccarat_lines()
    assert {row.bet for row in rtp.baccarat_table(V1)} == {rtp.baccarat_label(t, m) for t, m in gamemath.baccarat_lines(V1)}


def test_the_game_math_counts_every_published_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bac, "RULE_SETS", (V1, V2))
    monkeypatch.setattr(gamemath, "teenpatti_counts", lambda rules: {})  # seconds of CPU, not what is tested
    counted = gamemath.derive()
    assert (V2.id, 2, NEW_BET) in counted and (V1.id, 1, NEW_BET) not in counted


def test_a_new_version_leaves_the_default_studio_as_it_was() -> None:
    assert simulated_rule_sets() == simulated_rule_sets(all_rule_sets() + [V2])
    assert V1 in simulated_rule_sets(published()) and V2 not in simulated_rule_sets(published())
    assert {r.key for r in all_rule_sets()} - {r.key for r in simulated_rule_sets()} == {
        ("blackjack/live-8d", 2), ("blackjack/spielbank", 2)}

"""The simulator and `ledger rtp` take their bet types from the games (domain/), so a new
side bet needs no change in ops/: every bet type a game has is simulated and has an RTP line."""
from __future__ import annotations

from collections import Counter

import pytest

from domain import baccarat as bac
from domain import gamemath
from domain import teenpatti as tp
from ops.gamemath import rtp
from ops.sim.games import SIDE_PERCENT_DEFAULT, BaccaratDriver, GameDriver, TeenPattiDriver, side_bets


def test_every_bet_type_of_a_table_game_is_simulated() -> None:
    for driver, game in ((BaccaratDriver, bac), (TeenPattiDriver, tp)):
        placed = set(driver.main_types) | {driver.tie_type} | {t for t, _ in driver.side_types}
        assert placed == set(game.BET_TYPES)


def test_a_side_bet_the_simulator_does_not_know_is_played_at_the_default_chance() -> None:
    assert side_bets(("player", "tie", "dragon_7"), "player", GameDriver.tie_type) == (("dragon_7", SIDE_PERCENT_DEFAULT),)


def _stored_counts(rules: tp.TeenPattiRules, *, long: bool = True) -> dict[str, gamemath.Counted]:
    """The rule set's bet lines as domain/gamemath.py COUNTS keeps them (test_gamemath.py checks
    them against a fresh enumeration, test_rtp.py the figures it gives `ledger rtp`): the lines
    without the enumeration's tens of seconds of CPU."""
    found: dict[str, gamemath.Counted] = {}
    for (ruleset_id, version, key), (total, lines) in gamemath.COUNTS.items():
        if (ruleset_id, version) == (rules.id, rules.version):
            found[key] = (Counter({(outcome, line): n for outcome, line, n in lines}), total)
    return found


def test_every_teen_patti_bet_type_has_an_rtp_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gamemath, "teenpatti_counts", _stored_counts)
    named = {part for row in rtp.teenpatti_table() for part in row.bet.split(" / ")}
    assert named == {t for t, _ in tp.TWENTY_TWENTY_V1.limits}

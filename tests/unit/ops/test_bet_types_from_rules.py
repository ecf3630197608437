"""The simulator and `ledger rtp` take their bet types from the games (domain/), so a new
side bet needs no change in ops/: every bet type a game has is simulated and has an RTP line."""
from __future__ import annotations

from domain import baccarat as bac
from domain import teenpatti as tp
from ops.gamemath import rtp
from ops.sim.games import SIDE_PERCENT_DEFAULT, BaccaratDriver, GameDriver, TeenPattiDriver, side_bets
from tests.support.stored_math import stored_math


def test_every_bet_type_of_a_table_game_is_simulated() -> None:
    for driver, game in ((BaccaratDriver, bac), (TeenPattiDriver, tp)):
        placed = set(driver.main_types) | {driver.tie_type} | {t for t, _ in driver.side_types}
        assert placed == set(game.BET_TYPES)


def test_a_side_bet_the_simulator_does_not_know_is_played_at_the_default_chance() -> None:
    assert side_bets(("player", "tie", "dragon_7"), "player", GameDriver.tie_type) == (("dragon_7", SIDE_PERCENT_DEFAULT),)


def test_every_teen_patti_bet_type_has_an_rtp_line() -> None:
    with stored_math():  # the lines' counts as stored, not enumerated (tens of seconds of CPU)
        named = {part for row in rtp.teenpatti_table() for part in row.bet.split(" / ")}
    assert named == {t for t, _ in tp.TWENTY_TWENTY_V1.limits}

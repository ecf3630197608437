"""Exact game math through the engine: the strongest check that the rules are right.

Known values (8-deck baccarat, Wizard of Odds): Banker 0.989421, Player 0.987649,
Tie 8:1 0.856404, Player Pair 11:1 0.896386, Perfect Pair 25:1 0.869706,
EZ-style no-commission (Banker 6 pays 1:2) 0.985419, Dragon Bonus P 0.973483 / B 0.906269.
Six-card hand counts are the textbook ones. The whole file runs in ~7 s.
"""
from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import pytest

from domain import gamemath
from domain import teenpatti as tp
from ops.cli.commands import rtp as rtp_command
from ops.gamemath import rtp


def _rows(game):
    return {r.bet: r for r in rtp.tables(game)}


@pytest.mark.parametrize(
    "bet, expected",
    [
        ("player", 0.987649),
        ("banker (traditional)", 0.989421),
        ("banker (no-commission)", 0.985419),
        ("tie", 0.856404),
        ("player_pair", 0.896386),
        ("banker_pair", 0.896386),
        ("either_pair", 0.862901),
        ("perfect_pair", 0.869706),
        ("player_natural", 0.852456),
        ("banker_natural", 0.852456),
        ("player_bonus", 0.973483),
        ("banker_bonus", 0.906269),
        ("lucky_six", 0.833164),
        ("lucky_six_2", 0.856675),
        ("lucky_six_3", 0.847467),
    ],
)
def test_baccarat_rtp(bet, expected):
    assert float(_rows("baccarat")[bet].rtp) == pytest.approx(expected, abs=5e-7)


def test_baccarat_headline_values_to_four_decimals():
    rows = _rows("baccarat")
    assert round(float(rows["banker (traditional)"].rtp) * 100, 2) == 98.94  # seed: max RTP 98.94%
    assert round(float(rows["player"].rtp), 4) == round(0.987648, 4)
    assert round(float(rows["banker (traditional)"].rtp), 4) == round(0.989421, 4)


def test_baccarat_probabilities_are_exact_and_sum_to_one():
    for row in rtp.tables("baccarat"):
        assert isinstance(row.rtp, Fraction)
        assert row.win + row.push + row.lose == 1
    rows = _rows("baccarat")
    assert rows["tie"].win == rows["player"].push  # the same event, counted through two bets


@pytest.mark.parametrize(
    "bet, expected",
    [
        ("player_a", 0.975028),
        ("player_b", 0.975028),
        ("tie", 0.056431),
        ("pair_plus_a / pair_plus_b", 0.930860),
        ("six_card_bonus", 0.914386),
    ],
)
def test_teenpatti_rtp(bet, expected):
    assert float(_rows("teen-patti")[bet].rtp) == pytest.approx(expected, abs=5e-7)


def test_teenpatti_player_a_is_the_stated_97_50():
    assert round(float(_rows("teen-patti")["player_a"].rtp) * 100, 2) == 97.50


def test_six_card_counts_are_the_textbook_counts():
    weights, total = gamemath.six_card_weights(tp.TWENTY_TWENTY_V1)
    assert total == sum(weights.values()) == 20_358_520
    assert weights["royal_flush"] == 188
    assert weights["straight_flush"] == 1_656
    assert weights["four_of_a_kind"] == 14_664
    assert weights["full_house"] == 165_984
    assert weights["flush"] == 205_792
    assert weights["straight"] == 361_620
    assert weights["three_of_a_kind"] == 732_160


def test_six_card_without_ace_low_straight_has_fewer_straights():
    rules = dataclasses.replace(tp.TWENTY_TWENTY_V1, six_card_ace_low_straight=False)
    weights, _ = gamemath.six_card_weights(rules)
    assert weights["straight"] < 361_620 and weights["straight_flush"] < 1_656


def test_cli_json(capsys):
    import argparse

    parser = argparse.ArgumentParser()
    rtp_command.register(parser.add_subparsers())
    args = parser.parse_args(["rtp", "--game", "baccarat", "--json"])
    assert args.func(args) == 0
    data = json.loads(capsys.readouterr().out)
    bets = {b["bet"]: b for b in data["baccarat"]["bets"]}
    assert round(bets["banker (traditional)"]["rtp"], 6) == 0.989421

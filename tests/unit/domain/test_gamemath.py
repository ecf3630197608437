"""The game math of domain/gamemath.py: the figures the monitor tests against,
derived from the stored counts and the rule sets' paytables, against the exact
fractions the monitor had hard-coded before (mean, variance, largest return per
unit staked); the stored counts against a fresh enumeration; the odds read
from the paytable, never baked into the counts."""
from __future__ import annotations

import dataclasses
import os
from fractions import Fraction

import pytest

from domain import baccarat as bac
from domain import gamemath
from domain import teenpatti as tp
from domain.blackjack_rules import LIVE_8D_V1 as BJ_LIVE
from domain.money import Odds

# (rule set id, bet line, mean, variance, largest return), version 1 of each rule set:
# the fractions projections/monitor_math.py held before the math was derived in domain/.
PREVIOUS = [
    ("baccarat/live-8d", "player", "19283843717413/19524993263685", "344891340492053315232095456/381225361946944627939779225", "2"),
    ("baccarat/live-8d", "banker:traditional", "10732465128097/10847218479825", "101191667832985456634546596/117662148749056983932030625", "39/20"),
    ("baccarat/live-8d", "banker:no_commission", "19240298465317/19524993263685", "329467781537238430221132416/381225361946944627939779225", "2"),
    ("baccarat/live-8d", "tie", "619306544887/723147898655", "3647111442485028614000096/522942883329142150809025", "9"),
    ("baccarat/live-8d", "player_pair", "372/415", "1714176/172225", "12"),
    ("baccarat/live-8d", "banker_pair", "372/415", "1714176/172225", "12"),
    ("baccarat/live-8d", "either_pair", "680326/788417", "2755440037376/621601365889", "6"),
    ("baccarat/live-8d", "perfect_pair", "1469338/1689465", "62383319070176/2854291986225", "26"),
    ("baccarat/live-8d", "player_natural", "4599/5395", "181002843/58212050", "9/2"),
    ("baccarat/live-8d", "banker_natural", "4599/5395", "181002843/58212050", "9/2"),
    ("baccarat/live-8d", "player_bonus", "3801450797986/3904998652737", "466526131190296662000865798/76245072389388925587955845", "31"),
    ("baccarat/live-8d", "banker_bonus", "93623815842/103306842665", "10712519613272122557334694/2017065407126691153120525", "31"),
    ("baccarat/live-8d", "lucky_six", "235761260096/282970916865", "23810246502959853967962112/1841668415202631052849175", "21"),
    ("baccarat/live-8d", "lucky_six_2", "1769445112/2065481145", "80928440862432811976/4266212360350511025", "23"),
    ("baccarat/live-8d", "lucky_six_3", "787942102888/929761583985", "36741660423646991297542136/864456603054296208480225", "51"),
    ("teen-patti/20-20", "player_a", "9543327/9787750", "181938442502967/191600100125000", "39/20"),
    ("teen-patti/20-20", "player_b", "9543327/9787750", "181938442502967/191600100125000", "39/20"),
    ("teen-patti/20-20", "tie", "3249/57575", "9529563924/3314880625", "51"),
    ("teen-patti/20-20", "pair_plus_a", "5143/5525", "256722376/30525625", "51"),
    ("teen-patti/20-20", "pair_plus_b", "5143/5525", "256722376/30525625", "51"),
    ("teen-patti/20-20", "six_card_bonus", "136879/149695", "11308369579413/380946081425", "1001"),
    ("blackjack/live-8d", "pair", "372/415", "1714176/172225", "12"),
]


@pytest.mark.parametrize(("ruleset_id", "line", "mean", "variance", "top"), PREVIOUS,
                         ids=[f"{r}:{b}" for r, b, *_ in PREVIOUS])
def test_figures_are_the_previous_exact_fractions(ruleset_id: str, line: str, mean: str, variance: str,
                                                  top: str) -> None:
    assert gamemath.figures(ruleset_id, 1, line) == (Fraction(mean), Fraction(variance), Fraction(top))


def test_the_tested_bet_lines_are_the_previous_ones() -> None:
    assert gamemath.tested() == sorted((r, 1, b) for r, b, *_ in PREVIOUS)
    assert gamemath.figures("blackjack/live-8d", 1, "main") is None  # depends on the players' play
    assert gamemath.figures("baccarat/live-8d", 2, "player") is None  # a new version needs its own counts


def test_every_baccarat_bet_type_is_a_bet_line_and_the_banker_one_per_mode() -> None:
    lines = gamemath.baccarat_lines()
    assert [t for t, _ in lines if t != "banker"] == [t for t in bac.BET_TYPES if t != "banker"]
    assert [m for t, m in lines if t == "banker"] == list(bac.MODES)
    keys = {gamemath.line_key(t, m) for t, m in lines}
    assert {k for r, _, k in gamemath.tested() if r == bac.LIVE_8D_V1.id} == keys
    assert {k for r, _, k in gamemath.tested() if r == tp.TWENTY_TWENTY_V1.id} == set(tp.BET_TYPES)


def _stored(ruleset_id: str, line: str) -> gamemath.Counted:
    total, lines = gamemath.COUNTS[(ruleset_id, 1, line)]
    return gamemath.Ways({(o, ln): n for o, ln, n in lines}), total


def test_the_odds_come_from_the_paytable_not_the_counts() -> None:
    """A rule set with Tie at 9:1 instead of 8:1 prices the same counts otherwise."""
    nine = dataclasses.replace(bac.LIVE_8D_V1, paytable=tuple(
        (line, Odds.parse("9:1") if line == "tie" else odds) for line, odds in bac.LIVE_8D_V1.paytable))
    counted = _stored(bac.LIVE_8D_V1.id, "tie")
    p_tie = Fraction(dict(counted[0])[("win", "tie")], counted[1])
    mean, _, top = gamemath.moments(gamemath.distribution(counted, nine.odds))
    assert (mean, top) == (10 * p_tie, 10)
    assert gamemath.figures(bac.LIVE_8D_V1.id, 1, "tie")[0] == 9 * p_tie  # type: ignore[index]


def test_blackjack_pair_odds_are_the_rule_sets_field() -> None:
    assert gamemath.blackjack_odds(BJ_LIVE)("pair") is BJ_LIVE.odds_pair
    with pytest.raises(Exception, match="no paytable line"):
        gamemath.blackjack_odds(BJ_LIVE)("no_such_line")


def _fresh(*, long: bool) -> dict[tuple[str, int, str], gamemath.Counted]:
    out = {(bac.LIVE_8D_V1.id, 1, k): c for k, c in gamemath.baccarat_counts(bac.LIVE_8D_V1).items()}
    out.update({(tp.TWENTY_TWENTY_V1.id, 1, k): c
                for k, c in gamemath.teenpatti_counts(tp.TWENTY_TWENTY_V1, long=long).items()})
    out[(BJ_LIVE.id, 1, "pair")] = gamemath.blackjack_pair(BJ_LIVE, BJ_LIVE.decks)
    return out


def test_stored_counts_equal_a_fresh_enumeration() -> None:
    """Baccarat, the blackjack Pair, Teen Patti Pair Plus (about 2 s of CPU)."""
    for key, counted in _fresh(long=False).items():
        assert gamemath.COUNTS[key] == gamemath.stored_form(counted), key


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LEDGER_SLOW"), reason="Teen Patti hands: seconds of CPU; LEDGER_SLOW=1 runs it")
def test_every_stored_count_equals_a_fresh_enumeration() -> None:
    fresh = gamemath.derive()
    assert {k: gamemath.stored_form(c) for k, c in fresh.items()} == gamemath.COUNTS
    assert gamemath.counts_source(fresh) in open(gamemath.__file__, encoding="utf-8").read()


def test_distribution_refuses_counts_that_do_not_add_up() -> None:
    with pytest.raises(Exception, match="ways sum to 1, expected 2"):
        gamemath.distribution((gamemath.Ways({("lose", None): 1}), 2), bac.LIVE_8D_V1.odds)

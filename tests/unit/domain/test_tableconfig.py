"""Table configuration rules (domain/tableconfig.py): every configurable limit, per game,
at the limit and one past it, played on the game model under the effective rules; and
the configurations the rule set forbids."""
from __future__ import annotations

import pytest

from domain.errors import Refusal
from domain.model import Bet
from domain.refusals import RefusalCode
from domain.registry import get_rule_set, new_round
from domain.ruleset import BetLimit, RuleSet
from domain.tableconfig import TableSettings, check_settings, effective_rules, settings_hash

LIVE = get_rule_set("blackjack/live-8d", 1)
SPIEL = get_rule_set("blackjack/spielbank", 1)
TOUR = get_rule_set("blackjack/casino-tour", 1)
BACC = get_rule_set("baccarat/live-8d", 1)
TP = get_rule_set("teen-patti/20-20", 1)
ALL = (LIVE, SPIEL, TOUR, BACC, TP)


def _rules(rules: RuleSet, **kw: object) -> RuleSet:
    settings = TableSettings(**kw)  # type: ignore[arg-type]
    check_settings(rules, settings, "T")
    return effective_rules(rules, settings)


def _configured_limit(rules: RuleSet, bet_type: str) -> BetLimit:
    """A table limit unlike the rule set's: twice its minimum, 40 minimums at most."""
    default = rules.limit_for(bet_type)
    low = 2 * default.min_minor
    return BetLimit(low, 40 * low)


def _place(rules: RuleSet, bet_type: str, stake_minor: int) -> None:
    """Place one bet of `bet_type` (with what it needs first) on a fresh round under `rules`."""
    model = new_round(rules, round_in_shoe=1)
    if rules.game == "blackjack":
        spot = f"{rules.spot_kind}:1"
        main_min = rules.limit_for("main").min_minor
        if bet_type == "main":
            model.place_bet(Bet("b", "p1", spot, "main", stake_minor))
            return
        model.place_bet(Bet("m", "p1", spot, "main", main_min))
        if bet_type == "pair":
            model.place_bet(Bet("b", "p1", spot, "pair", stake_minor))
        else:  # behind
            model.place_bet(Bet("b", "p2", "behind:1", "main", stake_minor))
        return
    mode = "traditional" if bet_type == "banker" else None
    model.place_bet(Bet("b", "p1", "table", bet_type, stake_minor, mode))


LIMIT_CASES = [(r, t) for r in ALL for t, _ in r.limits]


@pytest.mark.parametrize(("rules", "bet_type"), LIMIT_CASES, ids=[f"{r.id}:{t}" for r, t in LIMIT_CASES])
def test_every_configured_limit_at_the_limit_and_one_past(rules: RuleSet, bet_type: str) -> None:
    limit = _configured_limit(rules, bet_type)
    effective = _rules(rules, limits=((bet_type, limit),))
    _place(effective, bet_type, limit.min_minor)  # at the minimum
    _place(effective, bet_type, limit.max_minor)  # at the maximum
    with pytest.raises(Refusal) as below:
        _place(effective, bet_type, limit.min_minor - 1)
    assert below.value.code == RefusalCode.STAKE_BELOW_MINIMUM
    past = limit.max_minor + (limit.min_minor if getattr(rules, "stake_divisible_by_min", False) else 1)
    with pytest.raises(Refusal) as above:
        _place(effective, bet_type, past)
    expected = (RefusalCode.DIFFERENCE_ABOVE_MAXIMUM if bet_type in ("player", "banker")
                else RefusalCode.STAKE_ABOVE_MAXIMUM)
    assert above.value.code == expected
    # the rule set itself is untouched: its own minimum is still allowed there
    _place(rules, bet_type, rules.limit_for(bet_type).min_minor)


def test_spielbank_stakes_divisible_by_the_table_minimum() -> None:
    effective = _rules(SPIEL, limits=(("main", BetLimit(200, 100_000)),))
    _place(effective, "main", 400)
    with pytest.raises(Refusal) as refused:
        _place(effective, "main", 300)
    assert refused.value.code == RefusalCode.STAKE_NOT_DIVISIBLE
    off = _rules(SPIEL, limits=(("main", BetLimit(200, 100_000)),), stake_divisible_by_min=False)
    _place(off, "main", 300)
    on = _rules(TOUR, stake_divisible_by_min=True, limits=(("main", BetLimit(200, 100_000)),))
    with pytest.raises(Refusal):
        _place(on, "main", 300)


@pytest.mark.parametrize("rules", [LIVE, SPIEL, TOUR], ids=lambda r: r.id)
@pytest.mark.parametrize("spots", [1, 4])
def test_spots_count_at_the_limit_and_one_past(rules: RuleSet, spots: int) -> None:
    effective = _rules(rules, spots_count=spots)
    kind = rules.spot_kind
    model = new_round(effective, round_in_shoe=1)
    model.place_bet(Bet("b", "p1", f"{kind}:{spots}", "main", 1_000))
    with pytest.raises(Refusal) as refused:
        model.place_bet(Bet("c", "p2", f"{kind}:{spots + 1}", "main", 1_000))
    assert refused.value.code == RefusalCode.UNKNOWN_SPOT


@pytest.mark.parametrize("stakes", [1, 2, 4])
def test_stakes_per_box_at_the_limit_and_one_past(stakes: int) -> None:
    effective = _rules(SPIEL, stakes_per_box_max=stakes)
    model = new_round(effective, round_in_shoe=1)
    for i in range(stakes):
        model.place_bet(Bet(f"b{i}", f"p{i}", "box:1", "main", 500))
    with pytest.raises(Refusal) as refused:
        model.place_bet(Bet("x", "px", "box:1", "main", 500))
    assert refused.value.code in (RefusalCode.BOX_FULL, RefusalCode.SEAT_TAKEN)


@pytest.mark.parametrize(("rules", "boxes"), [(SPIEL, 1), (SPIEL, 2), (TOUR, 3), (TOUR, 7), (LIVE, 1)],
                         ids=lambda v: getattr(v, "id", str(v)))
def test_boxes_per_player_at_the_limit_and_one_past(rules: RuleSet, boxes: int) -> None:
    effective = _rules(rules, boxes_per_player_max=boxes)
    kind = rules.spot_kind
    model = new_round(effective, round_in_shoe=1)
    for i in range(1, boxes + 1):
        model.place_bet(Bet(f"b{i}", "p1", f"{kind}:{i}", "main", 1_000))
    if boxes == rules.spots_count:
        return  # every box already taken by the player: nothing left to refuse on
    with pytest.raises(Refusal) as refused:
        model.place_bet(Bet("x", "p1", f"{kind}:{boxes + 1}", "main", 1_000))
    assert refused.value.code in (RefusalCode.TOO_MANY_BOXES, RefusalCode.PLAYER_ALREADY_SEATED)


def test_baccarat_difference_limit_at_the_limit_and_one_past() -> None:
    effective = _rules(BACC, difference_max_minor=50_000)
    model = new_round(effective, round_in_shoe=1)
    model.place_bet(Bet("b1", "p1", "table", "banker", 50_000, "traditional"))  # at the limit alone
    model.place_bet(Bet("p1", "p1", "table", "player", 100_000))  # Player exceeds Banker by exactly 500.00
    with pytest.raises(Refusal) as refused:
        model.place_bet(Bet("p2", "p1", "table", "player", 100))  # one minimum past it
    assert refused.value.code == RefusalCode.DIFFERENCE_ABOVE_MAXIMUM


FORBIDDEN = [
    (LIVE, dict(limits=(("tie", BetLimit(100, 200)),)), RefusalCode.TABLE_LIMIT_FORBIDDEN),
    (TOUR, dict(limits=(("pair", BetLimit(100, 200)),)), RefusalCode.TABLE_LIMIT_FORBIDDEN),
    (SPIEL, dict(limits=(("main", BetLimit(300, 1_000)),)), RefusalCode.TABLE_LIMIT_FORBIDDEN),  # 1,000 % 300
    (SPIEL, dict(limits=(("main", BetLimit(300, 999_950)),), stake_divisible_by_min=True),
     RefusalCode.TABLE_LIMIT_FORBIDDEN),
    (LIVE, dict(spots_count=8), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (LIVE, dict(spots_count=0), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (LIVE, dict(stakes_per_box_max=2), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (LIVE, dict(boxes_per_player_max=2), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (SPIEL, dict(stakes_per_box_max=5), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (SPIEL, dict(boxes_per_player_max=3), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (TOUR, dict(spots_count=3, boxes_per_player_max=4), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (LIVE, dict(difference_max_minor=1_000), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (BACC, dict(spots_count=3), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (BACC, dict(stake_divisible_by_min=True), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (BACC, dict(difference_max_minor=50), RefusalCode.TABLE_SETTING_FORBIDDEN),  # below the Player minimum
    (BACC, dict(difference_max_minor=5_000, limits=(("player", BetLimit(100, 6_000)),)),
     RefusalCode.TABLE_SETTING_FORBIDDEN),
    (BACC, dict(limits=(("dragon", BetLimit(100, 200)),)), RefusalCode.TABLE_LIMIT_FORBIDDEN),
    (TP, dict(stakes_per_box_max=1), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (TP, dict(difference_max_minor=1_000), RefusalCode.TABLE_SETTING_FORBIDDEN),
    (TP, dict(limits=(("player", BetLimit(100, 200)),)), RefusalCode.TABLE_LIMIT_FORBIDDEN),
]


@pytest.mark.parametrize(("rules", "settings", "code"), FORBIDDEN, ids=[f"{r.id}:{sorted(s)}" for r, s, _ in FORBIDDEN])
def test_forbidden_configurations_are_refused(rules: RuleSet, settings: dict[str, object], code: RefusalCode) -> None:
    with pytest.raises(Refusal) as refused:
        check_settings(rules, TableSettings(**settings), "T9")  # type: ignore[arg-type]
    assert refused.value.code == code
    assert "T9" in refused.value.message and rules.id in refused.value.message


def test_settings_round_trip_and_hash() -> None:
    settings = TableSettings(limits=(("main", BetLimit(200, 100_000)),), spots_count=5)
    assert TableSettings.from_dict(settings.as_dict()) == settings
    assert settings_hash(settings) != settings_hash(TableSettings(spots_count=5))
    assert effective_rules(LIVE, TableSettings()) is LIVE
    assert effective_rules(LIVE, settings).content_hash() != LIVE.content_hash()


def test_fewer_seats_than_boxes_per_player_clamps_the_default() -> None:
    effective = _rules(TOUR, spots_count=3)
    assert effective.boxes_per_player_max == 3

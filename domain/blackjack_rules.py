"""Blackjack rule sets as data: paytable, table limits and every spec Decision.

Read with ../shared/spec/rules.md and the seeds 000 (live-8d), 002
(spielbank) and 004 (casino-tour). Every rule difference between the three
tables is a named field below; the round model (domain/blackjack_round.py)
reads only these fields, never a hidden constant.

Bet types (`Bet.bet_type`) and their limit keys:
- `main` on `seat:N` / `box:N`: limit key `main`.
- `main` on `behind:N` (live-8d bet behind): limit key `behind`.
- `pair` on `seat:N` or `behind:N` (live-8d Pair side bet): limit key `pair`.
Derived settlement lines: `<bet_id>:insurance` (bet_type `insurance`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from domain.cards import Card
from domain.errorpolicy import ErrorPolicy, policy
from domain.money import Odds
from domain.ruleset import RuleSet, limits

SPOTS_MAX = 7  # seats / boxes at every blackjack table we settle
CARDS_PER_HAND_MAX = 12  # 21 needs at most 11 cards (four aces, four 2s, three 3s)
BETS_PER_ROUND_MAX = 500
BLACKJACK_TOTAL = 21
DEALER_STANDS_ON = 17
SEAT_LOST_WAIT_ROUNDS_MAX = 100
TIMEOUT_HIT_BELOW = 12  # live-8d no-action rule: hit while the total is 11 or less

DEALER_BJ_TAKES = ("all", "original_only")
TIMEOUT_POLICIES = ("hit_to_12", "stand")
DOUBLE_ON = ("any_two", "hard_9_10_11")
SURRENDER = ("none", "early_no_ace_ten", "before_third_card")
INSURANCE_AMOUNT = ("half_main", "half_min_to_half_stake")
SPOT_KINDS = ("seat", "box")
BOX_HOLDER_RULES = ("only_staker", "own_seat_then_next_lower")


@dataclass(frozen=True)
class BlackjackRules(RuleSet):
    # --- paytable (X:1 returns stake + X * stake)
    odds_blackjack: Odds
    odds_win: Odds
    odds_insurance: Odds
    odds_pair: Odds
    odds_even_money: Odds
    # --- table layout
    spot_kind: str  # "seat" (live-8d) | "box"
    spots_count: int
    stakes_per_box_max: int  # players' main stakes on one seat/box (spielbank 4)
    boxes_per_player_max: int  # seats/boxes one player may bet (live-8d 1, spielbank 2)
    box_holder_rule: str  # who decides for a box with several stakes (BOX_HOLDER_RULES)
    stake_divisible_by_min: bool  # spielbank: every stake a multiple of the table minimum
    max_applies_to_box_total: bool  # spielbank: the box maximum caps all stakes on the box together
    doubled_stake_may_exceed_max: bool  # spielbank: yes; seeds 000/004 silent -> yes (the double is part of the bet)
    split_hand_counts_as_box_for_max: bool  # spielbank: each split hand is a new box for the maximum
    pair_side_bet: bool  # live-8d Pair side bet 11:1
    pair_requires_main: bool  # Decision (seed 000): the Pair bet only after that player's main bet on the spot
    bet_behind: bool  # live-8d
    behind_bets_per_seat_max: int
    bet_behind_insurance: bool  # Decision (spec): bet-behind players are not offered insurance
    box_followers_insurance: bool  # spielbank other players on a box insure their own stake (follow kind "insurance"); v1: no
    follow_window_seconds: int  # documented only: the ledger keeps time; offers close at the next card/decision
    # --- dealer
    dealer_stands_soft_17: bool
    dealer_bj_takes: str  # Decision (no hole card): "all" | "original_only"
    dealer_draws_only_if_needed: bool  # no standing hand -> second card only if a blackjack/insurance needs it
    # --- player decisions
    timeout_policy: str  # "hit_to_12" (live-8d) | "stand" (spec Decision where the seed is silent)
    auto_deal_to_min_total: int  # spielbank: the dealer deals until the box has at least 12 (0 = off)
    auto_deal_split_aces: bool  # Decision (spielbank): auto-deal to 12 on split hands, except split aces
    double_on: str  # "any_two" | "hard_9_10_11" (spielbank: A-8 and A-A cannot double)
    double_after_split: bool
    double_on_split_aces: bool
    split_ten_values_any: bool  # Decision: any two 10-value cards may be split (10-K)
    hands_per_box_max: int  # live-8d 2, spielbank 3, casino-tour: no rule limit (a safety bound)
    resplit_aces: bool
    split_aces_one_card: bool
    surrender: str  # "none" | "early_no_ace_ten" (live-8d) | "before_third_card" (casino-tour)
    insurance_amount: str  # "half_main" (rounded down on an odd stake) | "half_min_to_half_stake"
    even_money: bool  # casino-tour: player blackjack vs dealer ace may take 1:1 at once
    # --- seats that span rounds (domain/seating.py; kept by the ledger's Table aggregate)
    seats_span_rounds: bool = False  # live-8d v2: a seat stays its player's from round to round
    seat_lost_after_no_action: bool = False  # live-8d v2 (seed 000): no action in a round loses the seat afterwards
    seat_lost_wait_rounds: int = 0  # Decision: rounds after the loss in which its player may not take that seat again
    # spielbank v2: within a round a seat number (`seat_no`, read by the box-holder rule) belongs to one
    # player and a player gives one seat number; v1 feeds give two players the same seat (tests/store/golden)
    seat_no_per_player: bool = False

    ADDED_FIELDS: ClassVar[dict[str, Any]] = {
        "seats_span_rounds": False, "seat_lost_after_no_action": False, "seat_lost_wait_rounds": 0,
        "seat_no_per_player": False,
    }

    def __post_init__(self) -> None:
        from domain.errors import require

        require(self.game == "blackjack", f"{self.id}: game must be blackjack")
        require(self.dealer_bj_takes in DEALER_BJ_TAKES, f"{self.id}: dealer_bj_takes")
        require(self.timeout_policy in TIMEOUT_POLICIES, f"{self.id}: timeout_policy")
        require(self.double_on in DOUBLE_ON, f"{self.id}: double_on")
        require(self.surrender in SURRENDER, f"{self.id}: surrender")
        require(self.insurance_amount in INSURANCE_AMOUNT, f"{self.id}: insurance_amount")
        require(self.spot_kind in SPOT_KINDS, f"{self.id}: spot_kind")
        require(self.box_holder_rule in BOX_HOLDER_RULES, f"{self.id}: box_holder_rule")
        require(1 <= self.spots_count <= SPOTS_MAX, f"{self.id}: spots_count")
        require(1 <= self.stakes_per_box_max <= 8, f"{self.id}: stakes_per_box_max")
        require(1 <= self.boxes_per_player_max <= self.spots_count, f"{self.id}: boxes_per_player_max")
        require(1 <= self.hands_per_box_max <= 64, f"{self.id}: hands_per_box_max")
        require(0 <= self.auto_deal_to_min_total <= BLACKJACK_TOTAL, f"{self.id}: auto_deal_to_min_total")
        require(0 <= self.seat_lost_wait_rounds <= SEAT_LOST_WAIT_ROUNDS_MAX, f"{self.id}: seat_lost_wait_rounds")
        require(self.seats_span_rounds or not self.seat_lost_after_no_action,
                f"{self.id}: seat_lost_after_no_action needs seats_span_rounds")
        require(not self.seats_span_rounds or self.spot_kind == "seat",
                f"{self.id}: seats_span_rounds is for seat tables (live-8d); boxes are staked per round")

    @property
    def max_odds(self) -> Odds:
        return max((self.odds_blackjack, self.odds_win, self.odds_insurance, self.odds_pair,
                    self.odds_even_money), key=lambda o: o.ratio)


# Blackjack value of each rank, the ace as 1 (a dict lookup: hand_total is the engine's hottest call).
RANK_VALUE: dict[str, int] = {"A": 1, **{str(n): n for n in range(2, 10)}, "T": 10, "J": 10, "Q": 10, "K": 10}


def card_value(card: Card) -> int:
    """Blackjack value with the ace as 1."""
    return RANK_VALUE[card.rank]


def hand_total(cards: list[Card] | tuple[Card, ...]) -> tuple[int, bool]:
    """(best total, soft): one ace counts 11 when that does not bust the hand."""
    total, ace = 0, False
    for card in cards:
        rank = card.rank
        total += RANK_VALUE[rank]
        ace = ace or rank == "A"
    if ace and total + 10 <= BLACKJACK_TOTAL:
        return total + 10, True
    return total, False


_ODDS: dict[str, Any] = dict(
    odds_blackjack=Odds.parse("3:2"),
    odds_win=Odds.parse("1:1"),
    odds_insurance=Odds.parse("2:1"),
    odds_pair=Odds.parse("11:1"),
    odds_even_money=Odds.parse("1:1"),
)


def _land_casino_policy(source: str) -> ErrorPolicy:
    # Seeds 002/004: management decides. Decision: player-side causes complete the
    # hand by the timeout rule; everything else pauses for a supervisor; an
    # unresolved pause voids (refund everything).
    return policy(
        source,
        default="pause",
        player_connection_lost="complete",
        player_no_action="complete",
        unresolved_pause="void",
    )


LIVE_8D_V1 = BlackjackRules(
    id="blackjack/live-8d",
    version=1,
    game="blackjack",
    title="Live blackjack, 8 decks, 7 seats, bet behind",
    seed="000_71b67e44d0c360cd.txt",
    decks=8,
    limits=limits(main=(100, 500_000), pair=(100, 100_000), behind=(100, 500_000)),
    error_policy=policy(
        "seed 000 error handling 1-4",
        replace_shoe_on_void=True,
        default="void",
        player_connection_lost="complete",
        player_no_action="complete",
    ),
    **_ODDS,
    spot_kind="seat",
    spots_count=7,
    stakes_per_box_max=1,
    boxes_per_player_max=1,
    box_holder_rule="only_staker",
    stake_divisible_by_min=False,
    max_applies_to_box_total=False,
    doubled_stake_may_exceed_max=True,
    split_hand_counts_as_box_for_max=True,
    pair_side_bet=True,
    pair_requires_main=True,
    bet_behind=True,
    behind_bets_per_seat_max=50,
    bet_behind_insurance=False,
    box_followers_insurance=False,
    follow_window_seconds=5,
    dealer_stands_soft_17=True,
    dealer_bj_takes="all",
    dealer_draws_only_if_needed=True,
    timeout_policy="hit_to_12",
    auto_deal_to_min_total=0,
    auto_deal_split_aces=False,
    double_on="any_two",
    double_after_split=False,
    double_on_split_aces=False,
    split_ten_values_any=True,
    hands_per_box_max=2,
    resplit_aces=False,
    split_aces_one_card=True,
    surrender="early_no_ace_ten",
    insurance_amount="half_main",
    even_money=False,
)

# The land-casino box tables (seeds 002 and 004) are derived from live-8d, each naming
# only what it does otherwise; what both change alike is said once here.
_BOX_TABLE: dict[str, Any] = dict(
    decks=6,
    spot_kind="box",
    pair_side_bet=False,
    bet_behind=False,
    behind_bets_per_seat_max=0,
    follow_window_seconds=0,
    timeout_policy="stand",
)

SPIELBANK_V1 = replace(
    LIVE_8D_V1,
    **_BOX_TABLE,
    id="blackjack/spielbank",
    title="Spielbank blackjack, 6 decks, boxes with up to 4 stakes",
    seed="002_3bb2a855f0dc9850.txt",
    limits=limits(main=(500, 500_000)),
    error_policy=_land_casino_policy("seed 002 silent: management decides; service Decision"),
    stakes_per_box_max=4,
    boxes_per_player_max=2,
    box_holder_rule="own_seat_then_next_lower",
    stake_divisible_by_min=True,
    max_applies_to_box_total=True,
    auto_deal_to_min_total=12,
    double_on="hard_9_10_11",
    hands_per_box_max=3,
    surrender="none",
)

CASINO_TOUR_V1 = replace(
    LIVE_8D_V1,
    **_BOX_TABLE,
    id="blackjack/casino-tour",
    title="Casino-tour blackjack, 6 decks, 7 boxes",
    seed="004_df95aea763f5e2b3.txt",
    limits=limits(main=(100, 500_000)),
    error_policy=_land_casino_policy("seed 004: casino management decides; service Decision"),
    boxes_per_player_max=7,
    double_after_split=True,
    hands_per_box_max=64,  # Decision: no rule limit on resplits; 64 is only a safety bound
    resplit_aces=True,
    surrender="before_third_card",
    insurance_amount="half_min_to_half_stake",
    even_money=True,
)

# Version 2 of live-8d: seats span rounds (seed 000: "a player takes at most one seat";
# "a seated player who takes no action in a round loses the seat afterwards"). v1 stays
# as recorded: its feeds seat players round by round (tests/store/golden).
LIVE_8D_V2 = replace(
    LIVE_8D_V1, version=2, title="Live blackjack, 8 decks, 7 seats held across rounds, bet behind",
    seats_span_rounds=True, seat_lost_after_no_action=True,
    seat_lost_wait_rounds=1,  # Decision: the freed seat is offered to others for one full round
)

# Version 2 of spielbank: the other players on a box insure their own stake (seed 002), and
# the seat numbers the holder rule reads are one player's each.
SPIELBANK_V2 = replace(
    SPIELBANK_V1, version=2, title="Spielbank blackjack, 6 decks, boxes with up to 4 stakes, own insurance",
    box_followers_insurance=True, seat_no_per_player=True,
)

RULE_SETS = (LIVE_8D_V1, LIVE_8D_V2, SPIELBANK_V1, SPIELBANK_V2, CASINO_TOUR_V1)

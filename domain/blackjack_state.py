"""The blackjack round's state: hands, stakes and bets as the round model keeps them.

Shared by the round model (domain/blackjack_round.py) and the modules it calls
(bets, play, settle), which is why it sits apart: they import it, not the model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from domain.blackjack_rules import hand_total
from domain.cards import Card, CardCounter
from domain.model import Bet, FollowOffer

FINISHED = ("stood", "bust", "blackjack", "surrendered", "even_money")
EXTRA_REASONS = ("split", "double", "follow_split", "follow_double")


@dataclass(frozen=True, slots=True)
class Stake:
    bet_id: str
    player_id: str
    amount_minor: int
    reason: str  # main | split | double | follow_split | follow_double


@dataclass(slots=True)
class Hand:
    name: str
    spot: str
    cards: list[Card] = field(default_factory=list)
    stakes: list[Stake] = field(default_factory=list)
    from_split: bool = False
    split_aces: bool = False
    doubled: bool = False
    status: str = "playing"
    auto: bool = False  # the no-action rule plays this hand
    want_card: bool = False  # a hit or a double awaits its card
    acted: bool = False  # any play decision taken on this hand

    @property
    def total(self) -> int:
        return hand_total(self.cards)[0]

    @property
    def soft(self) -> bool:
        return hand_total(self.cards)[1]

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


@dataclass(slots=True)
class State:
    seen: CardCounter  # the round's cards against the shoe's copies (impossible_card)
    phase: str = "betting"  # betting | deal | insurance | play | dealer | complete
    bets: list[Bet] = field(default_factory=list)
    spots: list[str] = field(default_factory=list)  # played seats/boxes, table order
    holders: dict[str, str] = field(default_factory=dict)  # spot -> deciding bet_id
    hands: list[Hand] = field(default_factory=list)  # play order
    deal_plan: list[str] = field(default_factory=list)  # initial-deal targets
    deal_done: int = 0
    dealer: list[Card] = field(default_factory=list)
    dealer_mode: str = ""  # full | second_only | none (set when the players are done)
    first_two: dict[str, tuple[Card, ...]] = field(default_factory=dict)  # spot -> initial cards
    insurance: dict[str, int] = field(default_factory=dict)  # spot -> insurance stake taken
    insurance_answered: set[str] = field(default_factory=set)
    follower_insurance: dict[str, int] = field(default_factory=dict)  # follower bet_id -> own insurance (spielbank v2)
    offers: list[tuple[FollowOffer, str]] = field(default_factory=list)  # (offer, target hand)


def spot_number(spot: str) -> int:
    return int(spot.split(":")[1].split(".")[0])


def holder_bet(s: State, spot: str) -> Bet:
    bet_id = s.holders[spot]
    return next(b for b in s.bets if b.bet_id == bet_id)

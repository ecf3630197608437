"""Cards, shoes and the impossible-card check.

Canonical form: rank then suit, two characters, upper case: `AS`, `TD`, `9H`.
Accepted on input: `10D` for `TD`, lower case (`kh`), and surrounding blanks.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from domain.errors import refuse, require
from domain.refusals import RefusalCode

RANKS = "A23456789TJQK"
SUITS = "SHDC"
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
RANK_NAMES = {
    "A": "ace", "2": "two", "3": "three", "4": "four", "5": "five", "6": "six",
    "7": "seven", "8": "eight", "9": "nine", "T": "ten", "J": "jack",
    "Q": "queen", "K": "king",
}
CARDS_PER_DECK = 52
DECKS_MAX = 8


@dataclass(frozen=True, order=True, slots=True)
class Card:
    rank: str  # one of RANKS
    suit: str  # one of SUITS

    def __post_init__(self) -> None:
        require(self.rank in RANKS and len(self.rank) == 1, f"bad rank {self.rank!r}")
        require(self.suit in SUITS and len(self.suit) == 1, f"bad suit {self.suit!r}")

    def __str__(self) -> str:
        return self.rank + self.suit

    @property
    def name(self) -> str:
        return f"{RANK_NAMES[self.rank]} of {SUIT_NAMES[self.suit]}"

    @property
    def is_ten_value(self) -> bool:
        """10, J, Q, K: worth 10 in blackjack, 0 in baccarat."""
        return self.rank in "TJQK"


def _build_all() -> dict[str, Card]:
    return {r + s: Card(r, s) for r in RANKS for s in SUITS}


_ALL = _build_all()
ALL_CARDS: tuple[Card, ...] = tuple(_ALL.values())


def parse_card(text: str) -> Card:
    """Parse `AS`, `as`, `10D`, `TD`, ` kh ` into a Card; refuse anything else."""
    if not isinstance(text, str):
        raise refuse(RefusalCode.BAD_CARD, "not-text", text=text)
    t = text.strip().upper()
    if t.startswith("10"):
        t = "T" + t[2:]
    card = _ALL.get(t)
    if card is None:
        raise refuse(RefusalCode.BAD_CARD, text=text)
    return card


def shoe_composition(decks: int) -> Counter[Card]:
    """How many of each card a fresh shoe of `decks` standard decks holds."""
    require(1 <= decks <= DECKS_MAX, f"decks out of range: {decks}")
    return Counter({c: decks for c in ALL_CARDS})


class CardCounter:
    """Counts cards seen from one shoe and refuses a card the shoe cannot hold.

    A ninth ace of spades in 8 decks, or a repeated card in a single-deck
    Teen Patti round, is `impossible_card`.
    """

    __slots__ = ("decks", "seen")

    def __init__(self, decks: int, seen: Counter[Card] | None = None) -> None:
        require(1 <= decks <= DECKS_MAX, f"decks out of range: {decks}")
        self.decks = decks
        self.seen: Counter[Card] = Counter(seen or {})

    # `seen.get(card, 0)`, not `seen[card]`: a card not seen yet would call Counter.__missing__ (every card)
    def check(self, card: Card) -> None:
        if self.seen.get(card, 0) >= self.decks:
            raise refuse(
                RefusalCode.IMPOSSIBLE_CARD, card=card, card_name=card.name, decks=self.decks, seen=self.seen[card])

    def take(self, card: Card) -> None:
        self.check(card)
        self.seen[card] = self.seen.get(card, 0) + 1

    def add(self, card: Card) -> None:
        """Count a card `check` has just passed: a card dealt is checked once, not twice
        (a check is a Counter read and a comparison, for every card of every round)."""
        self.seen[card] = self.seen.get(card, 0) + 1

    @property
    def remaining(self) -> int:
        return self.decks * CARDS_PER_DECK - sum(self.seen.values())

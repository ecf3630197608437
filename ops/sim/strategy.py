"""How simulated blackjack players choose: a simplified basic strategy.

Simulator knowledge, not a rule of the game: the domain model says what is
legal, this says what a sensible player picks among the legal actions.
"""
from __future__ import annotations

from domain.blackjack_rules import card_value, hand_total
from domain.cards import Card
from domain.errors import require


def _up_value(card: Card) -> int:
    """Dealer up card as 2..11 (ace 11) for strategy tables."""
    return 11 if card.rank == "A" else card_value(card)


def _wanted(hand_cards: list[Card] | tuple[Card, ...], up: int, legal: tuple[str, ...]) -> list[str]:
    """Preferred actions, best first (a simplified basic strategy, 6-8 decks, S17)."""
    total, soft = hand_total(hand_cards)
    two = len(hand_cards) == 2
    if two and "split" in legal:
        a, b = hand_cards
        v = 11 if a.rank == "A" else card_value(a)
        split = (v in (11, 8) or (v in (2, 3, 7) and up <= 7) or (v == 6 and up <= 6)
                 or (v == 9 and up not in (7, 10, 11)) or (v == 4 and up in (5, 6)))
        if split:
            return ["split"]
    if two and not soft and "surrender" in legal and (total == 16 and up >= 9 or total == 15 and up == 10):
        return ["surrender", "hit"]
    if two:
        if not soft and (total == 11 and up <= 10 or total == 10 and up <= 9 or total == 9 and 3 <= up <= 6):
            return ["double", "hit"]
        if soft and (total in (17, 18) and 3 <= up <= 6 or total in (15, 16) and 4 <= up <= 6
                     or total in (13, 14) and up in (5, 6)):
            return ["double", "hit" if total < 18 else "stand"]
    if soft:
        if total >= 19 or total == 18 and up <= 8:
            return ["stand"]
        return ["hit"]
    if total >= 17 or total >= 13 and up <= 6 or total == 12 and 4 <= up <= 6:
        return ["stand"]
    return ["hit"]


def basic_strategy(hand_cards: list[Card] | tuple[Card, ...], dealer_up: Card,
                   legal_actions: tuple[str, ...] | list[str]) -> str:
    """A reasonable simplified basic strategy: one of `legal_actions` (never `auto`).

    Insurance and even money are declined (both lose in the long run).
    """
    legal = tuple(legal_actions)
    require(bool(legal), "basic_strategy needs at least one legal action")
    if "no_insurance" in legal:
        return "no_insurance"
    for action in _wanted(hand_cards, _up_value(dealer_up), legal) + ["hit", "stand"]:
        if action in legal:
            return action
    return next((a for a in legal if a != "auto"), legal[0])

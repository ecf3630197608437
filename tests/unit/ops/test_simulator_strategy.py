"""The simulated blackjack players' basic strategy (ops/sim/strategy.py): one legal action, the sensible one."""
from __future__ import annotations

import pytest

from domain.cards import parse_card
from ops.sim.strategy import basic_strategy


@pytest.mark.parametrize("cards,up,legal,action", [
    ("TS 6D", "TC", ("hit", "stand", "double", "surrender", "auto"), "surrender"),
    ("TS 6D", "6C", ("hit", "stand", "auto"), "stand"),
    ("6S 5D", "6C", ("hit", "stand", "double", "auto"), "double"),
    ("6S 5D", "6C", ("hit", "stand", "auto"), "hit"),
    ("8S 8D", "TC", ("hit", "stand", "split", "auto"), "split"),
    ("AS 7D", "9C", ("hit", "stand", "auto"), "hit"),
    ("TS 2D", "AC", ("insurance", "no_insurance", "auto"), "no_insurance"),
    ("TS 9D", "6C", ("auto",), "auto"),  # nothing else is legal: the only choice, never an illegal one
])
def test_basic_strategy(cards: str, up: str, legal: tuple[str, ...], action: str) -> None:
    assert basic_strategy([parse_card(c) for c in cards.split()], parse_card(up), legal) == action

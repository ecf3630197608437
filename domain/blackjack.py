"""Blackjack: rule sets and the round model (entry point).

- Rule sets and every spec Decision as fields: domain/blackjack_rules.py
- Bet checks and the spielbank box-holder rule: domain/blackjack_bets.py
- The round model (RoundModel contract): domain/blackjack_round.py, its state
  in domain/blackjack_state.py, decisions in domain/blackjack_play.py,
  settlement in domain/blackjack_settle.py
- Refusal codes: docs/refusals.md, section "Blackjack".
"""
from __future__ import annotations

from domain.blackjack_round import BlackjackRound
from domain.blackjack_rules import (
    CASINO_TOUR_V1,
    LIVE_8D_V1,
    RULE_SETS,
    SPIELBANK_V1,
    BlackjackRules,
    card_value,
    hand_total,
)
from domain.errors import InvariantBroken
from domain.ruleset import RuleSet

__all__ = [
    "BlackjackRules", "BlackjackRound", "RULE_SETS", "LIVE_8D_V1", "SPIELBANK_V1", "CASINO_TOUR_V1",
    "new_round", "hand_total", "card_value",
]


def new_round(rules: RuleSet, *, round_in_shoe: int) -> BlackjackRound:
    if not isinstance(rules, BlackjackRules):  # not require(): this check also narrows the type
        raise InvariantBroken(f"{rules.id} is not a blackjack rule set")
    return BlackjackRound(rules, round_in_shoe)

"""The lines inside events, as read (ledger/records.py re-exports them)."""
from __future__ import annotations

from typing import NamedTuple, TypeAlias

from domain.model import BetResult
from domain.money import Leg

# The values the ledger writes as lines are the domain's own (`Leg.as_dict`,
# `BetResult.as_dict`, the moves of `moves_to_dicts`), read back as the same types.
Posting = Leg  # one leg: `amount_minor > 0` increases `account` (`player:`, `round:`, `house:`)
SettlementLine = BetResult  # one bet's result in a settlement


class Refund(NamedTuple):
    """A stake handed back when a round is voided (written by `Round._void` as a dict)."""

    bet_id: str
    player_id: str
    amount_minor: int


Postings: TypeAlias = tuple[Posting, ...]

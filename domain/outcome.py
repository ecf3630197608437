"""What happened in a complete round, as the rules see it: the typed, read-only
answer of every game model's `outcome()` (domain/model.py), beside the money of
`settle()`.

Pure data, no I/O. `ledger settle --json` prints `RoundOutcome.as_dict()`
(docs/rounds.md "What happened"); fields that do not apply to a game or a hand
are None and left out of the dict.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class StakeLine(NamedTuple):
    """One stake on a blackjack hand: the original bet, a split, a double, a follow."""

    bet_id: str
    player_id: str
    amount_minor: int
    reason: str  # main | split | double | follow_split | follow_double


class HandOutcome(NamedTuple):
    """One hand as it ended: blackjack one per hand after splits (`seat:3.2`), the
    dealer's; baccarat `player` and `banker`; Teen Patti `A` and `B`."""

    hand: str
    cards: tuple[str, ...]  # canonical, in dealing order
    total: int | None = None  # blackjack total, baccarat points; None in Teen Patti
    soft: bool | None = None  # blackjack: an ace counts 11 in the total
    category: str | None = None  # Teen Patti rank (trail ... high_card); blackjack blackjack|bust; baccarat natural
    name: str | None = None  # readable: "Pair of nines, kicker K", "soft 18", "Natural 9"
    status: str | None = None  # blackjack: stood | bust | blackjack | surrendered | even_money
    result: str | None = None  # against the other side: win | lose | push | tie | surrender | even_money
    doubled: bool | None = None  # blackjack
    from_split: bool | None = None  # blackjack
    auto: bool | None = None  # blackjack: the no-action rule played it (timeout, disconnect)
    stakes: tuple[StakeLine, ...] | None = None  # blackjack: every stake on this hand

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in zip(self._fields, self) if v is not None}
        out["cards"] = list(self.cards)
        if self.stakes is not None:
            out["stakes"] = [s._asdict() for s in self.stakes]
        return out


class RoundOutcome(NamedTuple):
    """The whole round: every hand, the dealer's (blackjack), the winner (baccarat:
    player | banker | tie; Teen Patti: A | B | tie; blackjack has none: each hand has
    its own `result`), the categories the side bets read, and notes on how the deal ended."""

    game: str
    hands: tuple[HandOutcome, ...]
    summary: str  # one line: "Banker wins 7–5", "Player A wins: Trail of aces beats ..."
    dealer: HandOutcome | None = None
    winner: str | None = None
    categories: tuple[tuple[str, str], ...] = ()  # (what, category): ("six_card_bonus", "flush"), ...
    notes: tuple[str, ...] = ()  # e.g. why the dealer drew no more cards

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"game": self.game, "summary": self.summary}
        if self.winner is not None:
            out["winner"] = self.winner
        if self.dealer is not None:
            out["dealer"] = self.dealer.as_dict()
        out["hands"] = [h.as_dict() for h in self.hands]
        if self.categories:
            out["categories"] = dict(self.categories)
        if self.notes:
            out["notes"] = list(self.notes)
        return out

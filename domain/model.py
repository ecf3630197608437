"""The contract every game's pure round model keeps.

The ledger drives a round through this interface only; it never looks
inside a game. Each game module (`domain/blackjack.py`, `domain/baccarat.py`,
`domain/teenpatti.py`) exposes:

    new_round(rules, *, round_in_shoe: int) -> RoundModel

Rules of the contract:
- Every mutating method validates first and mutates only after every check
  passed: a `Refusal` leaves the model exactly as it was.
- No I/O, no clock, no randomness. Same facts in the same order -> same state.
- A model is rebuilt by replaying the same calls in the same order (that is
  how the ledger's aggregate and `ledger replay` rebuild it).
- Broken invariants raise `InvariantBroken` via `require()`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from domain.cards import Card
from domain.outcome import RoundOutcome
from domain.ruleset import RuleSet

DECISION_SOURCES = ("player", "timeout", "system", "dealer")


class Bet(NamedTuple):  # tuples: made per command and event, several times cheaper than frozen dataclasses
    """A bet as placed. `spot` says where it lies: `seat:3`, `box:2`, `behind:3`,
    `table` (baccarat / Teen Patti). `bet_type` names a paytable line."""

    bet_id: str
    player_id: str
    spot: str
    bet_type: str
    stake_minor: int
    mode: str | None = None  # baccarat: "traditional" | "no_commission"
    seat_no: int | None = None  # spielbank: the player's own seat (box-holder rule)


class StakeMove(NamedTuple):
    """Money a player adds to the round after the bet was placed (double, split,
    insurance, a follow). `bet_id` is the settlement line it belongs to: the
    original bet, or a derived line such as `<bet_id>:insurance`."""

    bet_id: str
    player_id: str
    amount_minor: int
    reason: str  # "double" | "split" | "insurance" | "follow_split" | "follow_double" | ...


@dataclass(frozen=True, slots=True)
class FollowOffer:
    """A choice a non-deciding player has (bet behind / other players on a box):
    follow the seat's split or double with `amount_minor`, or decline."""

    bet_id: str
    player_id: str
    kind: str  # "split" | "double" | "insurance" (spielbank v2: a player on a box insures their own stake)
    amount_minor: int


class BetResult(NamedTuple):
    """How one settlement line settled. `staked_minor` is everything put into the
    line; `returned_minor` is what goes back to the player (0 when lost);
    the remainder is the exact fraction of a minor unit cut by rounding down."""

    bet_id: str
    player_id: str
    bet_type: str
    outcome: str  # "win" | "lose" | "push" | "mixed" | "surrender" | ...
    staked_minor: int
    returned_minor: int
    remainder_num: int
    remainder_den: int
    explanation: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "bet_id": self.bet_id,
            "player_id": self.player_id,
            "bet_type": self.bet_type,
            "outcome": self.outcome,
            "staked_minor": self.staked_minor,
            "returned_minor": self.returned_minor,
            "remainder_num": self.remainder_num,
            "remainder_den": self.remainder_den,
            "explanation": self.explanation,
        }


class RoundModel(Protocol):
    rules: RuleSet

    def place_bet(self, bet: Bet) -> None:
        """Refuse a bet the rules or limits forbid (codes: bet_not_offered, stake_*...)."""

    def close_betting(self) -> None:
        """No more bets; the deal may start."""

    def next_card_target(self) -> str | None:
        """Where the next card must go (`dealer`, a hand name, `player`, `banker`,
        `A`, `B`, `burn`), or None when no card is expected now (a decision is
        awaited, or the round is complete)."""

    def deal(self, card: Card, target: str) -> None:
        """Record a card; refuse a card to the wrong target (`wrong_target`), a card
        when none is expected (`card_not_expected`), an impossible card."""

    def legal_decisions(self) -> dict[str, tuple[str, ...]]:
        """For each hand awaiting a decision now, the legal actions."""

    def decide(self, hand: str, action: str, source: str, amount_minor: int | None = None) -> list[StakeMove]:
        """Apply a decision (`hit`, `stand`, `double`, `split`, `insurance`,
        `no_insurance`, `even_money`, `surrender`, `auto`...). `auto` applies the
        rule set's no-action/timeout rule to that hand. Returns the stakes it adds."""

    def deciding_player(self, hand: str) -> str:
        """The player whose decisions count for `hand` (seat player, box holder)."""

    def pending_follows(self) -> list[FollowOffer]:
        """Follow choices open now."""

    def follow(self, bet_id: str, kind: str, accept: bool) -> list[StakeMove]:
        """Accept or decline a follow offer."""

    def is_complete(self) -> bool:
        """True when every card and decision the rules need has been recorded."""

    def settle(self) -> list[BetResult]:
        """Only when complete: one result per settlement line (bet or derived line)."""

    def outcome(self) -> RoundOutcome:
        """Only when complete: what happened (every hand's cards and total, the dealer's or
        each side's, the winner, the categories side bets read), read-only."""

    def view(self) -> dict[str, Any]:
        """Plain snapshot (hands, cards, totals, phase) for replays and displays."""

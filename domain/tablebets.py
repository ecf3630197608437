"""What the table games whose bets all lie on one spot (baccarat, Teen Patti)
share: the common bet checks (betting open, bets-per-round limit, unique bet
id, the spot, a bet type this rule-set version offers) and the fact that
players make no decisions and have no follow offers."""
from __future__ import annotations

from collections.abc import Sequence

from domain.errors import Refusal
from domain.model import Bet, FollowOffer, StakeMove
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet


def check_table_bet(
    rules: RuleSet, phase: str, placed: Sequence[Bet], bet: Bet, *,
    spot: str, bet_types: Sequence[str], game_name: str, bets_per_round_max: int,
) -> None:
    if phase != "betting":
        raise Refusal(RefusalCode.BETTING_CLOSED, f"bet {bet.bet_id}: betting is closed for this round")
    if len(placed) >= bets_per_round_max:
        raise Refusal(RefusalCode.TOO_MANY_BETS, f"bet {bet.bet_id}: a round takes at most {bets_per_round_max} bets")
    if any(b.bet_id == bet.bet_id for b in placed):
        raise Refusal(RefusalCode.DUPLICATE_BET_ID, f"bet id {bet.bet_id} was already placed in this round")
    if bet.spot != spot:
        raise Refusal(RefusalCode.BAD_SPOT, f"bet {bet.bet_id}: {game_name} bets lie on spot {spot!r}, not {bet.spot!r}")
    if bet.bet_type not in bet_types:
        raise Refusal(RefusalCode.BET_NOT_OFFERED, f"bet {bet.bet_id}: bet type {bet.bet_type!r} is not offered "
                      f"under {rules.id} v{rules.version}; offered: {', '.join(bet_types)}")


class NoPlayerChoices:
    """RoundModel methods for a game where players only bet: every decision and
    follow is refused. The model sets `GAME_TITLE` for the messages."""

    GAME_TITLE = "this game"

    def legal_decisions(self) -> dict[str, tuple[str, ...]]:
        return {}

    def decide(self, hand: str, action: str, source: str, amount_minor: int | None = None) -> list[StakeMove]:
        raise Refusal(RefusalCode.NO_DECISIONS, f"{self.GAME_TITLE} has no player decisions; {action!r} on {hand!r} is refused")

    def deciding_player(self, hand: str) -> str:
        raise Refusal(RefusalCode.NO_DECISIONS, f"{self.GAME_TITLE} has no player decisions; nobody decides {hand!r}")

    def pending_follows(self) -> list[FollowOffer]:
        return []

    def follow(self, bet_id: str, kind: str, accept: bool) -> list[StakeMove]:
        raise Refusal(RefusalCode.NO_FOLLOW_OFFERS, f"{self.GAME_TITLE} has no follow offers; bet {bet_id} cannot follow {kind!r}")

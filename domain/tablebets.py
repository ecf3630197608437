"""What the table games whose bets all lie on one spot (baccarat, Teen Patti)
share: the common bet checks (betting open, bets-per-round limit, unique bet
id, the spot, a bet type this rule-set version offers) and the fact that
players make no decisions and have no follow offers."""
from __future__ import annotations

from collections.abc import Sequence

from domain.errors import refuse
from domain.model import Bet, FollowOffer, StakeMove
from domain.refusals import RefusalCode
from domain.ruleset import RuleSet


def check_table_bet(
    rules: RuleSet, phase: str, placed: Sequence[Bet], bet: Bet, *,
    spot: str, bet_types: Sequence[str], game_name: str, bets_per_round_max: int,
) -> None:
    if phase != "betting":
        raise refuse(RefusalCode.BETTING_CLOSED, bet_id=bet.bet_id)
    if len(placed) >= bets_per_round_max:
        raise refuse(RefusalCode.TOO_MANY_BETS, bet_id=bet.bet_id, bets_max=bets_per_round_max)
    for b in placed:  # a loop, not any() of a generator: a frame made per bet placed
        if b.bet_id == bet.bet_id:
            raise refuse(RefusalCode.DUPLICATE_BET_ID, "table-game", bet_id=bet.bet_id)
    if bet.spot != spot:
        raise refuse(RefusalCode.BAD_SPOT, bet_id=bet.bet_id, game=game_name, table_spot=spot, spot=bet.spot)
    if bet.bet_type not in bet_types:
        raise refuse(
            RefusalCode.BET_NOT_OFFERED, "offered", bet_id=bet.bet_id, bet_type=bet.bet_type, ruleset_id=rules.id,
            version=rules.version, offered=', '.join(bet_types))


class NoPlayerChoices:
    """RoundModel methods for a game where players only bet: every decision and
    follow is refused. The model sets `GAME_TITLE` for the messages."""

    GAME_TITLE = "this game"

    def legal_decisions(self) -> dict[str, tuple[str, ...]]:
        return {}

    def decide(self, hand: str, action: str, source: str, amount_minor: int | None = None) -> list[StakeMove]:
        raise refuse(RefusalCode.NO_DECISIONS, game=self.GAME_TITLE, action=action, hand=hand)

    def deciding_player(self, hand: str) -> str:
        raise refuse(RefusalCode.NO_DECISIONS, "decider", game=self.GAME_TITLE, hand=hand)

    def pending_follows(self) -> list[FollowOffer]:
        return []

    def follow(self, bet_id: str, kind: str, accept: bool) -> list[StakeMove]:
        raise refuse(RefusalCode.NO_FOLLOW_OFFERS, game=self.GAME_TITLE, bet_id=bet_id, kind=kind)

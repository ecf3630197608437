"""What simulated players and dealers choose, per game: bets, decisions,
follows, and the shapes of deliberate mistakes.

The table (ops/sim/table.py) asks a `GameDriver`; the domain model remains
the judge of what is legal (a bet it refuses is simply not sent, unless a
fault wants it sent).
"""
from __future__ import annotations

import random

from domain import baccarat, teenpatti
from domain.cards import Card
from domain.model import Bet, FollowOffer
from domain.ruleset import BetLimit, RuleSet
from ops.sim.core import RoundCtx

STAKE_MULTIPLES = (1, 1, 2, 2, 3, 5, 5, 10, 10, 20, 25, 50, 100)
ODD_CENTS_PERCENT = 15
ODD_CENTS_MINOR = (5, 25, 55, 75)
UNKNOWN_BET_TYPES = ("dragon_bonus", "lucky_seven", "super_six", "golden_pair")
# How often a simulated player adds a side bet, in percent: the simulator's own bet mix. The
# side bets themselves are the game's (its BET_TYPES); one missing here (a new side bet) is
# played at SIDE_PERCENT_DEFAULT, so adding a side bet to a game needs no change here.
SIDE_PERCENT = {
    "player_pair": 12, "banker_pair": 12, "either_pair": 6, "perfect_pair": 5, "player_natural": 4,
    "banker_natural": 4, "player_bonus": 5, "banker_bonus": 5, "lucky_six": 8, "lucky_six_2": 3, "lucky_six_3": 3,
    "pair_plus_a": 20, "pair_plus_b": 20, "six_card_bonus": 15,
}
SIDE_PERCENT_DEFAULT = 5
BACCARAT_CUT_FROM_END = 16  # cut card 16 cards before the end of the shoe
BLACKJACK_PENETRATION_DEN = 4  # cut card with a quarter of the shoe left


def side_bets(bet_types: tuple[str, ...], *not_sides: str) -> tuple[tuple[str, int], ...]:
    """(bet type, chance in percent) of each of a game's bet types but `not_sides`, in the game's order."""
    return tuple((t, SIDE_PERCENT.get(t, SIDE_PERCENT_DEFAULT)) for t in bet_types if t not in not_sides)


def stake(rng: random.Random, limit: BetLimit, step_minor: int | None = None) -> int:
    """A chip-like stake: a multiple of the minimum (or `step_minor`), within the limit."""
    step = step_minor or limit.min_minor
    amount = step * rng.choice(STAKE_MULTIPLES)
    if amount > limit.max_minor:
        amount = limit.max_minor - limit.max_minor % step
    if step_minor is None and rng.randrange(100) < ODD_CENTS_PERCENT:
        amount += rng.choice(ODD_CENTS_MINOR)  # 12.25 on 3:2 or 0.95:1 leaves a remainder to round down
    return min(max(amount, limit.min_minor), limit.max_minor)


class GameDriver:
    """Defaults for table games without decisions (baccarat, Teen Patti)."""

    regulars = 10
    has_decisions = False
    fresh_shoe_each_round = False
    main_types: tuple[str, ...] = ()
    side_types: tuple[tuple[str, int], ...] = ()  # (bet type, chance in percent)
    tie_type = "tie"
    tie_percent = 8

    def cut_from_end_cards(self, rules: RuleSet) -> int:
        return BACCARAT_CUT_FROM_END

    def players_per_round(self, regulars: int) -> tuple[int, int]:
        return (min(2, regulars), min(7, regulars))

    def supports_fault(self, kind: str, rules: RuleSet) -> bool:
        if kind == "timeout":
            return False  # no player decisions
        if kind == "pause_resume":
            return any(rules.error_policy.action_for(c) == "pause" for c in ("system_error", "other"))
        return True

    def bets(self, ctx: RoundCtx) -> list[Bet]:
        rng = ctx.rng
        out: list[Bet] = []
        offered = {t for t, _ in ctx.rules.limits}
        for player in ctx.players:
            main = rng.choice(self.main_types)
            out.append(self._bet(ctx, len(out), player, main))
            if rng.randrange(100) < self.tie_percent:
                out.append(self._bet(ctx, len(out), player, self.tie_type))
            for side, percent in self.side_types:
                # a side bet of a later rule-set version is not offered under this one: not even drawn for
                if side in offered and rng.randrange(100) < percent:
                    out.append(self._bet(ctx, len(out), player, side))
        return out

    def _bet(self, ctx: RoundCtx, n: int, player: str, bet_type: str, spot: str = "table") -> Bet:
        amount = stake(ctx.rng, ctx.rules.limit_for(bet_type))
        return Bet(bet_id(ctx, n), player, spot, bet_type, amount, self.mode(ctx.rng, bet_type))

    def mode(self, rng: random.Random, bet_type: str) -> str | None:
        return None

    def bad_bet(self, ctx: RoundCtx) -> Bet:
        """A bet the ledger must refuse: below the minimum, or of a type nobody offers."""
        rng = ctx.rng
        player = rng.choice(ctx.players) if ctx.players else "p0001"
        bet_type = self.main_types[0]
        spot = self.bad_bet_spot(ctx)
        minimum = ctx.rules.limit_for(bet_type).min_minor
        n = 900 + rng.randrange(99)
        if minimum > 1 and rng.randrange(2) == 0:
            return Bet(bet_id(ctx, n), player, spot, bet_type, rng.randint(1, minimum - 1), self.mode(rng, bet_type))
        return Bet(bet_id(ctx, n), player, spot, rng.choice(UNKNOWN_BET_TYPES), minimum)

    def bad_bet_spot(self, ctx: RoundCtx) -> str:
        return "table"

    def bad_card(self, ctx: RoundCtx, target: str) -> tuple[Card, str]:
        """The dealer's mistake: the next card to another hand."""
        others = [t for t in self.targets(ctx) if t != target]
        return ctx.shoe.peek(), ctx.rng.choice(others)

    def any_target(self, ctx: RoundCtx) -> str:
        return ctx.rng.choice(self.targets(ctx))

    def targets(self, ctx: RoundCtx) -> list[str]:
        return ["player", "banker"]

    def hand_owner(self, ctx: RoundCtx, hand: str) -> str | None:
        return None

    def decide(self, ctx: RoundCtx, hand: str, actions: tuple[str, ...]) -> tuple[str, int | None]:
        return actions[0], None

    def follow_choice(self, ctx: RoundCtx, offer: FollowOffer) -> bool | None:
        roll = ctx.rng.randrange(100)
        if roll < 45:
            return True
        if roll < 70:
            return False
        return None  # silence: declined when the next card or decision comes


def bet_id(ctx: RoundCtx, n: int) -> str:
    return f"{ctx.writer.table_id}-{ctx.round_no}-b{n + 1}"


class BaccaratDriver(GameDriver):
    main_types = ("player", "banker", "banker", "player", "banker")
    tie_percent = 10
    side_types = side_bets(baccarat.BET_TYPES, *baccarat.MAIN_BETS, GameDriver.tie_type)

    def mode(self, rng: random.Random, bet_type: str) -> str | None:
        if bet_type != "banker":
            return None
        return "no_commission" if rng.randrange(100) < 40 else "traditional"


class TeenPattiDriver(GameDriver):
    regulars = 12
    fresh_shoe_each_round = True  # one deck, shuffled after every round
    main_types = ("player_a", "player_b")
    side_types = side_bets(teenpatti.BET_TYPES, *main_types, GameDriver.tie_type)

    def targets(self, ctx: RoundCtx) -> list[str]:
        return ["A", "B"]

    def bad_card(self, ctx: RoundCtx, target: str) -> tuple[Card, str]:
        """A single deck: a card already dealt this round is impossible; else a wrong hand."""
        dealt = ctx.shoe.cards[: ctx.shoe.pos]
        if dealt and ctx.rng.randrange(2) == 0:
            return ctx.rng.choice(dealt), target
        return super().bad_card(ctx, target)

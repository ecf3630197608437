"""Simulated blackjack players: seats, boxes with several stakes (spielbank),
bet behind and Pair side bets (live-8d), basic strategy with the odd human
deviation, insurance, even money and follow decisions."""
from __future__ import annotations

from typing import Any

from domain.blackjack_rules import BlackjackRules
from domain.cards import Card, parse_card
from domain.errors import InvariantBroken
from domain.model import Bet
from domain.ruleset import RuleSet
from ops.sim.core import RoundCtx
from ops.sim.games import BLACKJACK_PENETRATION_DEN, GameDriver, bet_id, stake
from ops.sim.strategy import basic_strategy

INSURANCE_PERCENT = 12  # players who take insurance against a dealer ace (it loses in the long run)
EVEN_MONEY_PERCENT = 50
DEVIATION_PERCENT = 3  # a human move off basic strategy
PAIR_PERCENT = 25
BEHIND_PERCENT = 60


class BlackjackDriver(GameDriver):
    regulars = 14
    has_decisions = True
    main_types = ("main",)

    def __init__(self, rules: RuleSet) -> None:
        if not isinstance(rules, BlackjackRules):  # not require(): this check also narrows the type
            raise InvariantBroken(f"{rules.id} is not a blackjack rule set")
        self.rules = rules

    def cut_from_end_cards(self, rules: RuleSet) -> int:
        return rules.decks * 52 // BLACKJACK_PENETRATION_DEN

    def players_per_round(self, regulars: int) -> tuple[int, int]:
        return (min(1, regulars), min(10, regulars))

    def supports_fault(self, kind: str, rules: RuleSet) -> bool:
        if kind == "timeout":
            return True
        return super().supports_fault(kind, rules)

    # ------------------------------------------------------------ bets

    def bets(self, ctx: RoundCtx) -> list[Bet]:
        rules, rng = self.rules, ctx.rng
        players = list(ctx.players)
        spots = list(range(1, rules.spots_count + 1))
        rng.shuffle(spots)
        main_limit = rules.limit_for("main")
        step = main_limit.min_minor if rules.stake_divisible_by_min else None
        out: list[Bet] = []
        seated: list[tuple[str, str]] = []  # (player, spot)
        n_seated = rng.randint(1, max(1, min(len(players), rules.spots_count)))
        for player, number in zip(players[:n_seated], spots):
            spot = f"{rules.spot_kind}:{number}"
            seat_no = number if rules.stakes_per_box_max > 1 else None
            out.append(Bet(bet_id(ctx, len(out)), player, spot, "main", stake(rng, main_limit, step), None, seat_no))
            seated.append((player, spot))
        others = players[n_seated:]
        if rules.stakes_per_box_max > 1:
            out += self._extra_box_stakes(ctx, seated, others, len(out))
        elif rules.boxes_per_player_max > 1:  # casino-tour: a player may play several boxes
            free = spots[n_seated:]
            for player, _spot in seated:
                if free and rng.randrange(100) < 20:
                    spot = f"{rules.spot_kind}:{free.pop()}"
                    out.append(Bet(bet_id(ctx, len(out)), player, spot, "main", stake(rng, main_limit), None, None))
        if rules.pair_side_bet:
            for player, spot in seated:
                if rng.randrange(100) < PAIR_PERCENT:
                    out.append(Bet(bet_id(ctx, len(out)), player, spot, "pair",
                                   stake(rng, rules.limit_for("pair")), None, None))
        if rules.bet_behind and seated:
            out += self._behind(ctx, seated, others, len(out))
        return out

    def _extra_box_stakes(self, ctx: RoundCtx, seated: list[tuple[str, str]], others: list[str],
                          n: int) -> list[Bet]:
        """Spielbank: other players stake on a played box (up to the per-box maximum)."""
        rules, rng = self.rules, ctx.rng
        limit = rules.limit_for("main")
        out: list[Bet] = []
        for player in others:
            if not seated or rng.randrange(100) >= 70:
                continue
            _holder, spot = rng.choice(seated)
            seat_no = rng.randint(1, rules.spots_count)
            out.append(Bet(bet_id(ctx, n + len(out)), player, spot, "main",
                           stake(rng, limit, limit.min_minor), None, seat_no))
        return out

    def _behind(self, ctx: RoundCtx, seated: list[tuple[str, str]], others: list[str], n: int) -> list[Bet]:
        rules, rng = self.rules, ctx.rng
        out: list[Bet] = []
        for player in others:
            if rng.randrange(100) >= BEHIND_PERCENT:
                continue
            for _holder, spot in rng.sample(seated, rng.randint(1, min(2, len(seated)))):
                behind = f"behind:{spot.split(':')[1]}"
                out.append(Bet(bet_id(ctx, n + len(out)), player, behind, "main",
                               stake(rng, rules.limit_for("behind")), None, None))
                if rng.randrange(100) < PAIR_PERCENT // 2:
                    out.append(Bet(bet_id(ctx, n + len(out)), player, behind, "pair",
                                   stake(rng, rules.limit_for("pair")), None, None))
        return out

    def bad_bet_spot(self, ctx: RoundCtx) -> str:
        spots = sorted({b["spot"] for b in ctx.model.view()["bets"]}) or [f"{self.rules.spot_kind}:1"]
        spot: str = ctx.rng.choice(spots)
        return spot

    # ------------------------------------------------------------ cards

    def targets(self, ctx: RoundCtx) -> list[str]:
        return ["dealer"] + [h["name"] for h in ctx.model.view()["hands"]]

    # ------------------------------------------------------------ decisions

    def hand_owner(self, ctx: RoundCtx, hand: str) -> str | None:
        view = ctx.model.view()
        spot = hand.split(".")[0]
        holder = view["holders"].get(spot)
        return next((b["player_id"] for b in view["bets"] if b["bet_id"] == holder), None)

    def decide(self, ctx: RoundCtx, hand: str, actions: tuple[str, ...]) -> tuple[str, int | None]:
        rng = ctx.rng
        if "no_insurance" in actions:
            return self._insurance(ctx, hand, actions)
        choices = tuple(a for a in actions if a != "auto")
        if rng.randrange(100) < DEVIATION_PERCENT:
            return rng.choice(choices), None
        view = ctx.model.view()
        cards = _cards(next(h for h in view["hands"] if h["name"] == hand)["cards"])
        up = _cards(view["dealer"]["cards"])[0]
        return basic_strategy(cards, up, choices), None

    def _insurance(self, ctx: RoundCtx, hand: str, actions: tuple[str, ...]) -> tuple[str, int | None]:
        rng = ctx.rng
        if "even_money" in actions and rng.randrange(100) < EVEN_MONEY_PERCENT:
            return "even_money", None
        if rng.randrange(100) >= INSURANCE_PERCENT:
            return "no_insurance", None
        if self.rules.insurance_amount != "half_min_to_half_stake" or rng.randrange(2) == 0:
            return "insurance", None
        view = ctx.model.view()
        holder = view["holders"][hand]
        main = next(b["stake_minor"] for b in view["bets"] if b["bet_id"] == holder)
        low = -(-self.rules.limit_for("main").min_minor // 2)
        high = main // 2
        return "insurance", rng.randint(low, high) if low <= high else None


def _cards(texts: list[Any]) -> list[Card]:
    return [parse_card(t) for t in texts]

"""One simulated table: its shoe, its players, its rounds and their faults.

Each round is driven by the pure domain model, so every command the table
writes is legal unless a fault was injected on purpose. The game-specific
choices (which bets, which decisions) live in ops/sim/games.py and
ops/sim/blackjack.py; the round's context (`RoundCtx`) in ops/sim/core.py.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from fractions import Fraction

from domain.errors import InvariantBroken, Refusal, require
from domain.model import Bet
from domain.registry import new_round
from domain.ruleset import RuleSet
from ops.sim.blackjack import BlackjackDriver
from ops.sim.core import CURRENCY, RoundCtx, RoundWriter, Shoe, chance, stable_rng
from ops.sim.games import BaccaratDriver, GameDriver, TeenPattiDriver

FAULT_KINDS = (
    "timeout",  # a player's decision is taken by the timer: decide source=timeout action=auto
    "disconnect",  # pause cause player_connection_lost; the player's hands are completed by the system
    "host_interruption",  # pause cause host_interruption, then resume or void per the error policy
    "dealer_error",  # a card to the wrong target or an impossible card, then a void or the corrected card
    "pause_resume",  # a supervisor pause (system_error / other) that is resolved
    "duplicate",  # a command line delivered twice
    "early_void",  # the round's void is delivered before its open_round
    "bad_command",  # a stake below the minimum or an unknown bet type
    "late_side_bet",  # a side bet past its max round of the shoe (falls back to bad_command)
    "reversal",  # a settlement reversed afterwards (then void or resettle)
)
MID_ROUND_FAULTS = ("disconnect", "host_interruption", "dealer_error", "pause_resume")
STEPS_MAX = 400  # cards + decisions in one round: far above any legal round
SUPERVISORS = ("sup-anna", "sup-bram", "sup-chen", "sup-dara")
DEALERS_PER_TABLE = 3
ROUNDS_PER_DEALER_SHIFT = 25
# A biased table (`ledger simulate --biased-table`): a round the players would
# win on balance is dealt again up to this many times from the same shoe, its
# undealt cards reshuffled (so every card is still one the shoe holds).
BIASED_REDEALS = 3


@dataclass
class PlayedRound:
    lines: list[tuple[int, bytes]]
    faults: list[str]


def driver_for(rules: RuleSet) -> GameDriver:
    if rules.game == "baccarat":
        return BaccaratDriver()
    if rules.game == "teen-patti":
        return TeenPattiDriver()
    if rules.game == "blackjack":
        return BlackjackDriver(rules)
    raise ValueError(f"the simulator has no driver for game {rules.game!r} ({rules.id})")


class TableSim:
    def __init__(
        self,
        *,
        table_id: str,
        rules: RuleSet,
        seed: int,
        start_ms: int,
        players: list[str],
        fault_rate: Fraction,
        fault_kinds: tuple[str, ...] = FAULT_KINDS,
        biased: bool = False,
    ) -> None:
        self.table_id = table_id
        self.biased = biased
        self.rules = rules
        self.rng = stable_rng(seed, table_id)
        self.driver: GameDriver = driver_for(rules)
        self.regulars = self.rng.sample(players, min(len(players), self.driver.regulars))
        self.dealers = [f"dealer-{self.rng.randrange(1, 100):02d}" for _ in range(DEALERS_PER_TABLE)]
        self.clock_ms = start_ms
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(k for k in fault_kinds if self.driver.supports_fault(k, rules))
        self.shoe: Shoe | None = None
        self.shoe_no = 0
        self.round_in_shoe = 0
        self.retire_shoe = False
        self.last_round: RoundCtx | None = None

    # ------------------------------------------------------------ shoe

    def _shoe_for_round(self) -> Shoe:
        shoe = self.shoe
        if shoe is None or self.retire_shoe or self.driver.fresh_shoe_each_round or shoe.cut_card_out:
            self.shoe_no += 1
            cut = self.driver.cut_from_end_cards(self.rules)
            shoe = Shoe(self.rng, f"{self.table_id}-s{self.shoe_no:05d}", self.rules.decks, cut)
            self.shoe, self.round_in_shoe, self.retire_shoe = shoe, 0, False
        self.round_in_shoe += 1
        return shoe

    def _after_void(self) -> None:
        if self.rules.error_policy.replace_shoe_on_void:
            self.retire_shoe = True

    # ------------------------------------------------------------ round

    def _pick_fault(self) -> str | None:
        if not self.fault_kinds or not chance(self.rng, self.fault_rate):
            return None
        return self.rng.choice(self.fault_kinds)

    def play_round(self, round_no: int) -> PlayedRound:
        rng = self.rng
        fault = self._pick_fault()
        shoe = self._shoe_for_round()
        writer = RoundWriter(self.table_id, round_no, self.clock_ms)
        seated = rng.sample(self.regulars, rng.randint(*self.driver.players_per_round(len(self.regulars))))
        ctx = RoundCtx(
            rng=rng, writer=writer, model=new_round(self.rules, round_in_shoe=self.round_in_shoe), shoe=shoe,
            rules=self.rules, round_no=round_no, round_in_shoe=self.round_in_shoe, players=seated, fault=fault,
        )
        self._play(ctx)
        self.last_round = ctx  # for tests that fold the model's own settlement (no ledger)
        if fault == "duplicate":
            self._duplicate(ctx)
        if fault == "early_void":
            # The ledger never opened it: the shoe did not count it (a new shoe still burns next round).
            self.round_in_shoe -= 1
        elif ctx.shoe_void:
            self._after_void()
        writer.tick(rng.randint(3_000, 9_000))  # the table resets between rounds
        self.clock_ms = writer.clock_ms
        return PlayedRound(writer.lines, ctx.faults)

    def _play(self, ctx: RoundCtx) -> None:
        w, rng = ctx.writer, ctx.rng
        if ctx.fault == "early_void":
            self._early_void(ctx)
        dealer = self.dealers[(ctx.round_no // ROUNDS_PER_DEALER_SHIFT) % len(self.dealers)]
        w.emit("open_round", ruleset_id=self.rules.id, ruleset_version=self.rules.version,
               currency=CURRENCY, shoe_id=ctx.shoe.shoe_id, dealer_id=dealer)
        self._bets(ctx)
        if ctx.ended:
            return  # the void was already delivered; the studio sent nothing more for it
        w.tick(rng.randint(1_000, 3_000))
        w.emit("close_betting")
        ctx.model.close_betting()
        if self.biased and ctx.fault is None:
            self._deal_biased(ctx)
        else:
            self._deal_and_decide(ctx)
        if not ctx.ended and ctx.fault == "reversal":
            self._reversal(ctx)

    # ------------------------------------------------------------ bets

    def _bets(self, ctx: RoundCtx) -> None:
        w, rng, model = ctx.writer, ctx.rng, ctx.model
        late_side_bet_sent = False
        for bet in self.driver.bets(ctx):
            w.tick(rng.randint(200, 2_500))
            try:
                model.place_bet(bet)
            except Refusal as refusal:
                # Players mostly respect the table (max round of the shoe, limits);
                # the late-side-bet fault sends one refused side bet anyway.
                if ctx.fault == "late_side_bet" and refusal.code == "bet_not_offered" and not late_side_bet_sent:
                    late_side_bet_sent = True
                    ctx.faults.append("late_side_bet")
                    self._emit_bet(w, bet)
                continue
            self._emit_bet(w, bet)
        if ctx.fault == "bad_command" or (ctx.fault == "late_side_bet" and not late_side_bet_sent):
            bad = self.driver.bad_bet(ctx)
            w.tick(rng.randint(200, 1_500))
            self._emit_bet(w, bad)
            ctx.faults.append("bad_command")
            try:  # the ledger refuses it; should the model take it, keep the model in step
                model.place_bet(bad)
            except Refusal:
                pass

    @staticmethod
    def _emit_bet(w: RoundWriter, bet: Bet) -> None:
        w.emit("place_bet", bet_id=bet.bet_id, player_id=bet.player_id, spot=bet.spot, bet_type=bet.bet_type,
               stake_minor=bet.stake_minor, mode=bet.mode, seat_no=bet.seat_no)

    # ------------------------------------------------------------ play

    def _deal_and_decide(self, ctx: RoundCtx) -> None:
        model, rng = ctx.model, ctx.rng
        fault_step = rng.randint(1, 4) if ctx.fault in MID_ROUND_FAULTS else STEPS_MAX + 1
        for step in range(1, STEPS_MAX + 1):
            if model.is_complete():
                return
            if step >= fault_step and self._fault_fits(ctx):
                fault_step = STEPS_MAX + 1
                self._mid_round_fault(ctx)
                if ctx.ended:
                    return
            self._follows(ctx)
            target = model.next_card_target()
            if target is not None:
                self._deal(ctx, target)
                continue
            decisions = model.legal_decisions()
            require(bool(decisions), f"{self.table_id} round {ctx.round_no}: stuck, no card and no decision: "
                    f"{model.view()}")
            self._decide(ctx, decisions)
        raise InvariantBroken(f"{self.table_id} round {ctx.round_no}: more than {STEPS_MAX} steps")

    def _deal_biased(self, ctx: RoundCtx) -> None:
        """Deal; while the players come out ahead, take the deal back and deal
        again (at most BIASED_REDEALS times) from the reshuffled rest of the shoe.
        Only the last deal reaches the feed: a shoe stacked toward the house."""
        w, shoe = ctx.writer, ctx.shoe
        start = (copy.deepcopy(ctx.model), shoe.pos, len(w.lines), w.seq, w.cards_dealt, w.clock_ms)
        for _ in range(BIASED_REDEALS):
            self._deal_and_decide(ctx)
            results = copy.deepcopy(ctx.model).settle()
            if sum(r.returned_minor - r.staked_minor for r in results) <= 0:
                return
            model, shoe.pos, lines, w.seq, w.cards_dealt, w.clock_ms = copy.deepcopy(start[0]), *start[1:]
            ctx.model = model
            del w.lines[lines:]
            ctx.answered.clear()
            rest = shoe.cards[shoe.pos:]
            ctx.rng.shuffle(rest)
            shoe.cards[shoe.pos:] = rest
        self._deal_and_decide(ctx)

    def _deal(self, ctx: RoundCtx, target: str) -> None:
        ctx.writer.tick(ctx.rng.randint(1_200, 2_600))
        card = ctx.shoe.draw()
        ctx.model.deal(card, target)
        ctx.writer.deal(card, target)

    def _follows(self, ctx: RoundCtx) -> None:
        w, rng = ctx.writer, ctx.rng
        for offer in ctx.model.pending_follows():
            key = (offer.bet_id, offer.kind)
            if key in ctx.answered:
                continue
            ctx.answered.add(key)
            if offer.player_id in ctx.disconnected:
                continue  # silence: the offer closes at the next card or decision (declined)
            accept = self.driver.follow_choice(ctx, offer)
            if accept is None:
                continue  # silence
            w.tick(rng.randint(300, 4_500))
            ctx.model.follow(offer.bet_id, offer.kind, accept)
            w.emit("follow", bet_id=offer.bet_id, kind=offer.kind, accept=accept)

    def _decide(self, ctx: RoundCtx, decisions: dict[str, tuple[str, ...]]) -> None:
        w, rng = ctx.writer, ctx.rng
        hand, actions = next(iter(decisions.items()))
        owner = self.driver.hand_owner(ctx, hand)
        amount = None
        if owner in ctx.disconnected and "auto" in actions:
            action, source = "auto", "system"
            w.tick(rng.randint(500, 1_500))
        elif ctx.fault == "timeout" and not ctx.timeout_used and "auto" in actions and rng.randrange(2) == 0:
            ctx.timeout_used = True
            ctx.faults.append("timeout")
            action, source = "auto", "timeout"
            w.tick(rng.randint(10_000, 12_000))  # the decision timer ran out
        else:
            action, amount = self.driver.decide(ctx, hand, actions)
            source = "player"
            w.tick(rng.randint(1_000, 6_000))
        ctx.model.decide(hand, action, source, amount)
        w.emit("decide", hand=hand, action=action, source=source, amount_minor=amount)

    # ------------------------------------------------------------ faults

    def _action(self, cause: str) -> str:
        return self.rules.error_policy.action_for(cause)

    def _void(self, ctx: RoundCtx, cause: str, note: str) -> None:
        ctx.writer.tick(ctx.rng.randint(5_000, 40_000))
        ctx.writer.emit("void", cause=cause, by=ctx.rng.choice(SUPERVISORS), note=note)
        ctx.ended = ctx.shoe_void = True

    def _pause(self, ctx: RoundCtx, cause: str, by: str, note: str, player_id: str | None = None) -> None:
        ctx.writer.tick(ctx.rng.randint(500, 3_000))
        # a player-side cause names its player (refused `player_required` otherwise); None is left out
        ctx.writer.emit("pause", cause=cause, by=by, note=note, player_id=player_id)

    def _resume(self, ctx: RoundCtx, note: str) -> None:
        ctx.writer.tick(ctx.rng.randint(15_000, 120_000))
        ctx.writer.emit("resume", by=ctx.rng.choice(SUPERVISORS), note=note)

    def _interrupt(self, ctx: RoundCtx, cause: str, note: str) -> None:
        """A pause for `cause`; the ledger applies the error policy: a void policy voids
        the round at once; a pause policy waits for a resume (or a void if unresolved)."""
        self._pause(ctx, cause, "studio", note)
        if self._action(cause) == "void":
            ctx.ended = ctx.shoe_void = True
            return
        if ctx.rng.randrange(10) < 7:
            self._resume(ctx, "resolved")
        else:
            self._void(ctx, "unresolved_pause", f"{note}; not resolved, round cancelled")

    def _fault_fits(self, ctx: RoundCtx) -> bool:
        """A disconnect at a decision table happens while a player is to act."""
        if ctx.fault == "disconnect" and self.driver.has_decisions:
            return bool(ctx.model.legal_decisions())
        return True

    def _mid_round_fault(self, ctx: RoundCtx) -> None:
        ctx.faults.append(ctx.fault or "")
        if ctx.fault == "disconnect":
            self._disconnect(ctx)
        elif ctx.fault == "host_interruption":
            self._interrupt(ctx, "host_interruption", "studio host system interrupted")
        elif ctx.fault == "pause_resume":
            cause = ctx.rng.choice([c for c in ("system_error", "other") if self._action(c) == "pause"])
            self._pause(ctx, cause, ctx.rng.choice(SUPERVISORS), "supervisor checks the table")
            self._resume(ctx, "checked, play on")
        elif ctx.fault == "dealer_error":
            self._dealer_error(ctx)

    def _disconnect(self, ctx: RoundCtx) -> None:
        """The acting player's connection drops. Under a `complete` policy the ledger
        plays that player's hands waiting for a decision by the no-action rule and
        declines that player's open follow offers; the model here does the same to
        stay in step."""
        model = ctx.model
        waiting = list(model.legal_decisions())
        owner = self.driver.hand_owner(ctx, waiting[0]) if waiting else None
        player = owner or (ctx.rng.choice(ctx.players) if ctx.players else "p0000")
        ctx.disconnected.add(player)
        self._pause(ctx, "player_connection_lost", "studio", f"player {player} lost connection", player)
        action = self._action("player_connection_lost")
        if action == "complete":
            for offer in list(model.pending_follows()):
                if offer.player_id == player:
                    model.follow(offer.bet_id, offer.kind, False)
            for hand in waiting:
                if hand in model.legal_decisions() and self.driver.hand_owner(ctx, hand) == player:
                    model.decide(hand, "auto", "system")
        elif action == "pause":
            self._resume(ctx, f"player {player} reconnected")
        else:
            ctx.ended = ctx.shoe_void = True

    def _dealer_error(self, ctx: RoundCtx) -> None:
        """A card to the wrong place (or a card the shoe cannot hold), then void or correction."""
        model, w, rng = ctx.model, ctx.writer, ctx.rng
        target = model.next_card_target()
        if target is None:  # a decision is awaited: the dealer deals anyway
            bad_card, bad_target = ctx.shoe.peek(), self.driver.any_target(ctx)
        else:
            bad_card, bad_target = self.driver.bad_card(ctx, target)
        probe = copy.deepcopy(model)
        try:
            probe.deal(bad_card, bad_target)
            ctx.faults[-1] = "dealer_error_unrefused"  # should not happen: the model took it
        except Refusal:
            pass
        w.tick(rng.randint(1_200, 2_600))
        w.deal(bad_card, bad_target, recorded=False)
        # The ledger refuses the card and applies the human-error policy itself:
        # a void policy voids the round; a pause policy flags a pause that the
        # correct card lifts (or a resume, or a supervisor's void).
        if self._action("human_error") == "void":
            ctx.ended = ctx.shoe_void = True
        elif rng.randrange(10) < 4:
            self._void(ctx, "human_error", f"dealer error: {bad_card} to {bad_target}")
        elif model.next_card_target() is None:
            self._resume(ctx, f"{bad_card} taken back; play on")
        # else play goes on: the loop deals the right card to the right target, which resumes

    def _early_void(self, ctx: RoundCtx) -> None:
        """The round's void reaches the ledger before its open_round (out-of-order delivery)."""
        ctx.faults.append("early_void")
        cause = ctx.rng.choice(("game_disabled", "system_error", "host_interruption"))
        ctx.writer.emit("void", cause=cause, by=ctx.rng.choice(SUPERVISORS), note="delivered before open_round")
        ctx.ended = True

    def _reversal(self, ctx: RoundCtx) -> None:
        ctx.faults.append("reversal")
        then = "void" if ctx.rng.randrange(2) == 0 else "resettle"
        ctx.writer.tick(ctx.rng.randint(30_000, 300_000))
        ctx.writer.emit("reverse_settlement", by=ctx.rng.choice(SUPERVISORS),
                        reason="dispute review: settlement corrected", then=then, cause="human_error")

    def _duplicate(self, ctx: RoundCtx) -> None:
        """The studio retried: one line arrives again a little later."""
        lines = ctx.writer.lines
        if not lines:
            return
        ctx.faults.append("duplicate")
        i = ctx.rng.randrange(len(lines))
        j = min(len(lines), i + 1 + ctx.rng.randrange(3))
        lines.insert(j, (lines[j - 1][0], lines[i][1]))


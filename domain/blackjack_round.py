"""The pure blackjack round model (the RoundModel contract of domain/model.py).

Phases: betting -> deal (initial deal) -> insurance (only when the dealer's
first card is an ace) -> play (hands in order) -> dealer -> complete.

Every public mutator makes all its checks (each may raise `Refusal`) before
it changes anything, so a `Refusal` leaves the model exactly as it was; the
change itself raises nothing but `InvariantBroken` (a bug). So no call copies the
state to roll it back: every decision of every round would pay for the copy.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from domain.blackjack_bets import box_holder, check_bet
from domain.blackjack_outcome import outcome
from domain.blackjack_play import apply_decision
from domain.blackjack_rules import (
    BLACKJACK_TOTAL,
    CARDS_PER_HAND_MAX,
    DEALER_STANDS_ON,
    TIMEOUT_HIT_BELOW,
    BlackjackRules,
    hand_total,
)
from domain.blackjack_settle import settle
from domain.blackjack_state import FINISHED, Hand, Stake, State, holder_bet, spot_number
from domain.cards import Card, CardCounter
from domain.errors import InvariantBroken, Refusal, refuse, require
from domain.model import DECISION_SOURCES, Bet, BetResult, FollowOffer, StakeMove
from domain.money import check_amount, format_minor
from domain.outcome import RoundOutcome
from domain.refusals import RefusalCode

T = TypeVar("T")


class BlackjackRound:
    """One blackjack round under `rules`; see module doc and domain/model.py."""

    def __init__(self, rules: BlackjackRules, round_in_shoe: int) -> None:
        require(isinstance(rules, BlackjackRules), "rules must be BlackjackRules")
        require(type(round_in_shoe) is int and round_in_shoe >= 1, f"bad round_in_shoe {round_in_shoe!r}")
        self.rules = rules
        self.round_in_shoe = round_in_shoe
        self._s = State(seen=CardCounter(rules.decks))

    # ------------------------------------------------------------------ plumbing
    def _apply(self, fn: Callable[..., T], *args: Any) -> T:
        """Run the change `fn(state, ...)` once every check of the public method passed.
        A Refusal from inside the change would leave a half-changed model: a bug, so it
        is raised as InvariantBroken (tests/unit/domain/test_blackjack_refusal_first.py)."""
        try:
            return fn(self._s, *args)
        except Refusal as refusal:
            raise InvariantBroken(f"refused after the round changed: {refusal}") from refusal

    # ------------------------------------------------------------------ betting
    def place_bet(self, bet: Bet) -> None:
        require(isinstance(bet, Bet), "place_bet needs a Bet")
        s = self._s
        if s.phase != "betting":
            raise refuse(RefusalCode.BETTING_CLOSED, bet_id=bet.bet_id)
        check_bet(self.rules, s, bet)
        self._apply(lambda st: st.bets.append(bet))

    def close_betting(self) -> None:
        if self._s.phase != "betting":
            raise refuse(RefusalCode.BETTING_CLOSED, "close")
        self._apply(self._close)

    def _close(self, s: State) -> None:
        mains = [b for b in s.bets if b.bet_type == "main" and b.spot.startswith(self.rules.spot_kind + ":")]
        s.spots = sorted({b.spot for b in mains}, key=spot_number)
        for spot in s.spots:
            holder = box_holder(self.rules, spot, [b for b in mains if b.spot == spot])
            s.holders[spot] = holder.bet_id
            hand = Hand(name=spot, spot=spot)
            for b in s.bets:
                if b.bet_type == "main" and (b.spot == spot or b.spot == f"behind:{spot_number(spot)}"):
                    hand.stakes.append(Stake(b.bet_id, b.player_id, b.stake_minor, "main"))
            s.hands.append(hand)
        s.deal_plan = s.spots + ["dealer"] + s.spots
        s.phase = "deal" if s.spots else "complete"

    # ------------------------------------------------------------------ cards
    def next_card_target(self) -> str | None:
        return _next_target(self.rules, self._s)

    def deal(self, card: Card, target: str) -> None:
        if not isinstance(card, Card):  # the message is built only when broken
            raise InvariantBroken(f"deal needs a Card, got {type(card).__name__}")
        s = self._s
        if s.phase == "betting":
            raise refuse(RefusalCode.BETTING_OPEN, card=card, target=target)
        expected = _next_target(self.rules, s)
        if expected is None:
            why = "the round is complete" if s.phase == "complete" else _awaiting(self.rules, s)
            raise refuse(RefusalCode.CARD_NOT_EXPECTED, card=card, target=target, why=why)
        if target != expected:
            raise refuse(RefusalCode.WRONG_TARGET, card=card, target=target, expected=expected)
        s.seen.check(card)
        self._apply(self._deal, card, target)

    def _deal(self, s: State, card: Card, target: str) -> None:
        s.seen.add(card)  # `deal` checked it: the change only counts it
        s.offers = []  # follow offers not answered before the next card count as declined
        if s.phase == "deal":
            if target == "dealer":
                s.dealer.append(card)
            else:
                _hand(s, target).cards.append(card)
            s.deal_done += 1
            if s.deal_done == len(s.deal_plan):
                self._after_initial_deal(s)
        elif target == "dealer":
            s.dealer.append(card)
        else:
            h = _hand(s, target)
            if len(h.cards) >= CARDS_PER_HAND_MAX:  # the message is built only when broken
                raise InvariantBroken(f"{h.name}: too many cards")
            h.cards.append(card)
            h.want_card = False
        _advance(self.rules, s)

    def _after_initial_deal(self, s: State) -> None:
        for h in s.hands:
            s.first_two[h.spot] = tuple(h.cards)
            if h.total == BLACKJACK_TOTAL:
                h.status = "blackjack"
        s.phase = "insurance" if s.dealer[0].rank == "A" else "play"
        if s.phase == "insurance" and self.rules.box_followers_insurance:
            for spot in s.spots:  # the other players on a box may insure their own stake (seed 002)
                for b in s.bets:
                    if b.spot == spot and b.bet_type == "main" and b.bet_id != s.holders[spot]:
                        s.offers.append((FollowOffer(b.bet_id, b.player_id, "insurance", b.stake_minor // 2), spot))

    # ------------------------------------------------------------------ decisions
    def legal_decisions(self) -> dict[str, tuple[str, ...]]:
        return _legal(self.rules, self._s)

    def decide(self, hand: str, action: str, source: str, amount_minor: int | None = None) -> list[StakeMove]:
        s = self._s
        if source not in DECISION_SOURCES:
            raise refuse(
                RefusalCode.BAD_DECISION_SOURCE, hand=hand, action=action, sources=', '.join(DECISION_SOURCES),
                source=source)
        if s.phase == "betting":
            raise refuse(RefusalCode.BETTING_OPEN, "decision", hand=hand, action=action)
        if hand not in [h.name for h in s.hands]:  # a list, not any() of a generator (every decision)
            names = ", ".join(h.name for h in s.hands) or "none"
            raise refuse(RefusalCode.UNKNOWN_HAND, action=action, hand=hand, hands=names)
        legal = _legal(self.rules, s)
        if action not in legal.get(hand, ()):
            now = "; ".join(f"{k}: {', '.join(v)}" for k, v in legal.items()) or _awaiting(self.rules, s)
            raise refuse(RefusalCode.DECISION_NOT_LEGAL, action=action, hand=hand, legal=now)
        ins_amount = _check_amount(self.rules, s, hand, action, amount_minor)
        return self._apply(self._decide, hand, action, ins_amount)

    def _decide(self, s: State, name: str, action: str, ins_amount: int | None) -> list[StakeMove]:
        # offers close at the next decision too; a box's own insurance offers (spielbank v2, the
        # other players on the box) stay open until its holder answers insurance for the box
        s.offers = [(o, t) for o, t in s.offers if o.kind == "insurance" and t != name] if s.phase == "insurance" else []
        moves = apply_decision(self.rules, s, name, action, ins_amount)
        _advance(self.rules, s)
        return moves

    # ------------------------------------------------------------------ follows
    def pending_follows(self) -> list[FollowOffer]:
        return [o for o, _ in self._s.offers]

    def follow(self, bet_id: str, kind: str, accept: bool) -> list[StakeMove]:
        require(isinstance(accept, bool), "accept must be a bool")
        match = [i for i, (o, _) in enumerate(self._s.offers) if o.bet_id == bet_id and o.kind == kind]
        if not match:
            open_ = ", ".join(f"{o.bet_id}/{o.kind}" for o, _ in self._s.offers) or "none"
            raise refuse(RefusalCode.NO_FOLLOW_OFFER, bet_id=bet_id, kind=kind, offers=open_)
        return self._apply(self._follow, match[0], accept)

    def _follow(self, s: State, index: int, accept: bool) -> list[StakeMove]:
        offer, target = s.offers.pop(index)
        if not accept:
            return []
        if offer.kind == "insurance":  # the follower's own insurance line, not a stake on the hand
            s.follower_insurance[offer.bet_id] = offer.amount_minor
            return [StakeMove(f"{offer.bet_id}:insurance", offer.player_id, offer.amount_minor, "insurance")]
        reason = f"follow_{offer.kind}"
        _hand(s, target).stakes.append(Stake(offer.bet_id, offer.player_id, offer.amount_minor, reason))
        return [StakeMove(offer.bet_id, offer.player_id, offer.amount_minor, reason)]

    def deciding_player(self, hand: str) -> str:
        """The player whose decisions count for `hand` (seat player / box holder)."""
        s = self._s
        spot = next((h.spot for h in s.hands if h.name == hand or h.spot == hand), None)
        if spot is None:
            raise refuse(RefusalCode.UNKNOWN_HAND, "decider", hand=hand)
        return holder_bet(s, spot).player_id

    def check_decider(self, hand: str, player_id: str) -> None:
        """For the ledger: refuse a decision on `hand` by anyone but its holder (spielbank seed 002)."""
        holder = self.deciding_player(hand)
        if player_id != holder:
            who = "the box holder" if self.rules.spot_kind == "box" else "the seated player"
            raise refuse(RefusalCode.NOT_BOX_HOLDER, hand=hand, who=who, holder=holder, player_id=player_id)

    # ------------------------------------------------------------------ end
    def is_complete(self) -> bool:
        return self._s.phase == "complete"

    def settle(self) -> list[BetResult]:
        if not self.is_complete():
            raise refuse(
                RefusalCode.ROUND_NOT_COMPLETE, phase=self._s.phase, awaiting=_awaiting(self.rules, self._s))
        return settle(self.rules, self._s)

    def outcome(self) -> RoundOutcome:
        if not self.is_complete():
            raise refuse(
                RefusalCode.ROUND_NOT_COMPLETE, "outcome", phase=self._s.phase,
                awaiting=_awaiting(self.rules, self._s))
        return outcome(self.rules, self._s)

    def view(self) -> dict[str, Any]:
        s = self._s
        d_total, d_soft = hand_total(s.dealer)
        return {
            "game": "blackjack",
            "ruleset": f"{self.rules.id} v{self.rules.version}",
            "round_in_shoe": self.round_in_shoe,
            "phase": s.phase,
            "dealer": {"cards": [str(c) for c in s.dealer], "total": d_total, "soft": d_soft},
            "hands": [
                {
                    "name": h.name, "spot": h.spot, "cards": [str(c) for c in h.cards], "total": h.total,
                    "soft": h.soft, "status": h.status, "doubled": h.doubled, "from_split": h.from_split,
                    "auto": h.auto,
                    "stakes": [{"bet_id": k.bet_id, "player_id": k.player_id, "amount_minor": k.amount_minor,
                                "reason": k.reason} for k in h.stakes],
                }
                for h in s.hands
            ],
            "bets": [{"bet_id": b.bet_id, "player_id": b.player_id, "spot": b.spot, "bet_type": b.bet_type,
                      "stake_minor": b.stake_minor} for b in s.bets],
            "holders": dict(s.holders),
            "insurance": dict(sorted(s.insurance.items())),
            "follower_insurance": dict(sorted(s.follower_insurance.items())),
            "follow_offers": [{"bet_id": o.bet_id, "player_id": o.player_id, "kind": o.kind,
                               "amount_minor": o.amount_minor, "hand": t} for o, t in s.offers],
            "next_card_target": _next_target(self.rules, s),
            "legal_decisions": {k: list(v) for k, v in _legal(self.rules, s).items()},
        }


# ---------------------------------------------------------------------- helpers
def _hand(s: State, name: str) -> Hand:
    for h in s.hands:
        if h.name == name:
            return h
    raise InvariantBroken(f"no hand {name}")


def current_hand(s: State) -> Hand | None:
    if s.phase != "play":
        return None
    for h in s.hands:  # a loop reading `status`: no generator frame nor property call per hand (asked per card)
        if h.status not in FINISHED:
            return h
    return None


def can_split(rules: BlackjackRules, s: State, h: Hand) -> bool:
    if len(h.cards) != 2 or h.doubled or h.acted:
        return False
    a, b = h.cards
    same = a.rank == b.rank or (rules.split_ten_values_any and a.is_ten_value and b.is_ten_value)
    if not same:
        return False
    if sum(1 for x in s.hands if x.spot == h.spot) >= rules.hands_per_box_max:
        return False
    if h.split_aces and not rules.resplit_aces:
        return False
    if not rules.split_hand_counts_as_box_for_max:
        # the box maximum then caps the holder's stakes on all the box's hands together
        holder = holder_bet(s, h.spot)
        on_box = sum(k.amount_minor for x in s.hands if x.spot == h.spot for k in x.stakes
                     if k.bet_id == holder.bet_id)
        if on_box + holder.stake_minor > rules.limit_for("main").max_minor:
            return False
    return True


def can_double(rules: BlackjackRules, h: Hand) -> bool:
    if len(h.cards) != 2 or h.doubled or h.acted or h.status != "playing":
        return False
    if h.from_split and not rules.double_after_split:
        return False
    if h.split_aces and not rules.double_on_split_aces:
        return False
    total, soft = hand_total(h.cards)
    if rules.double_on == "hard_9_10_11" and (soft or total not in (9, 10, 11)):
        return False
    if not rules.doubled_stake_may_exceed_max:
        main = sum(k.amount_minor for k in h.stakes if k.reason in ("main", "split"))
        if 2 * main > rules.limit_for("main").max_minor:
            return False
    return True


def can_surrender(rules: BlackjackRules, s: State, h: Hand) -> bool:
    if rules.surrender == "none" or len(h.cards) != 2 or h.from_split or h.acted or h.doubled:
        return False
    if rules.surrender == "early_no_ace_ten":
        up = s.dealer[0]
        return not (up.rank == "A" or up.is_ten_value)
    return True  # before_third_card: any dealer card


def has_choice_before_autodeal(rules: BlackjackRules, s: State, h: Hand) -> bool:
    return can_split(rules, s, h) or can_double(rules, h) or can_surrender(rules, s, h)


def auto_floor(rules: BlackjackRules, h: Hand) -> int:
    """Total below which a hand takes cards without being asked."""
    floor = 0
    if rules.auto_deal_to_min_total and not (h.split_aces and not rules.auto_deal_split_aces):
        floor = rules.auto_deal_to_min_total
    if h.auto and rules.timeout_policy == "hit_to_12":
        floor = max(floor, TIMEOUT_HIT_BELOW)
    return floor


def _hand_needs_card(rules: BlackjackRules, s: State, h: Hand) -> bool:
    if h.finished:
        return False
    if len(h.cards) < 2 or h.want_card:
        return True
    if h.split_aces and rules.split_aces_one_card:
        return False
    below = h.total < auto_floor(rules, h)
    return below and (h.acted or h.auto or not has_choice_before_autodeal(rules, s, h))


def _dealer_needs_card(rules: BlackjackRules, s: State) -> bool:
    if s.dealer_mode == "none":
        return False
    if s.dealer_mode == "second_only":
        return len(s.dealer) < 2
    total, soft = hand_total(s.dealer)
    if total < DEALER_STANDS_ON:
        return True
    return total == DEALER_STANDS_ON and soft and not rules.dealer_stands_soft_17


def _next_target(rules: BlackjackRules, s: State) -> str | None:
    if s.phase == "deal":
        return s.deal_plan[s.deal_done]
    if s.phase == "play":
        h = current_hand(s)
        if h is not None and _hand_needs_card(rules, s, h):
            return h.name
        return None
    if s.phase == "dealer":
        return "dealer" if _dealer_needs_card(rules, s) else None
    return None


def insurance_spots(rules: BlackjackRules, s: State) -> list[str]:
    return [sp for sp in s.spots if sp not in s.insurance_answered]


def _legal(rules: BlackjackRules, s: State) -> dict[str, tuple[str, ...]]:
    if s.phase == "insurance":
        return _legal_insurance(rules, s)
    h = current_hand(s)
    if h is None or _hand_needs_card(rules, s, h):
        return {}
    acts: list[str] = []
    if not (h.split_aces and rules.split_aces_one_card):
        acts.append("hit")
    if h.total >= auto_floor(rules, h) or not acts:
        acts.append("stand")
    if can_double(rules, h):
        acts.append("double")
    if can_split(rules, s, h):
        acts.append("split")
    if can_surrender(rules, s, h):
        acts.append("surrender")
    acts.append("auto")
    return {h.name: tuple(acts)}


def _legal_insurance(rules: BlackjackRules, s: State) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for spot in insurance_spots(rules, s):
        h = next(x for x in s.hands if x.spot == spot)
        even_money = ("even_money",) if rules.even_money and h.status == "blackjack" else ()
        out[spot] = (*even_money, "insurance", "no_insurance", "auto")
    return out


def _awaiting(rules: BlackjackRules, s: State) -> str:
    legal = _legal(rules, s)
    if legal:
        return "awaiting decisions: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in legal.items())
    target = _next_target(rules, s)
    if target:
        return f"awaiting a card to {target}"
    return f"phase {s.phase}"


def _check_amount(rules: BlackjackRules, s: State, hand: str, action: str, amount: int | None) -> int | None:
    """The insurance stake for `action`, or None; refuse an amount where none may be chosen."""
    if action != "insurance":
        if amount is not None:
            raise refuse(RefusalCode.AMOUNT_NOT_ALLOWED, action=action, hand=hand)
        return None
    main = holder_bet(s, hand).stake_minor
    if rules.insurance_amount == "half_main":
        if amount is not None and amount != main // 2:
            raise refuse(
                RefusalCode.BAD_INSURANCE_AMOUNT, hand=hand, half=format_minor(main // 2), amount=format_minor(amount))
        return main // 2
    low = -(-rules.limit_for("main").min_minor // 2)
    high = main // 2
    if amount is None:
        return high
    check_amount(amount, f"insurance on {hand}")
    if not low <= amount <= high:
        raise refuse(
            RefusalCode.BAD_INSURANCE_AMOUNT, "between", hand=hand, amount=format_minor(amount), low=format_minor(low),
            high=format_minor(high))
    return amount


def _advance(rules: BlackjackRules, s: State) -> None:
    """Normalize after a change: finish hands, move on to the dealer, complete."""
    if s.phase == "insurance":
        if insurance_spots(rules, s):
            return
        s.phase = "play"
    if s.phase == "play":
        for h in s.hands:
            _settle_hand_state(rules, s, h)
        if current_hand(s) is not None:
            return
        s.dealer_mode = _dealer_mode(rules, s)
        s.phase = "dealer"
    if s.phase == "dealer" and not _dealer_needs_card(rules, s):
        s.phase = "complete"


def _settle_hand_state(rules: BlackjackRules, s: State, h: Hand) -> None:
    if h.status in FINISHED or len(h.cards) < 2 or h.want_card:  # `h.finished`, without the property call
        return
    total = h.total
    if total > BLACKJACK_TOTAL:
        h.status = "bust"
    elif total == BLACKJACK_TOTAL or h.doubled:
        h.status = "stood"
    elif h.split_aces and rules.split_aces_one_card and not can_split(rules, s, h):
        h.status = "stood"
    elif h.auto and total >= auto_floor(rules, h):
        h.status = "stood"  # the no-action rule stands once it stops hitting


def _dealer_mode(rules: BlackjackRules, s: State) -> str:
    if not rules.dealer_draws_only_if_needed:
        return "full"
    if any(h.status == "stood" for h in s.hands):
        return "full"
    up = s.dealer[0]
    could_bj = up.rank == "A" or up.is_ten_value
    needs_second = any(h.status == "blackjack" for h in s.hands) or bool(s.insurance) or bool(s.follower_insurance)
    return "second_only" if could_bj and needs_second else "none"


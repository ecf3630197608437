"""Applying one already-validated blackjack decision to the round's state."""
from __future__ import annotations

from domain.blackjack_rules import BlackjackRules
from domain.blackjack_state import Hand, Stake, State, holder_bet
from domain.errors import InvariantBroken
from domain.model import FollowOffer, StakeMove


def apply_decision(rules: BlackjackRules, s: State, name: str, action: str,
                   ins_amount: int | None) -> list[StakeMove]:
    if s.phase == "insurance":
        return _insurance(s, name, action, ins_amount)
    h = next(x for x in s.hands if x.name == name)
    h.acted = True
    if action == "hit":
        h.want_card = True
    elif action == "stand":
        h.status = "stood"
    elif action == "surrender":
        h.status = "surrendered"
    elif action == "auto":
        h.auto = True  # _advance hits or stands by the rule set's timeout policy
    elif action == "double":
        return _double(s, h)
    elif action == "split":
        return _split(s, h)
    return []


def _insurance(s: State, spot: str, action: str, amount: int | None) -> list[StakeMove]:
    s.insurance_answered.add(spot)
    if action == "even_money":
        next(h for h in s.hands if h.spot == spot).status = "even_money"
        return []
    if action != "insurance":  # no_insurance, auto (silence declines insurance)
        return []
    if amount is None or amount <= 0:  # not require(): this check also narrows the type
        raise InvariantBroken(f"insurance on {spot} without an amount")
    holder = holder_bet(s, spot)
    s.insurance[spot] = amount
    return [StakeMove(f"{holder.bet_id}:insurance", holder.player_id, amount, "insurance")]


def _others_on(s: State, h: Hand, holder_id: str) -> list[str]:
    """Bet ids other than the holder's with a stake on hand `h`, in order of first stake."""
    out: list[str] = []
    for k in h.stakes:
        if k.bet_id != holder_id and k.bet_id not in out:
            out.append(k.bet_id)
    return out


def _offers(s: State, h: Hand, holder_id: str, kind: str, target: str) -> None:
    bets = {b.bet_id: b for b in s.bets}
    for bet_id in _others_on(s, h, holder_id):
        b = bets[bet_id]
        s.offers.append((FollowOffer(b.bet_id, b.player_id, kind, b.stake_minor), target))


def _double(s: State, h: Hand) -> list[StakeMove]:
    holder = holder_bet(s, h.spot)
    h.doubled = True
    h.want_card = True
    h.stakes.append(Stake(holder.bet_id, holder.player_id, holder.stake_minor, "double"))
    _offers(s, h, holder.bet_id, "double", h.name)
    return [StakeMove(holder.bet_id, holder.player_id, holder.stake_minor, "double")]


def _split(s: State, h: Hand) -> list[StakeMove]:
    holder = holder_bet(s, h.spot)
    count = sum(1 for x in s.hands if x.spot == h.spot)
    if h.name == h.spot:
        h.name = f"{h.spot}.1"
    aces = h.cards[0].rank == "A"
    new = Hand(name=f"{h.spot}.{count + 1}", spot=h.spot, cards=[h.cards[1]], from_split=True, split_aces=aces)
    new.stakes.append(Stake(holder.bet_id, holder.player_id, holder.stake_minor, "split"))
    h.cards = [h.cards[0]]
    h.from_split = True
    h.split_aces = aces
    h.acted = False  # a fresh hand: its own choices come after its second card
    s.hands.insert(s.hands.index(h) + 1, new)  # a resplit hand is played right after its parent
    _offers(s, h, holder.bet_id, "split", new.name)
    return [StakeMove(holder.bet_id, holder.player_id, holder.stake_minor, "split")]

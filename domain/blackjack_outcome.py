"""What happened in a complete blackjack round (domain/outcome.py): every hand after
splits and doubles with its cards, total and result against the dealer, and the
dealer's hand with why the dealer drew what it drew."""
from __future__ import annotations

from domain.blackjack_rules import BLACKJACK_TOTAL, BlackjackRules, hand_total
from domain.blackjack_settle import dealer_blackjack, hand_result
from domain.blackjack_state import Hand, State
from domain.outcome import HandOutcome, RoundOutcome, StakeLine

# Why the dealer stopped where it did (State.dealer_mode, set when the players are done).
DEALER_NOTES = {
    "full": "the dealer drew to the rule set's standing total",
    "second_only": "no hand was left standing: the dealer drew only the second card, to check for blackjack "
                   "against a player blackjack or insurance",
    "none": "no hand was left standing: the dealer drew no further card",
}


def _name(total: int, soft: bool, cards: int, status: str | None = None) -> str:
    if status == "blackjack" or (status is None and cards == 2 and total == BLACKJACK_TOTAL):
        return "blackjack"
    if total > BLACKJACK_TOTAL:
        return f"bust {total}"
    return f"soft {total}" if soft else str(total)


def _category(total: int, status: str) -> str | None:
    if status in ("blackjack", "bust"):
        return status
    return None


def hand_outcome(rules: BlackjackRules, s: State, h: Hand) -> HandOutcome:
    total, soft = hand_total(h.cards)
    result = hand_result(rules, s, h)
    return HandOutcome(
        hand=h.name, cards=tuple(str(c) for c in h.cards), total=total, soft=soft,
        category=_category(total, h.status), name=_name(total, soft, len(h.cards), h.status), status=h.status,
        result=result, doubled=h.doubled, from_split=h.from_split, auto=h.auto,
        stakes=tuple(StakeLine(k.bet_id, k.player_id, k.amount_minor, k.reason) for k in h.stakes),
    )


def dealer_outcome(s: State) -> HandOutcome:
    total, soft = hand_total(s.dealer)
    bj = dealer_blackjack(s)
    category = "blackjack" if bj else ("bust" if total > BLACKJACK_TOTAL else None)
    return HandOutcome(
        hand="dealer", cards=tuple(str(c) for c in s.dealer), total=total, soft=soft, category=category,
        name="blackjack" if bj else _name(total, soft, 0),
    )


def _summary(s: State, hands: tuple[HandOutcome, ...], dealer: HandOutcome) -> str:
    parts = [f"{h.hand} {h.name} {h.result}" for h in hands]
    return f"dealer {dealer.name}; " + ", ".join(parts)


def _categories(rules: BlackjackRules, s: State) -> tuple[tuple[str, str], ...]:
    """What the side bets read: the Pair bet's first two cards per seat that has one, the
    dealer's blackjack per insured spot."""
    paired = sorted({f"{rules.spot_kind}:{b.spot.split(':')[1]}" for b in s.bets if b.bet_type == "pair"})
    out = [(f"pair:{spot}", "pair" if a.rank == b.rank else "no_pair")
           for spot in paired if spot in s.first_two for a, b in [s.first_two[spot]]]
    insured = "dealer_blackjack" if dealer_blackjack(s) else "no_dealer_blackjack"
    out += [(f"insurance:{spot}", insured) for spot in sorted(s.insurance)]
    return tuple(out)


def outcome(rules: BlackjackRules, s: State) -> RoundOutcome:
    hands = tuple(hand_outcome(rules, s, h) for h in s.hands)
    dealer = dealer_outcome(s)
    notes = (DEALER_NOTES[s.dealer_mode],) if s.dealer_mode in DEALER_NOTES else ()
    return RoundOutcome(game="blackjack", hands=hands, summary=_summary(s, hands, dealer), dealer=dealer,
                        categories=_categories(rules, s), notes=notes)

"""Settling a complete blackjack round: one BetResult per settlement line."""
from __future__ import annotations

from fractions import Fraction

from domain.blackjack_rules import BLACKJACK_TOTAL, BlackjackRules, hand_total
from domain.blackjack_state import EXTRA_REASONS, Hand, State, holder_bet
from domain.errors import InvariantBroken
from domain.model import Bet, BetResult
from domain.money import ZERO, Odds, format_minor, returns_text, win

PUSH = Odds(Fraction(0))


def dealer_blackjack(s: State) -> bool:
    return len(s.dealer) == 2 and hand_total(s.dealer)[0] == BLACKJACK_TOTAL


def _describe_dealer(s: State) -> str:
    if dealer_blackjack(s):
        return "dealer blackjack"
    total = hand_total(s.dealer)[0]
    return "dealer bust" if total > BLACKJACK_TOTAL else f"dealer {total}"


def _hand_result(rules: BlackjackRules, s: State, h: Hand, reason: str) -> tuple[str, Odds | None, str]:
    """(outcome, odds to pay or None for a loss, what happened) for one stake of `reason` on `h`."""
    total = h.total
    if h.status == "surrendered":
        return "surrender", None, f"{h.name} surrendered"
    if h.status == "even_money":
        return "even_money", rules.odds_even_money, f"{h.name} blackjack took even money"
    if h.status == "bust":
        return "lose", None, f"{h.name} bust ({total})"
    dealer = _describe_dealer(s)
    if h.status == "blackjack":
        if dealer_blackjack(s):
            return "push", PUSH, f"{h.name} blackjack vs {dealer}"
        return "win", rules.odds_blackjack, f"{h.name} blackjack vs {dealer}"
    if dealer_blackjack(s):
        if rules.dealer_bj_takes == "original_only" and reason in EXTRA_REASONS:
            return "push", PUSH, f"{h.name} {total} vs {dealer} ({reason} stake returned)"
        return "lose", None, f"{h.name} {total} vs {dealer}"
    d_total = hand_total(s.dealer)[0]
    if d_total > BLACKJACK_TOTAL or total > d_total:
        return "win", rules.odds_win, f"{h.name} {total} vs {dealer}"
    if total == d_total:
        return "push", PUSH, f"{h.name} {total} vs {dealer}"
    return "lose", None, f"{h.name} {total} vs {dealer}"


def hand_result(rules: BlackjackRules, s: State, h: Hand) -> str:
    """The hand's result against the dealer for its main stake: win | lose | push | surrender | even_money."""
    return _hand_result(rules, s, h, "main")[0]


def _component(outcome: str, odds: Odds | None, stake: int) -> tuple[int, Fraction, str]:
    """(returned, remainder, text) for one stake."""
    if outcome == "surrender":
        half = Fraction(stake, 2)
        back = half.numerator // half.denominator
        return back, half - back, f"surrender: half back {returns_text(stake, back, 'surrender')}"
    if odds is None:
        return 0, ZERO, f"lose {format_minor(stake)}"
    if odds.ratio == 0:
        return stake, ZERO, f"push {returns_text(stake, stake, 'push')}"
    p = win(stake, odds)
    label = "even money" if outcome == "even_money" else "win"
    return p.returned_minor, p.remainder, f"{label} {odds} {returns_text(stake, p.returned_minor)}"


def _main_line(rules: BlackjackRules, s: State, bet_id: str, player_id: str) -> BetResult:
    staked = returned = 0
    remainder = ZERO
    outcomes: list[str] = []
    parts: list[str] = []
    for h in s.hands:
        for k in h.stakes:
            if k.bet_id != bet_id:
                continue
            outcome, odds, what = _hand_result(rules, s, h, k.reason)
            back, rem, text = _component(outcome, odds, k.amount_minor)
            staked += k.amount_minor
            returned += back
            if rem:  # most are zero: no Fraction sum for them
                remainder += rem
            outcomes.append(outcome)
            suffix = "" if k.reason == "main" else f" [{k.reason}]"
            parts.append(f"{what}: {text}{suffix}")
    if staked <= 0:  # the message is built only when broken
        raise InvariantBroken(f"bet {bet_id} has no stake on any hand")
    outcome = outcomes[0] if len(set(outcomes)) == 1 else "mixed"
    return _line(bet_id, player_id, "main", outcome, staked, returned, remainder, "; ".join(parts))


def _line(bet_id: str, player_id: str, bet_type: str, outcome: str, staked: int, returned: int,
          remainder: Fraction, text: str) -> BetResult:
    # 0 <= n/d < 1 in integers (a Fraction's denominator is positive): two Fraction comparisons less
    if not (0 <= remainder.numerator < remainder.denominator or bet_type == "main"):  # message only when broken
        raise InvariantBroken(f"{bet_id}: remainder out of range")
    return BetResult(bet_id, player_id, bet_type, outcome, staked, returned,
                     remainder.numerator, remainder.denominator, text)


def _pair_line(rules: BlackjackRules, s: State, bet_id: str, player_id: str, spot: str, stake: int) -> BetResult:
    seat = spot if not spot.startswith("behind:") else f"{rules.spot_kind}:{spot.split(':')[1]}"
    a, b = s.first_two[seat]
    if a.rank == b.rank:
        p = win(stake, rules.odds_pair)
        return _line(bet_id, player_id, "pair", "win", stake, p.returned_minor, p.remainder,
                     f"{seat} first two cards {a} {b} are a pair: win {rules.odds_pair} "
                     f"{returns_text(stake, p.returned_minor)}")
    return _line(bet_id, player_id, "pair", "lose", stake, 0, ZERO,
                 f"{seat} first two cards {a} {b} are not a pair: lose {format_minor(stake)}")


def _insurance_line(rules: BlackjackRules, s: State, bet: Bet, spot: str, stake: int) -> BetResult:
    line_id = f"{bet.bet_id}:insurance"
    if dealer_blackjack(s):
        p = win(stake, rules.odds_insurance)
        return _line(line_id, bet.player_id, "insurance", "win", stake, p.returned_minor, p.remainder,
                     f"insurance on {spot}: dealer blackjack, win {rules.odds_insurance} "
                     f"{returns_text(stake, p.returned_minor)}")
    return _line(line_id, bet.player_id, "insurance", "lose", stake, 0, ZERO,
                 f"insurance on {spot}: {_describe_dealer(s)}, no blackjack: lose {format_minor(stake)}")


def settle(rules: BlackjackRules, s: State) -> list[BetResult]:
    results: list[BetResult] = []
    # the holder's insurance for the box, and (spielbank v2) each other player's own
    insured = {holder_bet(s, spot).bet_id: (spot, stake) for spot, stake in s.insurance.items()}
    for bet in s.bets:
        if bet.bet_type == "pair":
            results.append(_pair_line(rules, s, bet.bet_id, bet.player_id, bet.spot, bet.stake_minor))
            continue
        results.append(_main_line(rules, s, bet.bet_id, bet.player_id))
        if bet.bet_id in insured:
            results.append(_insurance_line(rules, s, bet, *insured[bet.bet_id]))
        elif bet.bet_id in s.follower_insurance:
            results.append(_insurance_line(rules, s, bet, bet.spot, s.follower_insurance[bet.bet_id]))
    return results

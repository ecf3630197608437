"""Blackjack bet placement checks and the box-holder rule (pure, no mutation)."""
from __future__ import annotations

from domain.blackjack_rules import BETS_PER_ROUND_MAX, BlackjackRules
from domain.blackjack_state import State
from domain.errors import refuse
from domain.model import Bet
from domain.money import check_stake_minor, format_minor
from domain.refusals import RefusalCode

BET_TYPES = ("main", "pair")


def parse_spot(rules: BlackjackRules, bet: Bet) -> tuple[str, int]:
    """(`seat`|`box`|`behind`, number); refuse a spot this table does not have."""
    kind, sep, num = bet.spot.partition(":")
    if not sep or not num.isdigit() or kind not in ("seat", "box", "behind"):
        raise refuse(
            RefusalCode.UNKNOWN_SPOT, "not-a-spot-or-behind" if rules.bet_behind else "not-a-spot", bet_id=bet.bet_id,
            spot=bet.spot, ruleset_id=rules.id, spot_kind=rules.spot_kind, spots_count=rules.spots_count)
    if kind == "behind" and not rules.bet_behind:
        raise refuse(RefusalCode.BET_NOT_OFFERED, "behind", bet_id=bet.bet_id, ruleset_id=rules.id)
    if kind != "behind" and kind != rules.spot_kind:
        raise refuse(
            RefusalCode.UNKNOWN_SPOT, "spot-kind", bet_id=bet.bet_id, ruleset_id=rules.id, spot_kind=rules.spot_kind,
            kind=kind, spot=bet.spot)
    n = int(num)
    if not 1 <= n <= rules.spots_count:
        raise refuse(
            RefusalCode.UNKNOWN_SPOT, bet_id=bet.bet_id, spot=bet.spot, ruleset_id=rules.id, spot_kind=rules.spot_kind,
            spots_count=rules.spots_count)
    return kind, n


def check_bet(rules: BlackjackRules, s: State, bet: Bet) -> None:
    """Refuse `bet` unless the rules and limits allow it on top of the bets already placed."""
    for b in s.bets:  # a loop, not any() of a generator: a frame made per bet placed
        if b.bet_id == bet.bet_id:
            raise refuse(RefusalCode.DUPLICATE_BET_ID, "blackjack", bet_id=bet.bet_id)
    if len(s.bets) >= BETS_PER_ROUND_MAX:
        raise refuse(RefusalCode.TOO_MANY_BETS, bet_id=bet.bet_id, bets_max=BETS_PER_ROUND_MAX)
    check_stake_minor(bet.stake_minor, bet.bet_id)
    kind, n = parse_spot(rules, bet)
    if bet.bet_type not in BET_TYPES or (bet.bet_type == "pair" and not rules.pair_side_bet):
        raise refuse(
            RefusalCode.BET_NOT_OFFERED, "bet-type", bet_id=bet.bet_id, bet_type=bet.bet_type, ruleset_id=rules.id,
            version=rules.version)
    limit_key = "pair" if bet.bet_type == "pair" else ("behind" if kind == "behind" else "main")
    limit = rules.limit_for(limit_key)
    if not limit.min_minor <= bet.stake_minor <= limit.max_minor:  # the bet's name only when refusing
        rules.check_stake(limit_key, bet.stake_minor, _what(bet))
    minimum = limit.min_minor
    if rules.stake_divisible_by_min and bet.stake_minor % minimum:
        what = _what(bet)
        raise refuse(
            RefusalCode.STAKE_NOT_DIVISIBLE, what=what, stake=format_minor(bet.stake_minor),
            minimum=format_minor(minimum))
    if bet.bet_type == "pair":
        _check_pair(rules, s, bet)
    elif kind == "behind":
        _check_behind(rules, s, bet, n)
    else:
        _check_main(rules, s, bet)


def _what(bet: Bet) -> str:
    return f"bet {bet.bet_id} ({bet.bet_type} on {bet.spot})"


def _mains(s: State, spot: str) -> list[Bet]:
    return [b for b in s.bets if b.bet_type == "main" and b.spot == spot]


def _check_main(rules: BlackjackRules, s: State, bet: Bet) -> None:
    on_spot = _mains(s, bet.spot)
    if any(b.player_id == bet.player_id for b in on_spot):
        raise refuse(RefusalCode.DUPLICATE_BET, bet_id=bet.bet_id, player_id=bet.player_id, spot=bet.spot)
    if on_spot and rules.stakes_per_box_max == 1:
        raise refuse(RefusalCode.SEAT_TAKEN, bet_id=bet.bet_id, spot=bet.spot, player_id=on_spot[0].player_id)
    if len(on_spot) >= rules.stakes_per_box_max:
        raise refuse(
            RefusalCode.BOX_FULL, bet_id=bet.bet_id, spot=bet.spot, stakes=len(on_spot), ruleset_id=rules.id)
    if any(b.player_id == bet.player_id and b.spot.startswith("behind:") for b in s.bets):
        raise refuse(RefusalCode.SEATED_PLAYER_BEHIND, "takes-seat", bet_id=bet.bet_id, player_id=bet.player_id)
    own = {b.spot for b in s.bets if b.player_id == bet.player_id and b.bet_type == "main"
           and b.spot.startswith(rules.spot_kind + ":")}
    if own and rules.boxes_per_player_max == 1:
        raise refuse(RefusalCode.PLAYER_ALREADY_SEATED, bet_id=bet.bet_id, player_id=bet.player_id, seat=min(own))
    if rules.seat_no_per_player and bet.seat_no is not None:
        _check_seat_no(s, bet)
    if len(own) >= rules.boxes_per_player_max:
        raise refuse(
            RefusalCode.TOO_MANY_BOXES, bet_id=bet.bet_id, player_id=bet.player_id, count=len(own),
            boxes=', '.join(sorted(own)), ruleset_id=rules.id)
    if rules.max_applies_to_box_total:
        total = sum(b.stake_minor for b in on_spot) + bet.stake_minor
        maximum = rules.limit_for("main").max_minor
        if total > maximum:
            raise refuse(
                RefusalCode.STAKE_ABOVE_MAXIMUM, "box-total", bet_id=bet.bet_id, spot=bet.spot,
                total=format_minor(total), maximum=format_minor(maximum))


def _check_seat_no(s: State, bet: Bet) -> None:
    """The holder rule reads seat numbers: one player per seat number, one seat number per player."""
    for b in s.bets:
        if b.seat_no is None:
            continue
        if b.seat_no == bet.seat_no and b.player_id != bet.player_id:
            raise refuse(
                RefusalCode.SEAT_TAKEN, "seat-no", bet_id=bet.bet_id, seat_no=bet.seat_no, player_id=b.player_id)
        if b.player_id == bet.player_id and b.seat_no != bet.seat_no:
            raise refuse(
                RefusalCode.PLAYER_ALREADY_SEATED, "seat-no", bet_id=bet.bet_id, player_id=bet.player_id,
                own_seat_no=b.seat_no, seat_no=bet.seat_no)


def _check_behind(rules: BlackjackRules, s: State, bet: Bet, n: int) -> None:
    seat = f"{rules.spot_kind}:{n}"
    if not _mains(s, seat):
        raise refuse(RefusalCode.BEHIND_WITHOUT_SEAT, bet_id=bet.bet_id, seat=seat)
    if any(b.player_id == bet.player_id and b.spot.startswith(rules.spot_kind + ":") for b in s.bets):
        raise refuse(RefusalCode.SEATED_PLAYER_BEHIND, bet_id=bet.bet_id, player_id=bet.player_id)
    behind = _mains(s, bet.spot)
    if any(b.player_id == bet.player_id for b in behind):
        raise refuse(RefusalCode.DUPLICATE_BET, "behind", bet_id=bet.bet_id, player_id=bet.player_id, seat=seat)
    if len(behind) >= rules.behind_bets_per_seat_max:
        raise refuse(
            RefusalCode.TOO_MANY_BETS, "behind", bet_id=bet.bet_id, seat=seat, count=len(behind), ruleset_id=rules.id)


def _check_pair(rules: BlackjackRules, s: State, bet: Bet) -> None:
    mine = [b for b in s.bets if b.player_id == bet.player_id and b.spot == bet.spot]
    if rules.pair_requires_main and not any(b.bet_type == "main" for b in mine):
        raise refuse(RefusalCode.SIDE_BET_WITHOUT_MAIN, bet_id=bet.bet_id, spot=bet.spot, player_id=bet.player_id)
    if any(b.bet_type == "pair" for b in mine):
        raise refuse(RefusalCode.DUPLICATE_BET, "pair", bet_id=bet.bet_id, player_id=bet.player_id, spot=bet.spot)


def box_holder(rules: BlackjackRules, spot: str, mains: list[Bet]) -> Bet:
    """The bet whose player decides for `spot` (spielbank seed 002, "Boxinhaber").

    Reading: the player whose own seat number equals the box number; else, of
    the stakers with a seat number, the next lower seat (counting down from the
    box, wrapping round to the highest seat); a box where no staker gave a seat
    number is held by its first stake.
    """
    if rules.box_holder_rule == "only_staker" or len(mains) == 1:
        return mains[0]
    box = int(spot.split(":")[1])
    seated = [(b.seat_no, b) for b in mains if b.seat_no is not None]
    if not seated:
        return mains[0]
    own = [b for seat, b in seated if seat == box]
    if own:
        return own[0]
    lower = [(seat, b) for seat, b in seated if seat < box]
    return max(lower or seated, key=lambda seat_and_bet: seat_and_bet[0])[1]

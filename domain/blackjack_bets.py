"""Blackjack bet placement checks and the box-holder rule (pure, no mutation)."""
from __future__ import annotations

from domain.blackjack_rules import BETS_PER_ROUND_MAX, BlackjackRules
from domain.blackjack_state import State
from domain.errors import Refusal
from domain.model import Bet
from domain.money import check_stake_minor, format_minor
from domain.refusals import RefusalCode

BET_TYPES = ("main", "pair")


def parse_spot(rules: BlackjackRules, bet: Bet) -> tuple[str, int]:
    """(`seat`|`box`|`behind`, number); refuse a spot this table does not have."""
    kind, sep, num = bet.spot.partition(":")
    if not sep or not num.isdigit() or kind not in ("seat", "box", "behind"):
        raise Refusal(RefusalCode.UNKNOWN_SPOT, f"bet {bet.bet_id}: spot {bet.spot!r} is not a spot of {rules.id}; "
                                      f"use {rules.spot_kind}:1..{rules.spots_count}"
                                      + (f" or behind:1..{rules.spots_count}" if rules.bet_behind else ""))
    if kind == "behind" and not rules.bet_behind:
        raise Refusal(RefusalCode.BET_NOT_OFFERED, f"bet {bet.bet_id}: bet behind is not offered under {rules.id}")
    if kind != "behind" and kind != rules.spot_kind:
        raise Refusal(RefusalCode.UNKNOWN_SPOT, f"bet {bet.bet_id}: {rules.id} has {rules.spot_kind}s, not {kind}s ({bet.spot})")
    n = int(num)
    if not 1 <= n <= rules.spots_count:
        raise Refusal(RefusalCode.UNKNOWN_SPOT, f"bet {bet.bet_id}: {bet.spot} does not exist; {rules.id} has "
                                      f"{rules.spot_kind}s 1..{rules.spots_count}")
    return kind, n


def check_bet(rules: BlackjackRules, s: State, bet: Bet) -> None:
    """Refuse `bet` unless the rules and limits allow it on top of the bets already placed."""
    if any(b.bet_id == bet.bet_id for b in s.bets):
        raise Refusal(RefusalCode.DUPLICATE_BET_ID, f"bet {bet.bet_id} was already placed in this round")
    if len(s.bets) >= BETS_PER_ROUND_MAX:
        raise Refusal(RefusalCode.TOO_MANY_BETS, f"bet {bet.bet_id}: a round takes at most {BETS_PER_ROUND_MAX} bets")
    check_stake_minor(bet.stake_minor, bet.bet_id)
    kind, n = parse_spot(rules, bet)
    if bet.bet_type not in BET_TYPES or (bet.bet_type == "pair" and not rules.pair_side_bet):
        raise Refusal(RefusalCode.BET_NOT_OFFERED, f"bet {bet.bet_id}: bet type {bet.bet_type!r} is not offered under "
                                         f"{rules.id} v{rules.version}")
    limit_key = "pair" if bet.bet_type == "pair" else ("behind" if kind == "behind" else "main")
    limit = rules.limit_for(limit_key)
    if not limit.min_minor <= bet.stake_minor <= limit.max_minor:  # the bet's name only when refusing
        rules.check_stake(limit_key, bet.stake_minor, _what(bet))
    minimum = limit.min_minor
    if rules.stake_divisible_by_min and bet.stake_minor % minimum:
        what = _what(bet)
        raise Refusal(RefusalCode.STAKE_NOT_DIVISIBLE, f"{what}: stake {format_minor(bet.stake_minor)} is not divisible by "
                                             f"the table minimum {format_minor(minimum)}")
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
        raise Refusal(RefusalCode.DUPLICATE_BET, f"bet {bet.bet_id}: player {bet.player_id} already has a main bet on {bet.spot}")
    if on_spot and rules.stakes_per_box_max == 1:
        raise Refusal(RefusalCode.SEAT_TAKEN, f"bet {bet.bet_id}: {bet.spot} is taken by player {on_spot[0].player_id}")
    if len(on_spot) >= rules.stakes_per_box_max:
        raise Refusal(RefusalCode.BOX_FULL, f"bet {bet.bet_id}: {bet.spot} already holds {len(on_spot)} stakes, the maximum "
                                  f"per box under {rules.id}")
    if any(b.player_id == bet.player_id and b.spot.startswith("behind:") for b in s.bets):
        raise Refusal(RefusalCode.SEATED_PLAYER_BEHIND, f"bet {bet.bet_id}: player {bet.player_id} bets behind this round "
                                              "and cannot also take a seat")
    own = {b.spot for b in s.bets if b.player_id == bet.player_id and b.bet_type == "main"
           and b.spot.startswith(rules.spot_kind + ":")}
    if own and rules.boxes_per_player_max == 1:
        raise Refusal(RefusalCode.PLAYER_ALREADY_SEATED, f"bet {bet.bet_id}: player {bet.player_id} already sits at "
                                               f"{min(own)}; a player takes at most one seat")
    if rules.seat_no_per_player and bet.seat_no is not None:
        _check_seat_no(s, bet)
    if len(own) >= rules.boxes_per_player_max:
        raise Refusal(RefusalCode.TOO_MANY_BOXES, f"bet {bet.bet_id}: player {bet.player_id} already plays "
                                        f"{len(own)} boxes ({', '.join(sorted(own))}), the maximum under {rules.id}")
    if rules.max_applies_to_box_total:
        total = sum(b.stake_minor for b in on_spot) + bet.stake_minor
        maximum = rules.limit_for("main").max_minor
        if total > maximum:
            raise Refusal(RefusalCode.STAKE_ABOVE_MAXIMUM, f"bet {bet.bet_id}: stakes on {bet.spot} would total "
                                                 f"{format_minor(total)}, above the box maximum {format_minor(maximum)}")


def _check_seat_no(s: State, bet: Bet) -> None:
    """The holder rule reads seat numbers: one player per seat number, one seat number per player."""
    for b in s.bets:
        if b.seat_no is None:
            continue
        if b.seat_no == bet.seat_no and b.player_id != bet.player_id:
            raise Refusal(RefusalCode.SEAT_TAKEN, f"bet {bet.bet_id}: seat {bet.seat_no} is player {b.player_id}'s "
                                                  "this round; the box-holder rule reads one player per seat")
        if b.player_id == bet.player_id and b.seat_no != bet.seat_no:
            raise Refusal(RefusalCode.PLAYER_ALREADY_SEATED, f"bet {bet.bet_id}: player {bet.player_id} sits at seat "
                                                             f"{b.seat_no} this round, not seat {bet.seat_no}")


def _check_behind(rules: BlackjackRules, s: State, bet: Bet, n: int) -> None:
    seat = f"{rules.spot_kind}:{n}"
    if not _mains(s, seat):
        raise Refusal(RefusalCode.BEHIND_WITHOUT_SEAT, f"bet {bet.bet_id}: nobody has a main bet on {seat} yet; "
                                             "a bet behind follows a seated player's main bet")
    if any(b.player_id == bet.player_id and b.spot.startswith(rules.spot_kind + ":") for b in s.bets):
        raise Refusal(RefusalCode.SEATED_PLAYER_BEHIND, f"bet {bet.bet_id}: player {bet.player_id} is seated and "
                                              "cannot also bet behind")
    behind = _mains(s, bet.spot)
    if any(b.player_id == bet.player_id for b in behind):
        raise Refusal(RefusalCode.DUPLICATE_BET, f"bet {bet.bet_id}: player {bet.player_id} already bets behind {seat}")
    if len(behind) >= rules.behind_bets_per_seat_max:
        raise Refusal(RefusalCode.TOO_MANY_BETS, f"bet {bet.bet_id}: {seat} already has {len(behind)} bets behind, the "
                                       f"maximum under {rules.id}")


def _check_pair(rules: BlackjackRules, s: State, bet: Bet) -> None:
    mine = [b for b in s.bets if b.player_id == bet.player_id and b.spot == bet.spot]
    if rules.pair_requires_main and not any(b.bet_type == "main" for b in mine):
        raise Refusal(RefusalCode.SIDE_BET_WITHOUT_MAIN, f"bet {bet.bet_id}: the Pair side bet on {bet.spot} needs "
                                               f"player {bet.player_id}'s main bet there first")
    if any(b.bet_type == "pair" for b in mine):
        raise Refusal(RefusalCode.DUPLICATE_BET, f"bet {bet.bet_id}: player {bet.player_id} already has a Pair bet on {bet.spot}")


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

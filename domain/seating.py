"""Seats that span rounds (`blackjack/live-8d` v2, seed 000): pure rules, no I/O.

Seed 000: "a player takes at most one seat"; "a seated player who takes no
action in a round loses the seat afterwards"; "a seated player cannot also bet
behind". A round alone cannot see any of that, so the ledger keeps a `Seating`
per table (ledger/table.py) and asks `check_bet` before a round takes a bet,
then `after_round` when a round closes.

What the rules here say (rule-set fields `seats_span_rounds`,
`seat_lost_after_no_action`, `seat_lost_wait_rounds`):
- A main bet on a free seat seats its player; the seat stays theirs from round
  to round. Another player's main bet on it is refused `seat_held`; the
  holder's main bet on another seat `player_already_seated`; the holder's bet
  behind (main or Pair) `seated_player_behind`.
- "Takes no action" (Decision): in a closed round, the player's seat was asked
  for at least one decision and none came from the player (`source` other than
  `player`: the timeout rule, a pause that completed the hand); or the holder
  placed no main bet at all in a round of the table. Either loses the seat
  after that round. A hand that needed no decision (a blackjack) is not "no
  action".
- Re-seating (Decision): the lost seat is free for every other player from the
  next round on. Its former holder is refused on that seat (`seat_lost`) for
  `seat_lost_wait_rounds` rounds (v2: 1), so the freed seat is offered to
  others for one full round even when an idle client rebets automatically;
  they may take another free seat or bet behind meanwhile, and that seat, if
  still free, afterwards. Re-seating is just a main bet on a free seat.
- A voided round changes nobody's seat and records nothing (nobody could act in it); a round that
  closes after a later round already closed (a reversal and resettlement) does
  not move seats back.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeGuard

from domain.blackjack_rules import SPOTS_MAX, BlackjackRules
from domain.errors import refuse, require
from domain.model import Bet
from domain.refusals import RefusalCode

ACTING_SOURCES = ("player",)  # decisions that count as the seated player's own action


class Held(NamedTuple):
    spot: str  # seat:N
    player_id: str
    since_round_no: int


class Loss(NamedTuple):
    spot: str
    player_id: str
    round_no: int  # the round in which the player took no action


class SeatPlay(NamedTuple):
    """What one closed round says about one seat's main bet."""

    spot: str
    player_id: str
    asked: bool  # the round asked at least one decision of this seat
    acted: bool  # at least one of them came from the player


@dataclass(frozen=True, slots=True)
class Seating:
    held: tuple[Held, ...] = ()  # by seat number
    lost: tuple[Loss, ...] = ()  # losses whose wait may still refuse a later round
    last_round_no: int = 0  # the latest closed round that moved seats

    def holder(self, spot: str) -> Held | None:
        return next((h for h in self.held if h.spot == spot), None)

    def seat_of(self, player_id: str) -> Held | None:
        return next((h for h in self.held if h.player_id == player_id), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "held": [list(h) for h in self.held],
            "lost": [list(x) for x in self.lost],
            "last_round_no": self.last_round_no,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Seating:
        held = data.get("held", [])
        lost = data.get("lost", [])
        require(isinstance(held, list) and isinstance(lost, list), "seating: held and lost are lists")
        last = data.get("last_round_no", 0)
        require(type(last) is int, "seating: last_round_no is an int")
        return cls(tuple(Held(*h) for h in held), tuple(Loss(*x) for x in lost), int(last))


def spans_rounds(rules: object) -> TypeGuard[BlackjackRules]:
    """Does this rule set keep seats across rounds (so the ledger keeps the table's seating)?"""
    return isinstance(rules, BlackjackRules) and rules.seats_span_rounds


def check_bet(rules: BlackjackRules, seating: Seating, bet: Bet, round_no: int) -> None:
    """Refuse `bet` in round `round_no` when seats held or lost in earlier rounds forbid it."""
    if not rules.seats_span_rounds:
        return
    kind, _, _ = bet.spot.partition(":")
    mine = seating.seat_of(bet.player_id)
    if kind == "behind":
        if mine is not None:
            raise refuse(
                RefusalCode.SEATED_PLAYER_BEHIND, "holds", bet_id=bet.bet_id, player_id=bet.player_id, seat=mine.spot,
                since_round_no=mine.since_round_no)
        return
    if kind != rules.spot_kind or bet.bet_type != "main":
        return  # a Pair bet on a seat needs the main bet there first (the round checks that)
    holder = seating.holder(bet.spot)
    if holder is not None and holder.player_id != bet.player_id:
        raise refuse(
            RefusalCode.SEAT_HELD, bet_id=bet.bet_id, spot=bet.spot, holder=holder.player_id,
            round_no=holder.since_round_no)
    if mine is not None and mine.spot != bet.spot:
        raise refuse(
            RefusalCode.PLAYER_ALREADY_SEATED, "held", bet_id=bet.bet_id, player_id=bet.player_id, seat=mine.spot,
            since_round_no=mine.since_round_no)
    for loss in seating.lost:
        free_from = loss.round_no + rules.seat_lost_wait_rounds + 1
        if loss.spot == bet.spot and loss.player_id == bet.player_id and round_no < free_from:
            raise refuse(
                RefusalCode.SEAT_LOST, bet_id=bet.bet_id, player_id=bet.player_id, spot=bet.spot,
                lost_round_no=loss.round_no, free_round_no=free_from)


def seat_plays(rules: BlackjackRules, bets: Iterable[Bet], decisions: Iterable[tuple[str, str]]) -> list[SeatPlay]:
    """Each seat's main bet in a closed round, and whether the round asked / the player acted.
    `decisions`: (hand, source) of every decision recorded, hands `seat:N` or `seat:N.k`."""
    by_spot: dict[str, tuple[bool, bool]] = {}
    for hand, source in decisions:
        spot = hand.split(".")[0]
        asked, acted = by_spot.get(spot, (False, False))
        by_spot[spot] = (True, acted or source in ACTING_SOURCES)
    prefix = rules.spot_kind + ":"
    return [
        SeatPlay(b.spot, b.player_id, *by_spot.get(b.spot, (False, False)))
        for b in bets
        if b.bet_type == "main" and b.spot.startswith(prefix)
    ]


def after_round(rules: BlackjackRules, seating: Seating, round_no: int, plays: list[SeatPlay],
                voided: bool = False) -> Seating:
    """The seats after round `round_no` closed with `plays` (see the module doc)."""
    require(len(plays) <= SPOTS_MAX, f"round {round_no}: {len(plays)} seats played, at most {SPOTS_MAX}")
    if not rules.seats_span_rounds or round_no <= seating.last_round_no or voided:
        return seating
    held: dict[str, Held] = {}
    lost = [x for x in seating.lost if x.round_no + rules.seat_lost_wait_rounds > round_no]
    played = {p.spot: p for p in plays}
    for h in seating.held:
        if h.spot not in played and rules.seat_lost_after_no_action:
            lost.append(Loss(h.spot, h.player_id, round_no))  # seated, no bet: no action this round
        elif h.spot not in played:
            held[h.spot] = h
    for p in plays:
        before = seating.holder(p.spot)
        since = before.since_round_no if before is not None and before.player_id == p.player_id else round_no
        if p.asked and not p.acted and rules.seat_lost_after_no_action:
            lost.append(Loss(p.spot, p.player_id, round_no))
        else:
            held[p.spot] = Held(p.spot, p.player_id, since)
    if rules.seat_lost_wait_rounds == 0:
        lost = []
    return Seating(tuple(sorted(held.values(), key=lambda h: _number(h.spot))),
                   tuple(sorted(lost, key=lambda x: (x.round_no, _number(x.spot)))), round_no)


def _number(spot: str) -> int:
    return int(spot.split(":")[1])

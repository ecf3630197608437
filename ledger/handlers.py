"""One function per feed command, looked up in `HANDLERS` by the command's class.

A handler gets its aggregates from the unit of work (ledger/unit.py), calls them (they
check, decide and record), and returns the consequence of a human error, if any (a
refusal whose round still recorded what the error policy makes of it), else None. A
refusal is raised. The rules that span aggregates are the named functions below the
table: a round's cards counted against its shoe and seats moved on its table when the
round closes (`round_closed`), seats held across rounds checked before a bet
(`check_seats`), the shoe's cards seen so far for a card dealt (`deal_card`), the
table's configuration applied when a round opens (`open_round`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain import registry
from domain.cards import parse_card
from domain.errors import Refusal, refuse
from domain.model import Bet
from domain.operators import DEFAULT_OPERATOR_ID, player_key
from domain.refusals import RefusalCode
from domain.ruleset import BetLimit
from domain.seating import spans_rounds
from domain.tableconfig import TableSettings
from ledger.commands import (
    CloseBetting,
    ConfigureOperator,
    ConfigureTable,
    DealCard,
    Decide,
    Follow,
    OpenRound,
    Pause,
    PlaceBet,
    Resume,
    ReverseSettlement,
    RoundCommand,
    Void,
)
from ledger.library.aggregate import Stamp
from ledger.round import Round
from ledger.unit import UnitOfWork

Handler = Callable[[Any, UnitOfWork, Stamp], Refusal | None]
_new = tuple.__new__


def open_round(cmd: OpenRound, unit: UnitOfWork, stamp: Stamp) -> None:
    r = unit.round_or_new(cmd.table_id, cmd.round_no)
    r.known_as(cmd.table_id, cmd.round_no)
    r.refuse_if_exists()
    rules = registry.get_rule_set(cmd.ruleset_id, cmd.ruleset_version)
    table = unit.table(cmd.table_id)
    applied = None
    if table is not None and table.current is not None:  # configured: its current configuration
        config = table.config_for_round(
            ruleset_id=cmd.ruleset_id, ruleset_version=cmd.ruleset_version, currency=cmd.currency,
            round_no=cmd.round_no)
        applied = (config.config_version, config.config_hash, config.settings)
    shoe = unit.shoe_or_new(cmd.table_id, cmd.shoe_id)
    round_in_shoe = shoe.start_round(
        stamp, rules, table_id=cmd.table_id, shoe_id=cmd.shoe_id, round_no=cmd.round_no, round_id=r.id,
    )
    r.open(
        stamp, rules, table_id=cmd.table_id, round_no=cmd.round_no, currency=cmd.currency, shoe_id=cmd.shoe_id,
        dealer_id=cmd.dealer_id, round_in_shoe=round_in_shoe, table=applied,
    )
    unit.opened_shoes[cmd.table_id] = shoe.id


def configure_table(cmd: ConfigureTable, unit: UnitOfWork, stamp: Stamp) -> None:
    unit.table_or_new(cmd.table_id).configure(
        stamp, table_id=cmd.table_id, game=cmd.game, ruleset_id=cmd.ruleset_id,
        ruleset_version=cmd.ruleset_version, currency=cmd.currency, timezone=cmd.timezone,
        settings=settings_of(cmd),
    )


def configure_operator(cmd: ConfigureOperator, unit: UnitOfWork, stamp: Stamp) -> None:
    unit.operator_or_new(cmd.operator_id).configure(
        stamp, operator_id=cmd.operator_id, name=cmd.name, currencies=list(cmd.currencies), timezone=cmd.timezone,
        jurisdictions=list(cmd.jurisdictions))


def place_bet(cmd: PlaceBet, unit: UnitOfWork, stamp: Stamp) -> None:
    r = opened_round(unit, cmd)
    before = r.phase
    operator_id = cmd.operator_id or DEFAULT_OPERATOR_ID
    player = cmd.player_id
    if operator_id != DEFAULT_OPERATOR_ID:  # the default operator plays unconfigured (domain/operators.py)
        r.refuse_unless_running()  # a closed round says so before the operator does
        unit.operator_or_new(operator_id).check_bet(cmd.bet_id, r.currency)
        player = player_key(operator_id, player)
    # tuple.__new__: a NamedTuple's own __new__ is a Python function (~0.1 µs a bet)
    bet = _new(Bet, (cmd.bet_id, player, cmd.spot, cmd.bet_type, cmd.stake_minor, cmd.mode, cmd.seat_no))
    check_seats(unit, r, bet)
    r.place_bet(bet, stamp, operator_id)
    if r.phase != before:  # most commands leave the phase as it was: no call
        round_closed(unit, r, before, stamp)


def close_betting(cmd: CloseBetting, unit: UnitOfWork, stamp: Stamp) -> None:
    r = opened_round(unit, cmd)
    before = r.phase
    r.close_betting(stamp)
    if r.phase != before:
        round_closed(unit, r, before, stamp)


def deal_card(cmd: DealCard, unit: UnitOfWork, stamp: Stamp) -> Refusal | None:
    """A card the rules forbid is a human error: its consequence is recorded, the card refused."""
    r = opened_round(unit, cmd)
    before = r.phase
    r.refuse_unless_running(allow_flagged=True)  # before the shoe: a voided tombstone has none
    seen = unit.shoe_of(r).seen_for(r._rules())
    consequence = r.deal_card(parse_card(cmd.card), cmd.target, cmd.seq_no, seen, stamp)
    if r.phase != before:
        round_closed(unit, r, before, stamp)
    return consequence


def decide(cmd: Decide, unit: UnitOfWork, stamp: Stamp) -> None:
    r = opened_round(unit, cmd)
    before = r.phase
    player = None if cmd.player_id is None else player_key(cmd.operator_id, cmd.player_id)
    r.decide(cmd.hand, cmd.action, cmd.source, cmd.amount_minor, stamp, player_id=player)
    if r.phase != before:
        round_closed(unit, r, before, stamp)


def follow(cmd: Follow, unit: UnitOfWork, stamp: Stamp) -> None:
    r = opened_round(unit, cmd)
    before = r.phase
    r.follow(cmd.bet_id, cmd.kind, cmd.accept, stamp)
    if r.phase != before:
        round_closed(unit, r, before, stamp)


def pause(cmd: Pause, unit: UnitOfWork, stamp: Stamp) -> None:
    r = opened_round(unit, cmd)
    before = r.phase
    player = None if cmd.player_id is None else player_key(cmd.operator_id, cmd.player_id)
    r.pause(cmd.cause, cmd.by, cmd.note, player, stamp)
    if r.phase != before:
        round_closed(unit, r, before, stamp)


def resume(cmd: Resume, unit: UnitOfWork, stamp: Stamp) -> None:
    r = opened_round(unit, cmd)
    before = r.phase
    r.resume(cmd.by, cmd.note, stamp)
    if r.phase != before:
        round_closed(unit, r, before, stamp)


def void(cmd: Void, unit: UnitOfWork, stamp: Stamp) -> None:
    """A void may come before the round's open: it then leaves a tombstone."""
    r = unit.round_or_new(cmd.table_id, cmd.round_no)
    r.known_as(cmd.table_id, cmd.round_no)
    before = r.phase
    r.void(cmd.cause, cmd.by, cmd.note, stamp)
    if r.phase != before:
        round_closed(unit, r, before, stamp)


def reverse_settlement(cmd: ReverseSettlement, unit: UnitOfWork, stamp: Stamp) -> None:
    """The shoe is long gone: no shoe effects."""
    opened_round(unit, cmd).reverse_settlement(cmd.by, cmd.reason, cmd.then, cmd.cause, stamp)


HANDLERS: dict[type, Handler] = {
    OpenRound: open_round,
    ConfigureTable: configure_table,
    ConfigureOperator: configure_operator,
    PlaceBet: place_bet,
    CloseBetting: close_betting,
    DealCard: deal_card,
    Decide: decide,
    Follow: follow,
    Pause: pause,
    Resume: resume,
    Void: void,
    ReverseSettlement: reverse_settlement,
}


# ---------------------------------------------------------------- rules across aggregates

def opened_round(unit: UnitOfWork, cmd: RoundCommand) -> Round:
    """The command's round; refused when it was never opened (nor voided)."""
    found = unit.round(cmd.table_id, cmd.round_no)
    # version 0: an empty Round kept in memory by an open_round refused earlier in this batch;
    # it is refused as if the batch had ended there (same message whatever the batch size)
    if found is None or found.version <= 0:
        raise refuse(RefusalCode.ROUND_NOT_OPEN, table_id=cmd.table_id, round_no=cmd.round_no)
    if not found.table_id:  # an opened round knows its name; a tombstone is told it (no call per command)
        found.known_as(cmd.table_id, cmd.round_no)
    return found


def check_seats(unit: UnitOfWork, r: Round, bet: Bet) -> None:
    """Seats held or lost in earlier rounds of the table (live-8d v2, domain/seating.py)."""
    r.refuse_unless_running()  # a closed round says so before any seat does
    rules = r.rules
    if spans_rounds(rules):
        unit.table_or_new(r.table_id).check_bet(rules, bet, r.round_no)


def round_closed(unit: UnitOfWork, r: Round, phase_before: str, stamp: Stamp) -> None:
    """Shoe effects when a round closes in this command: its cards count
    against the shoe; a void under a replace-the-shoe policy retires it. The handlers
    call it only when the command moved the round's phase."""
    if phase_before == r.phase or not r.is_closed:  # most commands: no rule set lookup
        return
    rules = r.rules
    if rules is None:
        return
    shoe = unit.shoe_of(r)
    shoe.record_round(stamp, rules, r.id, r.closing_cards())
    if spans_rounds(rules):
        unit.table_or_new(r.table_id).round_closed(stamp, rules, r)
    if r.phase == "voided" and r.voided is not None and rules.error_policy.replace_shoe_on_void:
        shoe.retire(stamp, r.id, r.voided["cause"])


def settings_of(cmd: ConfigureTable) -> TableSettings:
    """The command's overrides of the rule set, as the pure rules take them."""
    limits = tuple((t, BetLimit(v.min_minor, v.max_minor) if v.min_minor <= v.max_minor else _bad_limit(cmd, t))
                   for t, v in sorted((cmd.limits or {}).items()))
    return TableSettings(
        limits=limits, stake_divisible_by_min=cmd.stake_divisible_by_min, spots_count=cmd.spots_count,
        stakes_per_box_max=cmd.stakes_per_box_max, boxes_per_player_max=cmd.boxes_per_player_max,
        difference_max_minor=cmd.difference_max_minor,
    )


def _bad_limit(cmd: ConfigureTable, bet_type: str) -> BetLimit:
    raise refuse(RefusalCode.TABLE_LIMIT_FORBIDDEN, "min-above-max", table_id=cmd.table_id, bet_type=bet_type)

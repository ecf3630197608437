"""The records of ledger/round.py's events, as read (ledger/records.py re-exports them).

Derived from the event classes by `python -m ledger.records --write`: do not edit by hand
(tests/unit/ledger/test_records_derived.py fails when this file is not what it derives).
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from domain.model import StakeMove
from ledger.records_lines import Postings, Refund, SettlementLine


class Opened(NamedTuple):
    """`Round.Opened` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    round_no: int
    game: str
    ruleset_id: str
    ruleset_version: int
    ruleset_hash: str
    currency: str
    shoe_id: str
    round_in_shoe: int
    dealer_id: str


class TableApplied(NamedTuple):
    """`Round.TableApplied` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    config_version: int
    config_hash: str
    settings: dict[str, Any]


class BetPlaced(NamedTuple):
    """`Round.BetPlaced` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    bet_id: str
    player_id: str
    spot: str
    bet_type: str
    stake_minor: int
    mode: str | None
    seat_no: int | None
    postings: Postings
    operator_id: str = 'default'


class BettingClosed(NamedTuple):
    """`Round.BettingClosed` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str


class CardDealt(NamedTuple):
    """`Round.CardDealt` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    card: str
    target: str
    seq_no: int


class DecisionTaken(NamedTuple):
    """`Round.DecisionTaken` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    hand: str
    action: str
    source: str
    amount_minor: int | None
    stake_moves: tuple[StakeMove, ...]
    postings: Postings


class FollowDecided(NamedTuple):
    """`Round.FollowDecided` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    bet_id: str
    kind: str
    accept: bool
    stake_moves: tuple[StakeMove, ...]
    postings: Postings


class Paused(NamedTuple):
    """`Round.Paused` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    flag_code: str | None


class Interrupted(NamedTuple):
    """`Round.Interrupted` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    player_id: str
    action: str


class Resumed(NamedTuple):
    """`Round.Resumed` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    by: str
    note: str


class Voided(NamedTuple):
    """`Round.Voided` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    cause: str
    by: str
    note: str
    refunds: tuple[Refund, ...]
    postings: Postings


class Settled(NamedTuple):
    """`Round.Settled` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    settlement_no: int
    ruleset_id: str
    ruleset_version: int
    results: tuple[SettlementLine, ...]
    postings: Postings


class SettlementReversed(NamedTuple):
    """`Round.SettlementReversed` as read (ledger.round)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    settlement_no: int
    by: str
    reason: str
    postings: Postings


# Record type -> its stored event name (the topic after the module), as audit files
# and timelines show it.
EVENT_NAMES: dict[type, str] = {
    Opened: "Round.Opened",
    TableApplied: "Round.TableApplied",
    BetPlaced: "Round.BetPlaced",
    BettingClosed: "Round.BettingClosed",
    CardDealt: "Round.CardDealt",
    DecisionTaken: "Round.DecisionTaken",
    FollowDecided: "Round.FollowDecided",
    Paused: "Round.Paused",
    Interrupted: "Round.Interrupted",
    Resumed: "Round.Resumed",
    Voided: "Round.Voided",
    Settled: "Round.Settled",
    SettlementReversed: "Round.SettlementReversed",
}

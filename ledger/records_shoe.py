"""The records of ledger/shoe.py's events, as read (ledger/records.py re-exports them).

Derived from the event classes by `python -m ledger.records --write`: do not edit by hand
(tests/unit/ledger/test_records_derived.py fails when this file is not what it derives).
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple


class ShoeStarted(NamedTuple):
    """`Shoe.Started` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    shoe_id: str
    game: str
    decks: int


class ShoeRoundStarted(NamedTuple):
    """`Shoe.RoundStarted` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    round_id: str
    round_no: int
    round_in_shoe: int


class ShoeCardsRecorded(NamedTuple):
    """`Shoe.CardsRecorded` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    round_id: str
    cards: tuple[str, ...]


class ShoeRetired(NamedTuple):
    """`Shoe.Retired` as read (ledger.shoe)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    round_id: str
    cause: str


# Record type -> its stored event name (the topic after the module), as audit files
# and timelines show it.
EVENT_NAMES: dict[type, str] = {
    ShoeStarted: "Shoe.Started",
    ShoeRoundStarted: "Shoe.RoundStarted",
    ShoeCardsRecorded: "Shoe.CardsRecorded",
    ShoeRetired: "Shoe.Retired",
}

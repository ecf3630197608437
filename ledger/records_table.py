"""The records of ledger/table.py's events, as read (ledger/records.py re-exports them).

Derived from the event classes by `python -m ledger.records --write`: do not edit by hand
(tests/unit/ledger/test_records_derived.py fails when this file is not what it derives).
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple


class TableConfigured(NamedTuple):
    """`Table.Configured` as read (ledger.table)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    config_version: int
    config_hash: str
    game: str
    ruleset_id: str
    ruleset_version: int
    currency: str
    timezone: str
    settings: dict[str, Any]


class TableSeatingChanged(NamedTuple):
    """`Table.SeatingChanged` as read (ledger.table)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    table_id: str
    round_id: str
    round_no: int
    voided: bool
    seating: dict[str, Any]


# Record type -> its stored event name (the topic after the module), as audit files
# and timelines show it.
EVENT_NAMES: dict[type, str] = {
    TableConfigured: "Table.Configured",
    TableSeatingChanged: "Table.SeatingChanged",
}

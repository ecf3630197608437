"""The records of ledger/operator.py's events, as read (ledger/records.py re-exports them).

Derived from the event classes by `python -m ledger.records --write`: do not edit by hand
(tests/unit/ledger/test_records_derived.py fails when this file is not what it derives).
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple


class OperatorConfigured(NamedTuple):
    """`Operator.Configured` as read (ledger.operator)."""

    position: int
    originator_id: str
    originator_version: int
    timestamp: datetime
    command_id: str
    studio_time: str
    operator_id: str
    config_version: int
    config_hash: str
    name: str
    currencies: tuple[str, ...]
    timezone: str
    jurisdictions: tuple[str, ...]


# Record type -> its stored event name (the topic after the module), as audit files
# and timelines show it.
EVENT_NAMES: dict[type, str] = {
    OperatorConfigured: "Operator.Configured",
}

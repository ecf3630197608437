"""Reading the live store for audits and replays (read only), through the
ledger's `EventLog`: one round's records with their global positions
(`round_records`, one indexed query), and round references (TABLE#NO or a UUID).
"""
from __future__ import annotations

from uuid import UUID

from domain.errors import Refusal
from domain.refusals import RefusalCode
from ledger.eventlog import EventLog
from ledger.ids import round_id_for
from ledger.records import Record

ROUND_REF_MAX = 200


def parse_round_ref(ref: str) -> UUID:
    """A round UUID, or `TABLE#ROUND_NO` (the ledger's deterministic id): the one parser of
    a round reference, for the command line, the HTTP routes and the console alike."""
    if "#" in ref:
        parts = round_ref_parts(ref)
        if parts is None:
            raise Refusal(RefusalCode.BAD_ROUND_REF, f"{ref!r}: use a round UUID or TABLE#ROUND_NO like bacc-1#12")
        return round_id_for(*parts)
    try:
        return UUID(ref)
    except ValueError:
        raise Refusal(RefusalCode.BAD_ROUND_REF, f"{ref!r}: use a round UUID or TABLE#ROUND_NO like bacc-1#12") from None


def round_ref_parts(ref: str) -> tuple[str, int] | None:
    """(table, round number) of `TABLE#ROUND_NO` (split at the last '#'), None for anything
    else. ASCII digits only: `str.isdigit` also takes '²', which `int` refuses."""
    table_id, _, number = ref.rpartition("#")
    if not (table_id and number.isascii() and number.isdigit() and len(ref) <= ROUND_REF_MAX):
        return None
    return table_id, int(number)


def round_events(log: EventLog, round_id: UUID) -> list[Record]:
    """Every event of one round, in round order, with global positions."""
    return log.round_records(round_id)

"""Reading the live store for audits and replays (read only), through the
ledger's `EventLog`: one round's records with their global positions
(`round_records`, one indexed query) and every round with an event in a
position range (`rounds_in_range`, the reference grouping of all records).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any
from uuid import UUID

from domain.errors import Refusal
from domain.refusals import RefusalCode
from ledger.eventlog import EventLog
from ledger.ids import round_id_for
from ledger.records import Record, is_round

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


def rounds_in_range(log: EventLog, start: int = 1, stop: int | None = None,
                    progress: Callable[[int], Any] | None = None) -> Iterator[tuple[str, list[Record]]]:
    """Every round with an event in positions [start, stop], with ALL its events.

    One pass over the sequence from position 1 to the head (a round's first
    events may lie before `start` and a reversal after `stop`), grouping round
    records in memory; a round is yielded once the pass is complete.
    `progress(n)` is called per event read.
    """
    by_round: dict[str, list[Record]] = defaultdict(list)
    wanted: set[str] = set()
    for event in log.records(1, page_size=5000):
        if progress is not None:
            progress(1)
        if not is_round(event):
            continue
        by_round[event.originator_id].append(event)
        if event.position >= start and (stop is None or event.position <= stop):
            wanted.add(event.originator_id)
    for round_id, events in by_round.items():
        if round_id in wanted:
            yield round_id, events

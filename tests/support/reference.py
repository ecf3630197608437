"""Helpers only tests use, moved out of the production modules: the reference grouping of
rounds the range replay is checked against, the rounds it would replay, and the dealer tables
the monitor keeps."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from ledger.eventlog import EventLog
from ledger.records import Record, is_round
from projections.monitor_deal import _DEALER
from projections.replay_range import CHUNK_EVENTS, Plan, Rows, _completed_rounds


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


def rounds_to_replay(log: EventLog, start: int = 1, stop: int | None = None,
                     progress: Callable[[int], Any] | None = None) -> list[Rows]:
    """The stored rows (undecoded) of every round with an event in [start, stop], each
    round's in global order, rounds in the order of their first event: what `replay_range`
    replays, gathered by its own two passes (for callers that want the rounds, not a replay)."""
    rounds = [r for chunk in _completed_rounds(log, Plan(log, start, stop), CHUNK_EVENTS, progress) for r in chunk]
    return sorted(rounds, key=lambda r: r[0][0])


def dealer_table_keys() -> list[tuple[bool, int]]:
    return sorted(_DEALER)

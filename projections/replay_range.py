"""`ledger audit replay`: recompute every round with an event in a position range.

Each round is replayed from ALL of its recorded events (its first events may lie
before the range, a reversal after it) by `projections.replay.recompute` in bulk
mode (the same checks as `ledger replay`, no timeline), so every bet of every
Settled event is compared with what the recorded rule set gives.

One read of the store, in global order, through the library's notification
log (`select_notifications`, as `projections.reader` does). Events are grouped
by round from the stored topic and originator id, BEFORE decoding; only the
events of the rounds to replay are decoded, each exactly once, through the
app's own mapper (`projections.reader.decode`: ciphers, compression and
upcasters apply as everywhere else). Events of other aggregates (shoes) are
not decoded: a replay has nothing to recompute from them.

Workers: with `workers > 1` the rounds are cut into contiguous blocks of about
equal event counts; this process replays the first block and forked worker
processes the others (the read notifications and the mapper are inherited, no
store connection is used in a worker). Outcomes are joined block by block, so
rounds and findings come out in the same order as with one worker. Where the
platform cannot fork, the replay runs in this process.
"""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from domain.errors import require
from ledger.shards import available_cores, can_fork
from projections.audit import Finding
from projections.reader import decode, topic_name

ROUND_PREFIX = "Round."
PAGE_SIZE = 5000
WORKERS_MAX = 32
AUTO_WORKERS_MAX = 8
EVENTS_PER_WORKER_MIN = 4000  # below this a forked worker costs more than it saves (auto only)


@dataclass
class RangeReplay:
    """Counts over every replayed round, and every finding (with its round's `TABLE#ROUND_NO` label)."""

    rounds: int = 0
    events: int = 0  # round events replayed
    bets_checked: int = 0  # settlement lines compared
    findings: list[Finding] = field(default_factory=list)
    labels: dict[int, str] = field(default_factory=dict)  # finding position -> round label
    workers: int = 1

    def add(self, other: RangeReplay) -> None:
        self.rounds += other.rounds
        self.events += other.events
        self.bets_checked += other.bets_checked
        self.findings += other.findings
        self.labels.update(other.labels)


def replay_range(app: Any, start: int = 1, stop: int | None = None, progress: Callable[[int], Any] | None = None,
                 workers: int | None = None) -> RangeReplay:
    """Replay every round with an event in positions [start, stop] (stop None: the head).
    `progress(n)` is called with the number of events read, page by page.
    `workers`: processes to use (None: one per available core, fewer for small ranges)."""
    require(workers is None or 1 <= workers <= WORKERS_MAX, f"workers {workers} outside 1..{WORKERS_MAX}")
    rounds = rounds_to_replay(app, start, stop, progress)
    n = _worker_count(workers, rounds)
    if n == 1:
        outcome = replay_rounds(app.mapper, rounds)
    else:
        outcome = _replay_forked(app.mapper, _blocks(rounds, n))
    outcome.workers = n
    return outcome


def rounds_to_replay(app: Any, start: int = 1, stop: int | None = None,
                     progress: Callable[[int], Any] | None = None) -> list[list[Any]]:
    """The stored notifications (undecoded) of every round with an event in [start, stop],
    each round's in global order, rounds in the order of their first event.

    One pass from position 1 to the head: a round's first events may lie before
    `start` and its reversal after `stop`, and all of them are replayed."""
    by_round: dict[Any, list[Any]] = {}
    wanted: set[Any] = set()
    is_round: dict[str, bool] = {}
    recorder, position = app.recorder, 1
    while True:
        page = recorder.select_notifications(position, PAGE_SIZE)
        if not page:
            break
        for n in page:
            topic = n.topic
            flag = is_round.get(topic)
            if flag is None:
                flag = is_round[topic] = topic_name(topic).startswith(ROUND_PREFIX)
            if not flag:
                continue
            key = n.originator_id
            if type(key) is UUID:  # hash its int: UUID.__hash__ is a Python call per event
                key = key.int
            events = by_round.get(key)
            if events is None:
                events = by_round[key] = []
            events.append(n)
            if n.id >= start and (stop is None or n.id <= stop):
                wanted.add(key)
        if progress is not None:
            progress(len(page))
        if len(page) < PAGE_SIZE:
            break
        position = page[-1].id + 1
    return [events for key, events in by_round.items() if key in wanted]


def replay_rounds(mapper: Any, rounds: Sequence[list[Any]]) -> RangeReplay:
    """Decode and recompute each round (bulk mode); counts and findings, in round order."""
    from projections import replay  # looked up per call: tests may stand in for recompute

    out = RangeReplay()
    for notifications in rounds:
        events = [decode(mapper, n) for n in notifications]
        result = replay.recompute(events, views=False)
        out.rounds += 1
        out.events += len(events)
        out.bets_checked += len(result.results)
        if result.findings:
            first = events[0].fields
            label = f"{first.get('table_id', events[0].originator_id)}#{first.get('round_no', '?')}"
            for f in result.findings:
                out.labels[f.position] = label
            out.findings += result.findings
    return out


# --------------------------------------------------------------------------- workers


def default_workers() -> int:
    """One worker per core this process may run on (at most AUTO_WORKERS_MAX)."""
    return min(available_cores(), AUTO_WORKERS_MAX)


def _worker_count(workers: int | None, rounds: Sequence[list[Any]]) -> int:
    if not can_fork():
        return 1
    if workers is None:  # auto: enough events per worker to pay for the fork
        events = sum(len(r) for r in rounds)
        workers = max(1, min(default_workers(), events // EVENTS_PER_WORKER_MIN))
    return max(1, min(workers, len(rounds)))


def _blocks(rounds: Sequence[list[Any]], n: int) -> list[Sequence[list[Any]]]:
    """`n` contiguous, non-empty blocks of rounds with about equal event counts."""
    total = sum(len(r) for r in rounds)
    cuts, seen = [], 0
    for i, r in enumerate(rounds):
        seen += len(r)
        if len(cuts) < n - 1 and seen * n >= total * (len(cuts) + 1) and len(rounds) - i - 1 >= n - 1 - len(cuts):
            cuts.append(i + 1)
    while len(cuts) < n - 1:  # tiny inputs: one round per block from the end
        cuts.append(len(rounds) - (n - 1 - len(cuts)))
    bounds = [0, *cuts, len(rounds)]
    return [rounds[a:b] for a, b in zip(bounds, bounds[1:])]


_JOB: tuple[Any, list[Sequence[list[Any]]]] | None = None  # (mapper, blocks), inherited by forked workers


def _replay_block(index: int) -> RangeReplay:
    require(_JOB is not None, "a replay worker started without its job")
    mapper, blocks = _JOB
    return replay_rounds(mapper, blocks[index])


def _replay_forked(mapper: Any, blocks: list[Sequence[list[Any]]]) -> RangeReplay:
    """Block 0 here, the others in forked workers; joined in block order."""
    global _JOB
    _JOB = (mapper, blocks)
    try:
        with multiprocessing.get_context("fork").Pool(len(blocks) - 1) as pool:
            others = pool.map_async(_replay_block, range(1, len(blocks)), chunksize=1)
            outcome = _replay_block(0)
            for part in others.get():
                outcome.add(part)
    finally:
        _JOB = None
    return outcome

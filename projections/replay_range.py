"""`ledger audit replay`: recompute every round with an event in a position range.

Each round is replayed from ALL of its recorded events (its first events may lie
before the range, a reversal after it) by `projections.replay.recompute` in bulk
mode (the same checks as `ledger replay`, no timeline), so every bet of every
Settled event is compared with what the recorded rule set gives.

Two reads of the store through the ledger's `EventLog`, merged as they go: the
plan (`EventLog.round_spans`: per round, counted by the database on its key, its
first and last position and whether it has an event in the range; page by page in
first-position order) and the rows in global order, as plain tuples. A round is
held from its first event to its last (its rows, if it is to be replayed), so
memory follows the rounds in flight, never the rounds stored. Events are grouped
by round from the stored originator id, BEFORE decoding; only the events of the rounds to replay are
decoded, each exactly once, into typed records (`EventLog.decode_rows`: as the
app's own mapper decodes them, so ciphers, compression and upcasters apply as
everywhere else). Events of other aggregates (shoes) are not decoded: a replay has
nothing to recompute from them.

Workers: with `workers > 1` a pool of that many processes is forked once (the
log's decoder is inherited; no store connection is used in a worker but for a
configured table's history) and this process keeps reading: each small chunk
of completed rounds goes to the pool as soon as it is read (the rows pickled),
so reading overlaps replaying and the workers finish together. Outcomes are
joined in the order the chunks were read, so rounds and findings come out in the
same order as with one worker. Where the platform cannot fork, the replay runs
in this process.

One snapshot while the store is written: the head is read once at the start (the
high-water mark, `RangeReplay.through`) and both reads stop there (the plan counts
only the events up to it, the rows end at it). Positions commit in order (the
writer's table lock on PostgreSQL, one writer on SQLite), so everything up to the
mark is committed and final when it is read: however the plan's pages and the rows'
pages interleave with a writer, they describe the same store. Without the bound, a
round planned after its rows were read could end past them and be silently dropped.
"""
from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.pool import AsyncResult
from typing import Any

from domain.errors import InvariantBroken, require
from ledger.eventdecode import Row
from ledger.eventlog import EventLog
from ledger.partitions import available_cores, can_fork
from ledger.records import Opened, Record, TableApplied, TableConfigured
from projections.audit import Finding

Rows = list[Row]  # one round's stored rows, undecoded: (position, originator id as stored, version, topic, state)
PAGE_SIZE = 5000
PLAN_PAGE_SIZE = 1000  # rounds of the plan read at once: the plan's memory stays flat in the rounds
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
    through: int = 0  # the high-water mark: the last position the replay read (the head at its start)
    round_starts: list[int] = field(default_factory=list)  # per finding: its round's first position (ordering)

    def add(self, other: RangeReplay) -> None:
        self.rounds += other.rounds
        self.events += other.events
        self.bets_checked += other.bets_checked
        self.findings += other.findings
        self.labels.update(other.labels)
        self.round_starts += other.round_starts


def replay_range(log: EventLog, start: int = 1, stop: int | None = None,
                 progress: Callable[[int], Any] | None = None, workers: int | None = None,
                 through: int | None = None) -> RangeReplay:
    """Replay every round with an event in positions [start, stop] (stop None: the head).
    `through`: the high-water mark, the last position read (None: the head, read now); events
    recorded after it are not seen, so a replay beside a writer reads one snapshot.
    `progress(n)` is called with the number of events read, page by page (the second pass).
    `workers`: processes to use (None: one per available core, fewer for small ranges).

    Memory stays flat in the number of rounds: the plan of the rounds touching the range
    is read a page at a time beside the rows, and only rounds in flight (first event read,
    last not yet) are held; completed rounds are replayed a chunk at a time. Findings are
    put back in the order of their rounds' first events."""
    require(workers is None or 1 <= workers <= WORKERS_MAX, f"workers {workers} outside 1..{WORKERS_MAX}")
    mark = log.head() if through is None else through
    plan = Plan(log, start, stop, mark)
    n = 1 if workers == 1 else _worker_count(workers, *plan.totals())
    outcome = RangeReplay(workers=n, through=mark)
    if n == 1:
        for chunk in _completed_rounds(log, plan, CHUNK_EVENTS, progress):
            outcome.add(replay_rounds(log, chunk))
    else:
        _replay_in_pool(log, plan, n, progress, outcome)
    # Rounds complete out of order; the findings go back in their rounds' first-event order.
    ordered = sorted(zip(outcome.round_starts, range(len(outcome.findings)), outcome.findings))
    outcome.findings = [f for _, _, f in ordered]
    outcome.round_starts = [first for first, _, _ in ordered]
    return outcome


CHUNK_EVENTS = 5_000  # events of completed rounds replayed at once (one process)
POOL_CHUNK_EVENTS = 1_000  # events per task sent to a worker: small, so the workers finish together
POOL_TASKS_PER_WORKER = 4  # tasks read ahead per worker at most: memory stays flat


@dataclass
class Plan:
    """The rounds with an event in [start, stop], as the database counts them (`EventLog.round_spans`),
    read a page at a time in the order of their first events: never held whole. Only the events
    at positions up to `through` count (the high-water mark; None: the head when the plan is made)."""

    log: EventLog
    start: int
    stop: int | None
    through: int | None = None
    held_max: int = 0  # rounds held at once by the last merge (planned, first event read, last not yet)

    def spans(self) -> Iterator[tuple[int, Any, int, int]]:
        """(first position, originator id as stored, events, last position) per round to replay."""
        after = 0
        while spans := self.log.round_spans(after, PLAN_PAGE_SIZE, self.start, self.stop, self.through):
            for first, key, events, last, touching in spans:
                if self.stop is not None and first > self.stop:
                    return
                if touching:
                    yield first, key, events, last
            if len(spans) < PLAN_PAGE_SIZE:
                return
            after = spans[-1][0]

    def __post_init__(self) -> None:
        if self.through is None:
            self.through = self.log.head()

    def totals(self) -> tuple[int, int]:
        """(events, rounds) to replay: one more read of the plan (only to size a pool)."""
        events = rounds = 0
        for _, _, n, _ in self.spans():
            events += n
            rounds += 1
        return events, rounds


def _completed_rounds(log: EventLog, plan: Plan, chunk_events_max: int,
                      progress: Callable[[int], Any] | None) -> Iterator[list[Rows]]:
    """The wanted rounds' rows, each yielded with its round complete, in chunks: the rows
    merged with the plan (both in position order), a round held from its first row to its last."""
    spans = plan.spans()
    upcoming = next(spans, None)
    open_rounds: dict[Any, tuple[int, Rows]] = {}  # round -> (its last position, its rows so far)
    plan.held_max = 0
    chunk: list[Rows] = []
    chunk_events = 0
    if upcoming is None:
        return
    # Only the planned rounds' span is read: from the first one's first event until every
    # one is complete (a narrow range late in a large store reads that stretch, not the store).
    for rows in _pages(log, upcoming[0], plan.through or 0, progress):
        for row in rows:
            while upcoming is not None and upcoming[0] <= row[0]:  # a planned round's first event
                open_rounds[upcoming[1]] = (upcoming[3], [])
                plan.held_max = max(plan.held_max, len(open_rounds))
                upcoming = next(spans, None)
            entry = open_rounds.get(row[1])  # shoes' ids are never a round's
            if entry is None:
                continue
            events = entry[1]
            events.append(row)
            if row[0] == entry[0]:  # its last event: complete
                del open_rounds[row[1]]
                chunk.append(events)
                chunk_events += len(events)
                if chunk_events >= chunk_events_max:
                    yield chunk
                    chunk, chunk_events = [], 0
        if upcoming is None and not open_rounds:  # every planned round complete: read no further
            break
    if chunk:
        yield chunk


def stored_rounds(log: EventLog, through: int, chunk_events_max: int = CHUNK_EVENTS) -> Iterator[list[Rows]]:
    """Every round stored at positions up to `through` (the high-water mark), its rows complete
    (undecoded), in chunks of about `chunk_events_max` events, in the order the rounds complete:
    only rounds in flight are held, so memory is flat in the rounds stored."""
    return _completed_rounds(log, Plan(log, 1, None, through), chunk_events_max, None)


def _pages(log: EventLog, position: int, through: int, progress: Callable[[int], Any] | None) -> Iterator[Rows]:
    """The stored rows at positions from `position` up to `through`, a page at a time. The
    positions skipped before it count as progress (approximately: ids may have gaps); a reader
    that stops early leaves the rest uncounted, and its bar closes short of the head."""
    if progress is not None and position > 1:
        progress(position - 1)
    while position <= through:
        rows = log.rows(position, min(PAGE_SIZE, through - position + 1))
        if rows and rows[-1][0] > through:  # ids skipped by a rolled-back write: the page ran past the mark
            rows = [row for row in rows if row[0] <= through]
        if not rows:
            return
        if progress is not None:  # before the yield: a reader that stops after this page counts it
            progress(len(rows))
        yield rows
        position = rows[-1][0] + 1


def replay_rounds(log: EventLog, rounds: Sequence[Rows],
                  reads: Callable[[], EventLog] | None = None) -> RangeReplay:
    """Decode and recompute each round (bulk mode); counts and findings, in round order.
    `reads`: the log a table's configuration is read from (a forked worker's own)."""
    from projections import replay  # looked up per call: tests may stand in for recompute

    out = RangeReplay()
    tables: dict[str, list[TableConfigured]] = {}  # read once per configured table, by its (indexed) id

    def history(table_id: str) -> list[TableConfigured]:
        if table_id not in tables:
            tables[table_id] = (reads() if reads else log).table_history(table_id)
        return tables[table_id]

    for rows in rounds:
        events = log.decode_rows(rows)
        result = replay.recompute(events, views=False)
        if len(events) > 1 and isinstance(events[1], TableApplied):  # only rounds at a configured table
            result.findings.extend(replay.table_config_findings(events, history))
        out.rounds += 1
        out.events += len(events)
        out.bets_checked += len(result.results)
        if result.findings:
            label = _label(events[0])
            for f in result.findings:
                if f.position is not None:  # a replay finding always names its event
                    out.labels[f.position] = label
            out.findings += result.findings
            out.round_starts += [rows[0][0]] * len(result.findings)
    return out


def _label(first: Record) -> str:
    """`TABLE#ROUND_NO` of a round from its first record (its id when it never opened)."""
    if isinstance(first, Opened):
        return f"{first.table_id}#{first.round_no}"
    return f"{first.originator_id}#?"


# --------------------------------------------------------------------------- workers


def default_workers() -> int:
    """One worker per core this process may run on (at most AUTO_WORKERS_MAX)."""
    return min(available_cores(), AUTO_WORKERS_MAX)


def _worker_count(workers: int | None, events: int, rounds: int) -> int:
    if not can_fork():
        return 1
    if workers is None:  # auto: enough events per worker to pay for the fork
        workers = max(1, min(default_workers(), events // EVENTS_PER_WORKER_MIN))
    return max(1, min(workers, rounds))


_LOG: EventLog | None = None  # the log whose decoder the pool's workers inherit
_OWN: EventLog | None = None  # a worker's own connections to the store, opened at its first read


def _replay_chunk(rounds: Sequence[Rows]) -> RangeReplay:
    """A task of a pool worker: decoded with the inherited log, the store read (a table's
    configuration) on connections of the worker's own, never the parent's."""
    if _LOG is None:
        raise InvariantBroken("a replay worker started without its log")
    return replay_rounds(_LOG, rounds, partial(_own_log, _LOG))


def _own_log(inherited: EventLog) -> EventLog:
    """The worker's log of the same store on its own connections, opened at its first read."""
    global _OWN
    if _OWN is None:
        _OWN = inherited.reopened()
    return _OWN


def _replay_in_pool(log: EventLog, plan: Plan, n: int,
                    progress: Callable[[int], Any] | None, outcome: RangeReplay) -> None:
    """Read here, replay in `n` forked workers; parts joined in reading order."""
    global _LOG
    _LOG = log
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            pending: deque[AsyncResult[RangeReplay]] = deque()
            for chunk in _completed_rounds(log, plan, POOL_CHUNK_EVENTS, progress):
                pending.append(pool.apply_async(_replay_chunk, (chunk,)))
                while len(pending) > POOL_TASKS_PER_WORKER * n:
                    outcome.add(pending.popleft().get())
            while pending:
                outcome.add(pending.popleft().get())
    finally:
        _LOG = None

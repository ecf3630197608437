"""What the ledger relies on from the eventsourcing library, pinned so an upgrade fails here, loudly.

- Aggregates are plain classes keeping the library's public protocols (ledger/library/aggregate.py):
  `Application.save` collects their events and `Repository.get` folds stored events into them,
  and a round's first stored event (Opened, or a tombstone Voided) carries no `originator_topic`.
- `Application.save(*aggregates, ledger_rows=...)` hands its keyword arguments to the
  recorder's insert, in the transaction of the events: a failed event insert writes no row.
- The repository cache: `get`, `get(evict=True)`, `put`, and `.cache` membership.
- A StoredEvent's fields in their order (the mapper makes one by position).
- No private method of the library is called from ledger/.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from eventsourcing.application import Application
from eventsourcing.domain import CanMutateProtocol, CollectEventsProtocol, DomainEventProtocol
from eventsourcing.persistence import RecordConflictError, StoredEvent

from ledger.library.aggregate import Stamp
from ledger.library.recorders import CommandRow, LedgerRows
from ledger.round import Round
from tests.support.feed import Feed, lines

LEDGER = Path(__file__).resolve().parents[3] / "ledger"
PRIVATE = re.compile(r"\.(_record|_notify|_take_snapshots|__base_init__|_pending_events|_create)\b|\btrigger_event\b")
STAMP = Stamp("c-1", "2024-05-01T12:00:00+00:00")


def test_aggregates_and_events_keep_the_librarys_protocols() -> None:
    r = Round.new("T", 1)
    r.void("supervisor_error", "sup", "", STAMP)  # a tombstone: the round's first event
    event = r.pending_events[0]
    assert isinstance(r, CollectEventsProtocol) and not isinstance(r, DomainEventProtocol)
    assert isinstance(event, CanMutateProtocol)
    assert "originator_topic" not in vars(event)


def test_save_collects_the_events_and_get_rebuilds_a_round_from_a_tombstone(ledger) -> None:
    r = Round.new("T", 7)
    r.void("supervisor_error", "sup", "gone", STAMP)
    ledger.save(r)
    assert r.pending_events == []
    stored = list(ledger.repository.event_store.get(r.id))
    assert [type(e).__name__ for e in stored] == ["Voided"]
    ledger.forget_cached()
    loaded = ledger.get_round(r.id)
    assert (type(loaded), loaded.version, loaded.phase, loaded.voided) == (Round, 1, "voided", r.voided)


def test_stored_events_carry_no_originator_topic(ledger) -> None:
    f = Feed("T")
    ledger.ingest(lines(f.open("teen-patti/20-20")))
    first = ledger.recorder.select_events(ledger.find_round("T", 1).id)[0]
    assert first.topic == "ledger.round:Round.Opened"
    assert "originator_topic" not in json.loads(first.state)


def test_save_hands_ledger_rows_to_the_recorder_in_the_events_transaction(ledger, open_ledger) -> None:
    f = Feed("T")
    ledger.ingest(lines(f.open("teen-patti/20-20")))
    other = open_ledger()
    r1, r2 = ledger.find_round("T", 1), other.find_round("T", 1)
    r1.void("supervisor_error", "a", "", STAMP)
    r2.void("supervisor_error", "b", "", Stamp("c-2", STAMP.studio_time))
    row = CommandRow("c-2", None, "void", "h", "accepted", None)
    ledger.save(r1, ledger_rows=LedgerRows(commands=[CommandRow("c-1", None, "void", "h", "accepted", None)]))
    with pytest.raises(RecordConflictError):
        other.save(r2, ledger_rows=LedgerRows(commands=[row]))  # version 2 is taken: nothing of it lands
    known = ledger.recorder.select_commands(["c-1", "c-2"])
    assert set(known) == {"c-1"}


def test_save_with_no_events_still_hands_the_rows_to_the_recorder(ledger) -> None:
    """A batch of refused commands records no event, only its index and rejection rows."""
    ledger.save(ledger_rows=LedgerRows(commands=[CommandRow("c-9", None, "void", "h", "refused", "x")]))
    assert set(ledger.recorder.select_commands(["c-9"])) == {"c-9"}


def test_the_repository_cache_behaves_as_the_write_path_assumes(ledger) -> None:
    cache = ledger.repository.cache
    assert cache is not None and ledger.repository.fastforward
    r = Round.new("T", 9)
    cache.put(r.id, r)
    assert r.id in cache.cache and cache.get(r.id) is r  # no copy: DEEPCOPY_FROM_AGGREGATE_CACHE=n
    assert cache.get(r.id, evict=True) is r and r.id not in cache.cache
    with pytest.raises(KeyError):
        cache.get(r.id)


def test_save_is_the_librarys_own(ledger) -> None:
    assert type(ledger).save is Application.save  # not overridden: the public path is the one used


def test_no_private_library_calls_in_the_ledger() -> None:
    hits = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(LEDGER.glob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line.split("#")[0])
    ]
    assert not hits, "private library calls:\n" + "\n".join(hits)


def test_a_stored_event_takes_its_fields_in_this_order() -> None:
    """`LedgerMapper.to_stored_event` makes each StoredEvent by position (ledger/library/eventstore.py)."""
    assert [f.name for f in dataclasses.fields(StoredEvent)] == ["originator_id", "originator_version", "topic", "state"]


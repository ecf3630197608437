"""The typed read vocabulary decodes every stored event of the golden day (the old
SQLite store kept in tests/store/golden) into a record of its own type whose values are
the stored fields, field for field: `fields_of(record)` gives back exactly what is
stored, and the envelope carries the stored id, version, command id and studio time."""
from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path
from uuid import UUID

import pytest

from ledger.eventlog import EventLog
from ledger.records import (
    ROUND_TYPES,
    SHOE_TYPES,
    Opened,
    Settled,
    Unknown,
    decode,
    event_name,
    fields_of,
    stored_fields,
    type_of_topic,
    without_defaults,
)
from ledger.store import open_app
from tests.store.golden.make_golden import STORE, decoded_events


@pytest.fixture(scope="module")
def golden_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("golden") / "v0.db"
    db.write_bytes(gzip.decompress(STORE.read_bytes()))
    return db


def test_every_stored_event_decodes_to_its_record_with_the_stored_values(golden_store: Path) -> None:
    log = EventLog(open_app(f"sqlite:///{golden_store}"))
    records = list(log.records(page_size=997))
    stored = decoded_events(str(golden_store))
    log.close()
    assert len(records) == len(stored) > 1000
    assert [r.position for r in records] == sorted({r.position for r in records})
    for record, want in zip(records, stored):
        where = f"position {record.position} ({want['topic']})"
        assert type(record) is type_of_topic(want["topic"]) and type(record) is not Unknown, where
        assert event_name(record) == want["topic"].rpartition(":")[2], where
        assert (record.originator_id, record.originator_version) == (str(UUID(want["id"])), want["v"]), where
        assert (record.command_id, record.studio_time) == (want["fields"]["command_id"],
                                                          want["fields"]["studio_time"]), where
        assert record.timestamp.tzinfo is not None, where
        assert fields_of(record) == want["fields"], where


def test_the_golden_day_has_every_event_type_but_a_retired_shoe(golden_store: Path) -> None:
    """So the round trip above covers the whole vocabulary (a retirement needs live blackjack's void policy)."""
    log = EventLog(open_app(f"sqlite:///{golden_store}"))
    kinds = Counter(type(r) for r in log.records(page_size=5000))
    log.close()
    assert set(kinds) >= set(ROUND_TYPES) | set(SHOE_TYPES) - {SHOE_TYPES[-1]}


def test_nested_lines_keep_their_stored_values(golden_store: Path) -> None:
    """Lines are typed (SettlementLine, Posting); spot-check one settlement against the stored dicts."""
    log = EventLog(open_app(f"sqlite:///{golden_store}"))
    stored = {i + 1: e for i, e in enumerate(decoded_events(str(golden_store)))}
    settled = next(r for r in log.records(page_size=5000) if isinstance(r, Settled) and len(r.results) > 1)
    log.close()
    want = stored[settled.position]["fields"]
    assert [line.returned_minor for line in settled.results] == [x["returned_minor"] for x in want["results"]]
    assert [(p.account, p.amount_minor) for p in settled.postings] == [
        (p["account"], p["amount_minor"]) for p in want["postings"]]
    assert sum(p.amount_minor for p in settled.postings) == 0
    assert isinstance(settled.results, tuple) and settled.results[0].bet_id == want["results"][0]["bet_id"]


def test_a_record_is_frozen() -> None:
    record = Opened(1, "id", 1, None, "c", "t", "tab", 1, "baccarat", "r", 1, "h", "EUR", "s", 1, "d")  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        record.table_id = "other"  # type: ignore[misc]


def _by_mapper(log: EventLog) -> list[tuple[str, str]]:
    """Every stored event decoded the library's way (its mapper's event object, then the record):
    the reference the EventLog's own decoding must equal (repr: types and key order count too)."""
    app = log.app
    out = []
    position = 1
    while rows := app.recorder.select_notifications(position, 1000):
        for n in rows:
            state = app.mapper.to_domain_event(n).__dict__
            record = decode(n.id, n.topic, state)
            # the mapper's upcast adds a default the stored bytes lack (BetPlaced.operator_id)
            out.append((repr(record), repr(without_defaults(type(record), stored_fields(state)))))
            assert b"operator_id" not in n.state  # no golden event names an operator
        position = rows[-1].id + 1
    return out


@pytest.mark.parametrize("which", ["store-v0.db.gz", "store-s3.db.gz"])
def test_the_eventlog_decodes_as_the_library_mapper_does(tmp_path: Path, which: str) -> None:
    """The EventLog decodes states without the library's event objects (ledger/eventlog.py);
    every record and stored-field dict of the golden stores equals the mapper's, by every path."""
    db = tmp_path / "store.db"
    db.write_bytes(gzip.decompress((STORE.parent / which).read_bytes()))
    log = EventLog(open_app(f"sqlite:///{db}"))
    want = _by_mapper(log)
    assert len(want) > 1000
    assert [repr(r) for r in log.records(page_size=997)] == [w for w, _ in want]
    assert [(repr(r), repr(f)) for r, f in log.stored(page_size=997)] == want
    assert [repr(r) for r in log.decode_all(log.notifications(1, len(want)))] == [w for w, _ in want]
    settled = [w for w, _ in want if w.startswith("Settled(")]
    assert [repr(r) for r in log.page(1, len(want), frozenset({Settled})).records] == settled
    log.close()

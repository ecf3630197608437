"""The EventLog pages through the application sequence in order and decodes
each stored event once, with the library's own mapper, into a typed record
(an event outside the vocabulary into `Unknown`, with its stored fields)."""
from __future__ import annotations

import pytest
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

from domain.errors import InvariantBroken
from ledger.backend import POSTGRES, SQLITE, Backend
from ledger.eventlog import EventLog
from ledger.records import Unknown, decode


class Counter(Aggregate):
    def __init__(self, name: str) -> None:
        self.name = name
        self.total = 0

    @event("Added")
    def add(self, amount_minor: int, postings: list) -> None:
        self.total += amount_minor


def make_log(tmp_path) -> EventLog:
    return EventLog(Application(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                                     "SQLITE_DBNAME": str(tmp_path / "r.db")}))


def test_records_in_global_order_across_pages(tmp_path) -> None:
    log = make_log(tmp_path)
    a, b = Counter("a"), Counter("b")
    for i in range(1, 6):
        a.add(amount_minor=i, postings=[{"account": "x", "amount_minor": i}])
        b.add(amount_minor=10 * i, postings=[])
        log.app.save(a, b)
    events = list(log.records(page_size=3))
    assert [e.position for e in events] == list(range(1, 13))
    assert log.head() == 12
    first_add = events[1]  # save(a, b): all of a's pending events, then b's
    assert isinstance(first_add, Unknown) and first_add.topic.endswith(":Counter.Added")
    assert first_add.originator_id == str(a.id)
    assert first_add.originator_version == 2
    assert first_add.fields == {"amount_minor": 1, "postings": [{"account": "x", "amount_minor": 1}]}
    assert first_add.timestamp.tzinfo is not None
    assert [e.position for e in log.records(start=5, limit=4, page_size=3)] == [5, 6, 7, 8]
    assert log.page(13, 10) == ([], 0, 12)
    assert log.raw_read(page_size=5) == 12


def test_a_page_decodes_only_the_kinds_asked_for_but_reads_them_all(tmp_path) -> None:
    log = make_log(tmp_path)
    c = Counter("c")
    c.add(amount_minor=1, postings=[])
    log.app.save(c)
    assert log.page(1, 10, frozenset()) == ([], 2, 2)
    assert [e.position for e in log.page(1, 10, frozenset({Unknown})).records] == [1, 2]


def test_empty_store_reads_nothing(tmp_path) -> None:
    log = make_log(tmp_path)
    assert list(log.records()) == []
    assert log.head() == 0


def test_page_limits_are_checked(tmp_path) -> None:
    log = make_log(tmp_path)
    with pytest.raises(InvariantBroken):
        log.page(0, 10)
    with pytest.raises(InvariantBroken):
        log.page(1, 0)


def test_the_backend_comes_from_the_url() -> None:
    assert Backend.of_url("sqlite:////tmp/x.db") == Backend(SQLITE, sqlite_path="/tmp/x.db")
    pg = Backend.of_url("postgresql://bob@db.example:6543/ledger?schema=views_1")
    assert (pg.kind, pg.schema) == (POSTGRES, "views_1")
    assert pg.pg_connect == {"dbname": "ledger", "host": "db.example", "port": "6543", "user": "bob"}
    assert Backend.of_url("postgresql://bob@db.example/ledger").schema == "public"


def _mapper_records(log: EventLog) -> list[str]:
    """The records the library's way (its mapper's event objects): what the EventLog must equal."""
    app, out, position = log.app, [], 1
    while rows := app.recorder.select_notifications(position, 100):
        out += [repr(decode(n.id, n.topic, app.mapper.to_domain_event(n).__dict__)) for n in rows]
        position = rows[-1].id + 1
    return out


def test_records_equal_the_library_mappers_on_both_stores(store_url) -> None:
    """The EventLog's own row select (PostgreSQL: ids as text) and state decoding give the mapper's records."""
    from ledger.store import open_app
    from ops.sim.simulator import simulate

    app = open_app(store_url)
    app.ingest(simulate(2, 6, 7, fault_rate=50))
    log = EventLog(app)
    want = _mapper_records(log)
    assert len(want) > 100
    assert [repr(r) for r in log.records(page_size=37)] == want
    assert [repr(r) for r in log.page(1, len(want)).records] == want
    log.close()


def test_an_upcast_event_is_decoded_through_the_mapper(tmp_path, monkeypatch) -> None:
    """A class at class_version 2 upcasts its stored v1 states: the EventLog leaves those to the mapper."""
    log = make_log(tmp_path)
    c = Counter("c")
    c.add(amount_minor=5, postings=[])
    log.app.save(c)

    def upcast_v1_v2(state: dict) -> None:
        state["note"] = "upcast"

    monkeypatch.setattr(Counter.Added, "class_version", 2, raising=False)
    monkeypatch.setattr(Counter.Added, "upcast_v1_v2", staticmethod(upcast_v1_v2), raising=False)
    added = EventLog(log.app).page(1, 10).records[1]
    assert isinstance(added, Unknown)
    assert added.fields == {"amount_minor": 5, "postings": [], "note": "upcast"}


def test_a_compressed_store_is_decoded_through_the_mapper(tmp_path) -> None:
    """With a compressor (or a cipher: the same switch) every state goes through the mapper."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "c.db"),
           "COMPRESSOR_TOPIC": "eventsourcing.compressor:ZlibCompressor"}
    log = EventLog(Application(env=env))
    c = Counter("c")
    c.add(amount_minor=3, postings=[{"account": "x", "amount_minor": 3}])
    log.app.save(c)
    assert not log._bare
    assert [repr(r) for r in log.records()] == _mapper_records(log)
    assert log.page(1, 10).records[1].fields == {"amount_minor": 3, "postings": [{"account": "x", "amount_minor": 3}]}

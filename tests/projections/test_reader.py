"""read_events pages through the application sequence in order and decodes
each event to plain data, with the library's own mapper."""
from __future__ import annotations

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

from projections.reader import head_position, read_events, read_page, topic_name


class Counter(Aggregate):
    def __init__(self, name: str) -> None:
        self.name = name
        self.total = 0

    @event("Added")
    def add(self, amount_minor: int, postings: list) -> None:
        self.total += amount_minor


def make_app(tmp_path) -> Application:
    return Application(env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "r.db")})


def test_topic_name_is_the_class_path() -> None:
    assert topic_name("ledger.round:Round.Settled") == "Round.Settled"


def test_read_events_in_global_order_across_pages(tmp_path) -> None:
    app = make_app(tmp_path)
    a, b = Counter("a"), Counter("b")
    for i in range(1, 6):
        a.add(amount_minor=i, postings=[{"account": "x", "amount_minor": i}])
        b.add(amount_minor=10 * i, postings=[])
        app.save(a, b)
    events = list(read_events(app, page_size=3))
    assert [e.position for e in events] == list(range(1, 13))
    assert head_position(app) == 12
    first_add = events[1]  # save(a, b): all of a's pending events, then b's
    assert first_add.name == "Counter.Added"
    assert first_add.originator_id == str(a.id)
    assert first_add.originator_version == 2
    assert first_add.fields == {"amount_minor": 1, "postings": [{"account": "x", "amount_minor": 1}]}
    assert first_add.timestamp.tzinfo is not None
    assert [e.position for e in read_events(app, start=5, limit=4, page_size=3)] == [5, 6, 7, 8]
    assert read_page(app, 13, 10) == []


def test_empty_store_reads_nothing(tmp_path) -> None:
    app = make_app(tmp_path)
    assert list(read_events(app)) == []
    assert head_position(app) == 0

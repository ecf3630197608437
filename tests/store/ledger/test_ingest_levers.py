"""What the ingest speed levers promise beyond "the same stored events" (tests/store/golden)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ledger.store import open_app
from ops.sim.simulator import simulate


def _feed(rounds: int = 3) -> list[bytes]:
    return list(simulate(2, rounds, seed=7, fault_rate=0))


def test_the_events_of_one_batch_share_one_timestamp_and_later_batches_are_not_earlier(tmp_path: Path) -> None:
    app = open_app(f"sqlite:///{tmp_path / 'l.db'}")
    feed = _feed()
    half = len(feed) // 2
    app.ingest(feed[:half], batch_size=half)
    app.ingest(feed[half:], batch_size=len(feed))
    notes = app.recorder.select_notifications(1, 10_000)
    stamps = [app.mapper.to_domain_event(n).timestamp for n in notes]
    app.close()
    assert len(set(stamps)) == 2, "one timestamp per batch"
    assert stamps == sorted(stamps)


def _event_classes() -> list[type]:
    from ledger.round import Round
    from ledger.shoe import Shoe

    return [c for owner in (Round, Shoe) for c in vars(owner).values()
            if isinstance(c, type) and issubclass(c, owner.Event) and c is not owner.Event]


@pytest.mark.parametrize("cls", _event_classes(), ids=lambda c: c.__qualname__)
def test_an_event_made_the_fast_way_is_the_event_its_init_makes(cls: type) -> None:
    import dataclasses
    from datetime import UTC, datetime
    from uuid import uuid4

    from ledger.library.aggregate import Stamp

    own = [f.name for f in dataclasses.fields(cls)][5:]  # after the envelope and the command's stamp
    fields = {name: f"v-{i}" for i, name in enumerate(reversed(own))}  # any order in the call
    stamp, when, oid = Stamp("c-1", "2026-01-01T00:00:00+00:00"), datetime.now(UTC), uuid4()
    made = cls.recorded(oid, 3, when, stamp, fields)
    init = cls(originator_id=oid, originator_version=3, timestamp=when, command_id="c-1",
               studio_time=stamp.studio_time, **fields)
    assert list(vars(made).items()) == list(vars(init).items())  # same fields, same order: same bytes
    assert made == init and hash(type(made)) == hash(cls)
    in_order = cls.recorded(oid, 3, when, stamp, {name: fields[name] for name in own})  # the callers' usual order
    assert list(vars(in_order).items()) == list(vars(init).items())
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.command_id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cls.recorded(oid, 3, when, stamp, {**fields, "unknown": 1})
    with pytest.raises(TypeError):
        cls.recorded("not-a-uuid", 3, when, stamp, fields)


def test_save_without_recordings_stores_the_same_rows_and_returns_none(tmp_path: Path) -> None:
    """`recordings=False` (what the ledger's batches pass) skips only the Recording objects."""
    import inspect

    from eventsourcing.application import Application
    from eventsourcing.persistence import EventStore

    from ledger.library.aggregate import Stamp
    from ledger.library.eventstore import LedgerEventStore
    from ledger.round import Round

    # What this relies on from the library: save hands its keywords to put, put maps and inserts.
    assert "self.events.put(" in inspect.getsource(Application._record)
    assert "**processing_event.saved_kwargs" in inspect.getsource(Application._record)
    assert "self.recorder.insert_events(stored_events, **kwargs)" in inspect.getsource(EventStore.put)
    assert "self.mapper.to_stored_event" in inspect.getsource(EventStore.put)
    from ledger.app import LedgerApp

    # Nothing of the ledger's reads the recordings it skips: the notify hooks stay the library's no-ops.
    assert LedgerApp._notify is Application._notify and LedgerApp.notify is Application.notify
    from datetime import UTC, datetime

    rows, when = [], datetime.now(UTC)
    for wanted in (True, False):
        app = open_app(f"sqlite:///{tmp_path / f'{wanted}.db'}")
        assert isinstance(app.events, LedgerEventStore) and app.repository.event_store is app.events
        r = Round.new("T", 1)
        r.void("supervisor_error", "sup", "", Stamp("c-1", "2026-01-01T00:00:00+00:00", when))
        got = app.save(r, recordings=wanted) if not wanted else app.save(r)
        assert len(got) == (1 if wanted else 0)
        notes = app.recorder.select_notifications(1, 10)
        rows.append([(n.id, n.originator_id, n.originator_version, n.topic, n.state) for n in notes])
        assert app.repository.get(r.id).phase == "voided"
        app.close()
    assert rows[0] == rows[1] and len(rows[0]) == 1


def test_the_ledgers_mapper_stores_what_the_librarys_mapper_stores(tmp_path: Path) -> None:
    from eventsourcing.persistence import Mapper

    from ledger.library.eventstore import LedgerMapper, library_form

    app = open_app(f"sqlite:///{tmp_path / 'm.db'}")
    assert type(app.mapper) is LedgerMapper
    app.ingest(list(simulate(3, 4, seed=11, fault_rate=30)))
    library = Mapper(app.mapper.transcoder)
    notes = app.recorder.select_notifications(1, 10_000)
    events = [app.mapper.to_domain_event(n) for n in notes]
    assert len({type(e) for e in events}) >= 6
    for note, event in zip(notes, events):
        ours, theirs = app.mapper.to_stored_event(event), library.to_stored_event(event)
        # a default operator's BetPlaced: the library's form without the default and class_version
        assert ours == library_form(theirs, event, app.mapper.transcoder)
        assert (ours.topic, ours.state) == (note.topic, note.state)
    app.close()


@pytest.mark.parametrize("in_shoe", [0, 1, 5, 6, 7, 8])
@pytest.mark.parametrize("in_round", [0, 1, 2])
@pytest.mark.parametrize("others", [0, 3, 7])
def test_the_card_count_short_cut_refuses_exactly_what_the_full_count_refuses(
    in_shoe: int, in_round: int, others: int
) -> None:
    """The count is skipped only when the shoe's copies plus every card of the round stay
    below the decks: then the full count could not reach them either."""
    from collections import Counter

    from domain.cards import parse_card
    from domain.errors import Refusal
    from domain.registry import get_rule_set
    from ledger.round import Round

    rules = get_rule_set("baccarat/live-8d", 1)
    r = Round.new("T", 1)
    r._rule_set = rules
    r.cards = [(i + 1, "KS", "player") for i in range(in_round)] + [
        (in_round + i + 1, "2H", "banker") for i in range(others)]
    r.card_texts = [c for _, c, _ in r.cards]  # what CardDealt.apply keeps beside the cards
    full = in_shoe + in_round >= rules.decks  # the count before the short cut
    try:
        r._check_card_count(parse_card("KS"), "KS", Counter({"KS": in_shoe}))
        refused = False
    except Refusal as refusal:
        refused = refusal.code == "impossible_card"
    assert refused == full


def test_a_batch_is_saved_as_one_object_and_its_events_in_the_aggregates_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Application.save runs two runtime-protocol checks per object it is given (slow on 3.11):
    a batch hands it one PendingEvents, whose events are each aggregate's, in turn."""
    from eventsourcing.application import Application

    from ledger.library.aggregate import PendingEvents

    app = open_app(f"sqlite:///{tmp_path / 'l.db'}")
    given: list[tuple[object, ...]] = []
    save = Application.save

    def spy(self: Application, *objs: object, **kwargs: object) -> object:
        given.append(objs)
        return save(self, *objs, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(app), "save", spy)
    app.ingest(_feed(), batch_size=50)
    assert given and all(len(objs) == 1 and isinstance(objs[0], PendingEvents) for objs in given)
    notes = app.recorder.select_notifications(1, 10_000)
    app.close()
    assert len(notes) > len(given)
    versions: dict[object, int] = {}
    for n in notes:
        assert n.originator_version == versions.get(n.originator_id, 0) + 1
        versions[n.originator_id] = n.originator_version


def test_pending_events_collect_every_aggregates_events_in_turn() -> None:
    from uuid import uuid4

    from ledger.library.aggregate import PendingEvents, Stamp
    from ledger.round import Round

    stamp = Stamp("c-1", "2026-01-01T00:00:00+00:00")
    a, b = Round.new("T", 1), Round.new("T", 2)
    a.void("supervisor_error", "sup", "", stamp)
    b.void("supervisor_error", "sup", "", stamp)
    first, second = a.pending_events[0], b.pending_events[0]
    pending = PendingEvents([a, b], uuid4())
    assert list(pending.collect_events()) == [first, second]
    assert a.pending_events == [] and b.pending_events == [] and list(pending.collect_events()) == []


def test_a_repository_that_does_not_fast_forward_is_given_the_aggregates_themselves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Then Application.save caches what it is given: the aggregates, never a PendingEvents."""
    from eventsourcing.application import Application

    from ledger.library.aggregate import LedgerAggregate, PendingEvents

    given: list[object] = []
    save = Application.save

    def spy(self: Application, *objs: object, **kwargs: object) -> object:
        given.extend(objs)
        return save(self, *objs, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Application, "save", spy)
    app = open_app(f"sqlite:///{tmp_path / 'l.db'}", AGGREGATE_CACHE_FASTFORWARD="n")
    results = app.ingest(_feed(), batch_size=50)
    app.close()
    assert all(r.status == "accepted" for r in results)
    assert given and all(isinstance(obj, LedgerAggregate) and not isinstance(obj, PendingEvents) for obj in given)

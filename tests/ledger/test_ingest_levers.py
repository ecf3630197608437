"""What the ingest speed levers promise beyond "the same stored events" (tests/golden)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ledger.store import open_app
from ops.simulator import simulate


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

    from ledger.aggregate import Stamp

    own = [f.name for f in dataclasses.fields(cls)][5:]  # after the envelope and the command's stamp
    fields = {name: f"v-{i}" for i, name in enumerate(reversed(own))}  # any order in the call
    stamp, when, oid = Stamp("c-1", "2026-01-01T00:00:00+00:00"), datetime.now(UTC), uuid4()
    made = cls.recorded(oid, 3, when, stamp, fields)
    init = cls(originator_id=oid, originator_version=3, timestamp=when, command_id="c-1",
               studio_time=stamp.studio_time, **fields)
    assert list(vars(made).items()) == list(vars(init).items())  # same fields, same order: same bytes
    assert made == init and hash(type(made)) == hash(cls)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.command_id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cls.recorded(oid, 3, when, stamp, {**fields, "unknown": 1})
    with pytest.raises(TypeError):
        cls.recorded("not-a-uuid", 3, when, stamp, fields)

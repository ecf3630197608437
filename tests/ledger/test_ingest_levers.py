"""What the ingest speed levers promise beyond "the same stored events" (tests/golden)."""
from __future__ import annotations

from pathlib import Path

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

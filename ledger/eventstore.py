"""The library's EventStore, able to skip the recordings nobody reads.

`Application.save(*aggregates, **kwargs)` hands its keyword arguments to
`EventStore.put(events, **kwargs)`, which maps the events to stored events, has the
recorder insert them, and then builds a `Recording` and a `Notification` (a frozen
dataclass) per event for `save` to return and to pass to the application's notify hook,
which does nothing unless overridden. The ledger's batches read neither (LedgerApp
overrides no notify hook), and the two objects cost 1.3 us per event (micro-measured;
the driver's own insert of a row is about 5 us on SQLite). So the ledger saves with
`recordings=False`: the same mapping and the same insert, and no recordings (save
returns an empty list). Without the keyword, `put` is the library's.

Selected by `LedgerApp.construct_event_store` (ledger/app.py), the library's public
hook; tests/ledger/test_ingest_levers.py pins what this relies on. The mapper is the
library's own (a mapper doing its per-class work once per class measured no faster:
ops/bench/library_bench.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import EventStore, Recording

RECORDINGS = "recordings"  # the keyword of Application.save that says whether recordings are wanted


class LedgerEventStore(EventStore[UUID]):
    def put(self, domain_events: Sequence[DomainEventProtocol[UUID]], **kwargs: Any) -> list[Recording[UUID]]:
        if kwargs.pop(RECORDINGS, True):
            return super().put(domain_events, **kwargs)
        self.recorder.insert_events(list(map(self.mapper.to_stored_event, domain_events)), **kwargs)
        return []

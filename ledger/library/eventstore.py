"""The library's EventStore, able to skip the recordings nobody reads, and its Mapper,
doing per event class what it did per event.

`Application.save(*aggregates, **kwargs)` hands its keyword arguments to
`EventStore.put(events, **kwargs)`, which maps the events to stored events, has the
recorder insert them, and then builds a `Recording` and a `Notification` (a frozen
dataclass) per event for `save` to return and to pass to the application's notify hook,
which does nothing unless overridden. The ledger's batches read neither (LedgerApp
overrides no notify hook), and the two objects cost a fair share of what the driver's own
insert of a row costs (docs/architecture-library.md). So the ledger saves with
`recordings=False`: the same mapping and the same insert, and no recordings (save
returns an empty list). Without the keyword, `put` is the library's.

Selected by `LedgerApp.construct_event_store` and `construct_mapper` (ledger/app.py),
the library's public hooks; tests/store/ledger/test_ingest_levers.py pins what this relies on.

Overrides, and the measurement that keeps each (`python -m ops.bench.library_bench`,
docs/architecture-library.md): `LedgerEventStore.put` overrides
`eventsourcing.persistence.EventStore.put` (7.87 against 9.33 µs per event, 1.19x);
`LedgerMapper.to_stored_event` overrides `Mapper.to_stored_event` (6.38 against 7.08 µs,
1.11x; with the library's `Mapper` instead, `python -m ops.bench.ingest_phases --commands 6000`
gave "events: map + encode" 8.1-9.6 µs per command against 6.4-6.6).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import (
    Cipher,
    Compressor,
    EventStore,
    Mapper,
    Recording,
    StoredEvent,
    Transcoder,
)
from eventsourcing.utils import get_topic

RECORDINGS = "recordings"  # the keyword of Application.save that says whether recordings are wanted
# An event class's mapping of the fields its latest `class_version` added to their defaults
# (ledger/library/aggregate.py `LedgerEvent.STORED_DEFAULTS`).
STORED_DEFAULTS = "STORED_DEFAULTS"


class LedgerEventStore(EventStore[UUID]):
    def put(self, domain_events: Sequence[DomainEventProtocol[UUID]], **kwargs: Any) -> list[Recording[UUID]]:
        if kwargs.pop(RECORDINGS, True):
            return super().put(domain_events, **kwargs)
        self.recorder.insert_events(list(map(self.mapper.to_stored_event, domain_events)), **kwargs)
        return []


class LedgerMapper(Mapper[UUID]):
    """The library's Mapper, doing once per event class what it does per event (the topic,
    the class version), and handing the transcoder the state dict it made for the event,
    so the dict is not copied again (ledger/library/transcoder.py `encode_state`). Same rows,
    but for one thing the library leaves to its users: an event whose class declares
    `STORED_DEFAULTS` and whose added fields all hold their defaults is stored in the form of
    the version before (no `class_version`, no such field), which the class's own
    `upcast_v{N-1}_v{N}` reads back to the same event; so adding an optional field leaves
    every event that does not use it byte for byte as it was."""

    def __init__(self, transcoder: Transcoder, compressor: Compressor | None = None,
                 cipher: Cipher | None = None) -> None:
        super().__init__(transcoder, compressor=compressor, cipher=cipher)
        self._classes: dict[type, tuple[str, int, dict[str, Any] | None]] = {}
        encode_state = getattr(transcoder, "encode_state", None)
        self._encode: Callable[[dict[str, Any]], bytes] = encode_state or transcoder.encode

    def to_stored_event(self, domain_event: DomainEventProtocol[UUID]) -> StoredEvent:
        cls = type(domain_event)
        known = self._classes.get(cls)
        if known is None:
            known = self._classes[cls] = (
                get_topic(cls), getattr(cls, "class_version", 1), getattr(cls, STORED_DEFAULTS, None) or None)
        topic, class_version, defaults = known
        state = vars(domain_event).copy()
        originator_id = state.pop("originator_id")
        originator_version = state.pop("originator_version")
        if defaults is not None and defaults.items() <= state.items():  # each default's field == its value, in C
            # every field the last version added holds its default: stored as the version before
            # it (the same bytes as before the field existed), which that upcast reads back
            for name in defaults:
                del state[name]
            class_version -= 1
        if class_version > 1:
            state["class_version"] = class_version
        stored_state = self._encode(state)
        if self.compressor:
            stored_state = self.compressor.compress(stored_state)
        if self.cipher:
            stored_state = self.cipher.encrypt(stored_state)
        # By position, in the dataclass's field order (tests/store/ledger/test_library_contract.py
        # pins it): a frozen dataclass's keyword call costs ~0.13 µs more, once per event.
        return StoredEvent(originator_id, originator_version, topic, stored_state)


def library_form(stored: StoredEvent, event: DomainEventProtocol[UUID], transcoder: Transcoder) -> StoredEvent:
    """The library's Mapper's stored event for `event` (`stored`) as the LedgerMapper stores it:
    the same, but for an event at its `STORED_DEFAULTS`, whose fields and `class_version`
    are left out. What the tests and the library benchmark compare the LedgerMapper with."""
    defaults = getattr(type(event), STORED_DEFAULTS, None)
    if not defaults or not all(getattr(event, k) == v for k, v in defaults.items()):
        return stored
    state = transcoder.decode(stored.state)
    for name in (*defaults, "class_version"):
        state.pop(name, None)
    return StoredEvent(stored.originator_id, stored.originator_version, stored.topic, transcoder.encode(state))

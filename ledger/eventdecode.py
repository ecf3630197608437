"""How `EventLog` (ledger/eventlog.py) decodes stored events into the typed records of
`ledger.records`, exactly as the application's own mapper decodes them (ciphers,
compression and `upcast_vN_vM` apply as in the ledger): its base, `StoredEventDecoder`.

Decoding skips the library's event objects where they would change nothing: with
neither cipher nor compressor, a stored state of an event class at class_version 1
(nothing to upcast) is decoded by the application's transcoder straight into the
record (`_state`); anything else goes through the mapper. The pages of a catch-up
are selected as plain tuples (`Row`) rather than the recorder's `Notification`s.
Both paths give the same records (tests/store/golden/test_records.py compares them over
the golden stores).
"""
from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Notification
from eventsourcing.utils import resolve_topic

from ledger.records import (
    Decoder,
    Record,
    RecordType,
    decoder_for,
    stored_fields,
    type_of_topic,
    without_defaults,
)

# Aggregate ids remembered as text, forgotten all at once when full: rounds in flight are
# far fewer, and a long reader must not keep every round's id (its memory would grow with
# the rounds read).
ID_CACHE_MAX = 1_024


# A stored row as `rows` selects it: (position, originator id as stored or as text, version, topic, state).
Row = tuple[int, Any, int, str, bytes]


class StoredEventDecoder:
    """Stored events -> records, with what it remembers per topic and per aggregate id
    (set up by `EventLog.__init__` from the application's mapper)."""

    _to_event: Callable[[Notification], Any]  # the mapper's to_domain_event
    _transcode: Callable[[bytes], Any]  # the transcoder's decode_state (or decode)
    _bare: bool  # the mapper adds nothing but the envelope (no cipher, no compressor)
    _direct: dict[str, bool]  # topic -> its states decode without the mapper
    _decoders: dict[str, Decoder]
    _kinds: dict[str, RecordType]
    _ids: dict[Any, str]  # _id_key(aggregate id) -> its text
    _uuid_ids: bool  # stored ids are UUIDs (SQLite keeps their hex)

    # ------------------------------------------------------------ decoding
    def decode(self, n: Notification) -> Record:
        """One stored event -> its record."""
        decoder = self._decoders.get(n.topic) or self._decoder(n.topic)
        state = self._state(n.topic, n.state, n.originator_id, n.originator_version)
        return decoder(n.id, self._id_text(n.originator_id), state)

    def _state(self, topic: str, data: bytes, aggregate_id: Any, version: int) -> dict[str, Any]:
        """A stored event's state as the mapper decodes it (`originator_version` and the decoded
        `timestamp` in it; fields in stored order): by the transcoder alone where the mapper
        would add nothing but the envelope (see the module doc), else by the mapper."""
        direct = self._direct.get(topic)
        if direct is None:
            direct = self._direct_topic(topic)
        if direct:
            try:
                state: dict[str, Any] = self._transcode(data)
            except Exception:  # the mapper raises its own error for it, below
                pass
            else:
                if type(state) is dict and "class_version" not in state:
                    state["originator_version"] = version
                    return state
        stored = Notification(id=0, originator_id=aggregate_id, originator_version=version, topic=topic, state=data)
        decoded: dict[str, Any] = self._to_event(stored).__dict__
        return decoded

    def _direct_topic(self, topic: str) -> bool:
        """Whether `topic`'s states decode without the mapper: no cipher, no compressor, and
        an event class at class_version 1 (a topic that does not resolve raises as the mapper would)."""
        cls = resolve_topic(topic)
        version = getattr(cls, "class_version", 1)
        # a class whose one upcast adds fields at their defaults (STORED_DEFAULTS): its records
        # fill the defaults of a state stored without them; a state stored with them (with its
        # `class_version`) goes through the mapper
        direct = version == 1 or (version == 2 and bool(getattr(cls, "STORED_DEFAULTS", None)))
        self._direct[topic] = direct = self._bare and direct
        return direct

    def _id_text(self, aggregate_id: Any) -> str:
        """The aggregate id as text (`str(UUID)`), remembered: a round's events share its id, and
        str() of a UUID is slow Python. Keyed by the UUID's int (`_id_key`: UUID.__hash__ is a
        Python call too), or by the stored text (`rows`)."""
        key = _id_key(aggregate_id)
        text = self._ids.get(key)
        if text is None:
            if len(self._ids) >= ID_CACHE_MAX:
                self._ids.clear()
            if type(aggregate_id) is str and self._uuid_ids:
                text = str(UUID(aggregate_id))
            else:
                text = str(aggregate_id)
            self._ids[key] = text
        return text

    def _decoder(self, topic: str) -> Decoder:
        decoder = self._decoders[topic] = decoder_for(topic)
        return decoder

    def decode_stored(self, n: Notification) -> tuple[Record, dict[str, Any]]:
        """One stored event -> its record and its fields exactly as stored (for the audit chain,
        which hashes what is stored, including any field outside the vocabulary)."""
        decoder = self._decoders.get(n.topic) or self._decoder(n.topic)
        state = self._state(n.topic, n.state, n.originator_id, n.originator_version)
        record = decoder(n.id, self._id_text(n.originator_id), state)
        return record, without_defaults(type(record), stored_fields(state))

    def kind(self, topic: str) -> RecordType:
        found = self._kinds.get(topic)
        if found is None:
            found = self._kinds[topic] = type_of_topic(topic)
        return found

    def decode_all(self, rows: Sequence[Notification]) -> list[Record]:
        """`decode` of every row, in order."""
        return self.decode_rows([(n.id, n.originator_id, n.originator_version, n.topic, n.state) for n in rows])

    def decode_rows(self, rows: Sequence[Row]) -> list[Record]:
        """The record of every row (`rows`), in order: the loop every reader runs, kept tight
        (`_state` inlined for the usual case)."""
        decoders, ids, direct, transcode, state_of = self._decoders, self._ids, self._direct, self._transcode, self._state
        out = []
        with no_cyclic_gc():  # a page of records holds no cycles: a collection would only re-walk it
            for position, aggregate_id, version, topic, data in rows:
                decoder = decoders.get(topic) or self._decoder(topic)
                state = None
                if direct.get(topic):
                    try:
                        state = transcode(data)
                    except Exception:  # the mapper raises its own error for it (state_of)
                        state = None
                    if type(state) is not dict or "class_version" in state:
                        state = None
                    else:
                        state["originator_version"] = version
                if state is None:
                    state = state_of(topic, data, aggregate_id, version)
                text = ids.get(aggregate_id.int if type(aggregate_id) is UUID else aggregate_id)
                out.append(decoder(position, text or self._id_text(aggregate_id), state))
        return out


def _id_key(aggregate_id: Any) -> Any:
    return aggregate_id.int if type(aggregate_id) is UUID else aggregate_id


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Records, their lines and the folds' rows are tuples, dicts and lists without
    cycles: reference counting frees them. Without this, the cyclic collector rescans
    the growing set of new objects many times over while a large page is built."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

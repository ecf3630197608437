"""Read the ledger's events in global order, decoded to plain data.

Every projection (and the audit trail and replays) reads through here:
`recorder.select_notifications(start, limit)` pages over the application
sequence (SQLite rowid / PostgreSQL notification_id, gap-free in commit
order), and the application's own mapper decodes each stored event, so
ciphers, compression and `upcast_vN_vM` all apply exactly as in the ledger.

A `RecordedEvent` is a plain tuple:
`(position, name, originator_id, originator_version, timestamp, fields)`,
where `name` is the event class path inside its module (`"Round.Settled"`),
`originator_id` is the aggregate id as a string (`str(UUID)`, the form used in
`round:<round_id>` account names), `timestamp` is the server time (aware
datetime) and `fields` is a dict of every other attribute (docs/events.md).
"""
from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

from domain.errors import require

PAGE_SIZE_DEFAULT = 1000
PAGE_SIZE_MAX = 100_000
_ENVELOPE = ("originator_id", "originator_version", "timestamp")


class RecordedEvent(NamedTuple):
    position: int  # notification id in the application sequence (1-based, increasing)
    name: str  # "Round.Settled", "Shoe.Opened", ...
    originator_id: str
    originator_version: int
    timestamp: datetime  # server time the ledger recorded
    fields: dict[str, Any]


def topic_name(topic: str) -> str:
    """`"ledger.round:Round.Settled"` -> `"Round.Settled"`."""
    return topic.rpartition(":")[2]


def decode(mapper: Any, notification: Any) -> RecordedEvent:
    """One stored notification -> RecordedEvent, through the app's mapper."""
    event = mapper.to_domain_event(notification)
    fields = dict(vars(event))
    originator_id = fields.pop("originator_id")
    version = fields.pop("originator_version")
    timestamp = fields.pop("timestamp", None)
    return RecordedEvent(notification.id, topic_name(notification.topic), str(originator_id), version, timestamp, fields)


def read_page(app: Any, start: int, limit: int) -> list[RecordedEvent]:
    """Events with position >= `start`, at most `limit` of them, in order."""
    require(start >= 1, f"positions start at 1, got {start}")
    require(1 <= limit <= PAGE_SIZE_MAX, f"page size {limit} outside 1..{PAGE_SIZE_MAX}")
    mapper = app.mapper
    return [decode(mapper, n) for n in app.recorder.select_notifications(start, limit)]


def read_page_of(app: Any, start: int, limit: int, names: frozenset[str]) -> tuple[list[RecordedEvent], int, int]:
    """Like `read_page`, for a reader that needs only the events named in
    `names` (a projection): every stored event from `start` is read, but only
    those are decoded. Returns (decoded events, events read, last position
    read; `start - 1` when nothing was read)."""
    require(start >= 1, f"positions start at 1, got {start}")
    require(1 <= limit <= PAGE_SIZE_MAX, f"page size {limit} outside 1..{PAGE_SIZE_MAX}")
    notifications = app.recorder.select_notifications(start, limit)
    if not notifications:
        return [], 0, start - 1
    mapper = app.mapper
    wanted = _wanted_topics(names)
    events = []
    for n in notifications:
        topic = n.topic
        keep = wanted.get(topic)
        if keep is None:
            keep = wanted[topic] = topic_name(topic) in names
        if keep:
            events.append(decode(mapper, n))
    return events, len(notifications), notifications[-1].id


_TOPIC_CACHE: dict[frozenset[str], dict[str, bool]] = {}


def _wanted_topics(names: frozenset[str]) -> dict[str, bool]:
    """topic -> whether its name is in `names` (filled as topics are met)."""
    return _TOPIC_CACHE.setdefault(names, {})


def read_events(
    app: Any, start: int = 1, limit: int | None = None, *, page_size: int = PAGE_SIZE_DEFAULT
) -> Iterator[RecordedEvent]:
    """Yield events from position `start` (inclusive) in global order, at most
    `limit` of them (None: up to the current head). Reads `page_size` at a time."""
    remaining = limit
    position = start
    while remaining is None or remaining > 0:
        want = page_size if remaining is None else min(page_size, remaining)
        page = read_page(app, position, want)
        if not page:
            return
        yield from page
        position = page[-1].position + 1
        if remaining is not None:
            remaining -= len(page)
        if len(page) < want:
            return


def head_position(app: Any) -> int:
    """The last recorded position (0 when the store is empty)."""
    return app.recorder.max_notification_id() or 0

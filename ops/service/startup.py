"""Opening the store from several processes that start at once (consumers, serve workers)."""
from __future__ import annotations

import psycopg.errors
from eventsourcing.persistence import PersistenceError

from ledger.app import LedgerApp
from ledger.store import open_app

OPEN_ATTEMPTS = 3
RACED = (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable, psycopg.errors.DuplicateObject)


def open_store(db_url: str | None) -> LedgerApp:
    """`open_app`, again when another process created the same tables a moment earlier:
    PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent CREATE
    (the loser fails on the catalogue's unique index); the second try finds them."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return open_app(db_url)
        except PersistenceError as exc:  # the library wraps the driver's error
            if not isinstance(exc.__cause__, RACED) or attempt == OPEN_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")

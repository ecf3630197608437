"""What a store that stopped answering raises: one list, with no dependency of its own on the
rest of the ledger (the ingest workers, the store and the app import each other's users)."""
from __future__ import annotations

import sqlite3
from functools import cache


@cache
def lost_store_errors() -> tuple[type[BaseException], ...]:
    """What a store that stopped answering raises, by whichever path it was reached: SQLite's,
    psycopg's (a statement on a connection of ours), the library's (its recorder raises its own
    for psycopg's). The one list every reconnect, retry and exit 2 goes by (imported when first
    asked: psycopg costs a SQLite-only command its import)."""
    import psycopg
    from eventsourcing.persistence import InterfaceError, OperationalError

    return sqlite3.OperationalError, psycopg.OperationalError, psycopg.InterfaceError, OperationalError, InterfaceError

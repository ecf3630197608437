"""`Backend`: which database a store is (from the environment its URL gave, never
guessed from the recorder's class) and how to connect to it: the views of `projections/`
live in the same SQLite file or PostgreSQL schema (ledger/eventlog.py's `EventLog.backend`)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from domain.errors import require
from ledger.store import env_for

SQLITE = "sqlite"
POSTGRES = "postgres"
_PG_KEYS = {"dbname": "POSTGRES_DBNAME", "host": "POSTGRES_HOST", "port": "POSTGRES_PORT",
            "user": "POSTGRES_USER", "password": "POSTGRES_PASSWORD"}


@dataclass(frozen=True)
class Backend:
    """Which database a store is, and how to open another connection to it."""

    kind: str  # SQLITE | POSTGRES
    sqlite_path: str = ""
    pg_connect: dict[str, str] = field(default_factory=dict)  # psycopg.connect keyword arguments
    schema: str = "public"

    @classmethod
    def of_env(cls, env: Mapping[str, str]) -> Backend:
        """From the library environment a store URL maps to (`ledger.store.env_for`; an
        application's `env`, which the library built from it)."""
        module = env.get("PERSISTENCE_MODULE")
        if module == "eventsourcing.sqlite":
            return cls(SQLITE, sqlite_path=env.get("SQLITE_DBNAME") or "")
        require(module == "eventsourcing.postgres", f"unknown persistence module {module!r}")
        connect = {k: value for k, key in _PG_KEYS.items() if (value := env.get(key))}
        return cls(POSTGRES, pg_connect=connect, schema=env.get("POSTGRES_SCHEMA") or "public")

    @classmethod
    def of_url(cls, url: str) -> Backend:
        return cls.of_env(env_for(url))

"""Where the ledger keeps its events: a database URL mapped to the library's env.

    sqlite:///path/to/file.db          (default: sqlite:///./casino-ledger.db)
    postgresql://user[:password]@host:port/dbname[?schema=name]

`--db URL` wins over the LEDGER_DB environment variable, which wins over the
default. `open_app(db_url)` is the one way every CLI command gets a LedgerApp.
"""
from __future__ import annotations

import os
import re
from urllib.parse import parse_qs, unquote, urlparse

from domain.errors import Refusal
from domain.refusals import RefusalCode
from ledger.app import LedgerApp

DEFAULT_DB_URL = "sqlite:///./casino-ledger.db"
SQLITE_RECORDER = "ledger.persistence:LedgerSQLiteRecorder"
POSTGRES_RECORDER = "ledger.persistence:LedgerPostgresRecorder"
TRANSCODER = "ledger.transcoder:OrjsonTranscoder"
SCHEMA_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def db_url_from(arg: str | None) -> str:
    return arg or os.environ.get("LEDGER_DB") or DEFAULT_DB_URL


def env_for(db_url: str) -> dict[str, str]:
    """The eventsourcing environment (PERSISTENCE_MODULE, SQLITE_DBNAME, POSTGRES_*) for a URL."""
    if db_url.startswith("sqlite:///"):
        path = db_url[len("sqlite:///"):]
        if not path:
            raise Refusal(RefusalCode.BAD_DB_URL, f"{db_url!r} names no file; use sqlite:///path/to/file.db")
        return {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": path,
            "APPLICATION_RECORDER_TOPIC": SQLITE_RECORDER,
            "TRANSCODER_TOPIC": TRANSCODER,
            "SQLITE_LOCK_TIMEOUT": "30",
        }
    parsed = urlparse(db_url)
    if parsed.scheme in ("postgresql", "postgres"):
        dbname = parsed.path.lstrip("/")
        if not (parsed.hostname and dbname):
            raise Refusal(RefusalCode.BAD_DB_URL, f"{db_url!r}: use postgresql://user@host:port/dbname")
        schema = parse_qs(parsed.query).get("schema", [""])[0]
        if schema and not SCHEMA_NAME_RE.match(schema):
            raise Refusal(RefusalCode.BAD_DB_URL, f"schema {schema!r} must be a lower-case SQL identifier")
        return {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": dbname,
            "POSTGRES_HOST": parsed.hostname,
            "POSTGRES_PORT": str(parsed.port or 5432),
            "POSTGRES_USER": unquote(parsed.username or "postgres"),
            "POSTGRES_PASSWORD": unquote(parsed.password or ""),
            "POSTGRES_SCHEMA": schema,
            "POSTGRES_POOL_SIZE": "1",
            "POSTGRES_MAX_OVERFLOW": "4",
            "POSTGRES_CONNECT_TIMEOUT": "10",
            "APPLICATION_RECORDER_TOPIC": POSTGRES_RECORDER,
            "TRANSCODER_TOPIC": TRANSCODER,
        }
    raise Refusal(RefusalCode.BAD_DB_URL, f"{db_url!r}: the store URL must start with sqlite:/// or postgresql://")


def _ensure_pg_schema(env: dict[str, str]) -> None:
    """The library creates tables, not schemas: create the schema first."""
    schema = env.get("POSTGRES_SCHEMA")
    if not schema:
        return
    import psycopg

    with psycopg.connect(
        dbname=env["POSTGRES_DBNAME"], host=env["POSTGRES_HOST"], port=env["POSTGRES_PORT"],
        user=env["POSTGRES_USER"], password=env["POSTGRES_PASSWORD"] or None, autocommit=True,
        connect_timeout=int(env["POSTGRES_CONNECT_TIMEOUT"]),
    ) as conn, conn.transaction():
        # CREATE SCHEMA IF NOT EXISTS races in the catalog when two processes start on a
        # fresh schema at once (duplicate key on pg_namespace): one process at a time.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('casino-ledger:create-schema', 0))")
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


def open_app(db_url: str | None = None, **extra_env: str) -> LedgerApp:
    """A LedgerApp on the store at `db_url` (or LEDGER_DB, or the default SQLite file)."""
    env = env_for(db_url_from(db_url))
    if env["PERSISTENCE_MODULE"] == "eventsourcing.postgres":
        _ensure_pg_schema(env)
    env.update(extra_env)
    return LedgerApp(env=env)

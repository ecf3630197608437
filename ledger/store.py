"""Where the ledger keeps its events: a database URL mapped to the library's env.

    sqlite:///path/to/file.db          (default: sqlite:///./casino-ledger.db)
    postgresql://user[:password]@host:port/dbname[?schema=name]

`--db URL` wins over the LEDGER_DB environment variable, which wins over the
default. `open_app(db_url)` is the one way every CLI command gets a LedgerApp.
"""
from __future__ import annotations

import os
import re
import sqlite3
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlparse

from domain.errorcodes import ErrorCode
from ledger.app import LedgerApp

if TYPE_CHECKING:
    import psycopg

DEFAULT_DB_URL = "sqlite:///./casino-ledger.db"
SQLITE_RECORDER = "ledger.library.sqlite_recorder:LedgerSQLiteRecorder"
POSTGRES_RECORDER = "ledger.library.postgres_recorder:LedgerPostgresRecorder"
TRANSCODER = "ledger.library.transcoder:OrjsonTranscoder"
SCHEMA_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
SQLITE_EVENTS_TABLE = "stored_events"  # the library's names for the events table: its presence marks a ledger
PG_EVENTS_TABLE = f"{LedgerApp.name.lower()}_events"  # the PostgreSQL factory prefixes the application's name
PROBE_TIMEOUT_S = 5  # a store that does not answer within this is reported, not waited for


class StoreUnavailable(Exception):
    """The store cannot be used as asked (not a refusal of a command: the command never ran).
    `code` is from the catalogue of error codes (domain/errorcodes.py: a URL is a setting,
    not a command the ledger refuses)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def db_url_from(arg: str | None) -> str:
    return arg or os.environ.get("LEDGER_DB") or DEFAULT_DB_URL


def env_for(db_url: str) -> dict[str, str]:
    """The eventsourcing environment (PERSISTENCE_MODULE, SQLITE_DBNAME, POSTGRES_*) for a URL."""
    if db_url.startswith("sqlite:///"):
        path = db_url[len("sqlite:///"):]
        if not path:
            raise StoreUnavailable(ErrorCode.BAD_DB_URL, f"{db_url!r} names no file; use sqlite:///path/to/file.db")
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
            raise StoreUnavailable(ErrorCode.BAD_DB_URL, f"{db_url!r}: use postgresql://user@host:port/dbname")
        schema = parse_qs(parsed.query).get("schema", [""])[0]
        if schema and not SCHEMA_NAME_RE.match(schema):
            raise StoreUnavailable(ErrorCode.BAD_DB_URL, f"schema {schema!r} must be a lower-case SQL identifier")
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
    raise StoreUnavailable(ErrorCode.BAD_DB_URL, f"{db_url!r}: the store URL must start with sqlite:/// or postgresql://")


def pg_connect_args(env: dict[str, str]) -> dict[str, Any]:
    """psycopg.connect's arguments for the server and database of a store's environment
    (autocommit; the schema is the caller's `search_path` or the library's)."""
    return {"dbname": env["POSTGRES_DBNAME"], "host": env["POSTGRES_HOST"], "port": env["POSTGRES_PORT"],
            "user": env["POSTGRES_USER"], "password": env["POSTGRES_PASSWORD"] or None, "autocommit": True}


def _pg_connect(env: dict[str, str]) -> psycopg.Connection[tuple[object, ...]]:
    """One connection, or `StoreUnavailable` naming the cause at once: the library would
    retry for seconds and then hide it (a database that does not exist, a refused port)."""
    import psycopg

    try:
        return psycopg.connect(**pg_connect_args(env), connect_timeout=PROBE_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        cause = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        where = f"{env['POSTGRES_HOST']}:{env['POSTGRES_PORT']}/{env['POSTGRES_DBNAME']}"
        code = ErrorCode.DATABASE_MISSING if "does not exist" in cause else ErrorCode.STORE_UNREACHABLE
        raise StoreUnavailable(code, f"PostgreSQL {where}: {cause}") from None


def _ensure_pg_schema(env: dict[str, str]) -> None:
    """Fail fast on an unreachable server or a missing database; the library creates
    tables, not schemas: create the schema first."""
    schema = env.get("POSTGRES_SCHEMA")
    with _pg_connect(env) as conn:
        if schema:
            with conn.transaction():
                # CREATE SCHEMA IF NOT EXISTS races in the catalog when two processes start on a
                # fresh schema at once (duplicate key on pg_namespace): one process at a time.
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('casino-ledger:create-schema', 0))")
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


def require_ledger(db_url: str | None = None) -> None:
    """Raise `StoreUnavailable` unless the store at `db_url` exists and holds a ledger
    (its events table). Creates nothing: read commands must not report on an empty
    store they made themselves."""
    url = db_url_from(db_url)
    env = env_for(url)
    if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        _require_sqlite_ledger(env["SQLITE_DBNAME"], url)
        return
    schema = env["POSTGRES_SCHEMA"] or "public"
    with _pg_connect(env) as conn:
        row = conn.execute("SELECT to_regclass(%s)", (f'"{schema}"."{PG_EVENTS_TABLE}"',)).fetchone()
    if not row or row[0] is None:
        raise StoreUnavailable(ErrorCode.NO_LEDGER, f"{safe_url(url)} holds no ledger (no events table in schema {schema!r})")


def holds_events(db_url: str | None = None) -> bool:
    """Whether the store at `db_url` exists and has recorded at least one event
    (read only: creates nothing)."""
    try:
        require_ledger(db_url)
    except StoreUnavailable as exc:
        if exc.code in (ErrorCode.STORE_MISSING, ErrorCode.NO_LEDGER):
            return False
        raise
    url = db_url_from(db_url)
    env = env_for(url)
    if env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite":
        lite = sqlite3.connect(f"file:{env['SQLITE_DBNAME']}?mode=ro", uri=True)
        try:
            return bool(lite.execute(f"SELECT EXISTS (SELECT 1 FROM {SQLITE_EVENTS_TABLE})").fetchone()[0])
        finally:
            lite.close()
    schema = env["POSTGRES_SCHEMA"] or "public"
    with _pg_connect(env) as conn:
        row = conn.execute(f'SELECT EXISTS (SELECT 1 FROM "{schema}"."{PG_EVENTS_TABLE}")').fetchone()
    return bool(row and row[0])


def _require_sqlite_ledger(path: str, url: str) -> None:
    if not os.path.isfile(path):
        kind = "is a directory" if os.path.isdir(path) else "does not exist"
        raise StoreUnavailable(ErrorCode.STORE_MISSING, f"{url}: {path} {kind}")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            found = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                                 (SQLITE_EVENTS_TABLE,)).fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:  # not a database, unreadable, locked for good
        raise StoreUnavailable(ErrorCode.STORE_UNREACHABLE, f"{url}: {exc}") from None
    if not found:
        raise StoreUnavailable(ErrorCode.NO_LEDGER, f"{url} holds no ledger (no events table)")


def safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    parsed = urlparse(url)
    if not parsed.password:
        return url
    return url.replace(f":{parsed.password}@", ":***@", 1)


def open_app(db_url: str | None = None, **extra_env: str) -> LedgerApp:
    """A LedgerApp on the store at `db_url` (or LEDGER_DB, or the default SQLite file)."""
    url = db_url_from(db_url)
    env = env_for(url)
    if env["PERSISTENCE_MODULE"] == "eventsourcing.postgres":
        _ensure_pg_schema(env)
    elif not os.path.isdir(os.path.dirname(os.path.abspath(env["SQLITE_DBNAME"]))):
        raise StoreUnavailable(ErrorCode.STORE_UNREACHABLE, f"{url}: the folder of {env['SQLITE_DBNAME']} does not exist")
    env.update(extra_env)
    return LedgerApp(env=env)

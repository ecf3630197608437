"""Several processes opening one fresh PostgreSQL store at once (two ingests, ingest and a
projector...): the library's `CREATE TABLE IF NOT EXISTS` statements race in PostgreSQL's
catalog (a duplicate key on `pg_type`, `tuple concurrently updated`). `tables_created_alone`
holds a session advisory lock, per database and schema, while one process creates them.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

PG_MODULE = "eventsourcing.postgres"


@contextmanager
def tables_created_alone(env: Mapping[str, str]) -> Iterator[None]:
    """Hold the store's creation lock for the block (PostgreSQL with CREATE_TABLE on; else nothing)."""
    if env.get("PERSISTENCE_MODULE") != PG_MODULE or env.get("CREATE_TABLE", "yes").lower() in ("no", "n", "false", "0"):
        yield
        return
    import psycopg

    key = f"casino-ledger:create:{env.get('POSTGRES_SCHEMA') or 'public'}"
    with psycopg.connect(
        dbname=env["POSTGRES_DBNAME"], host=env["POSTGRES_HOST"], port=env.get("POSTGRES_PORT", "5432"),
        user=env["POSTGRES_USER"], password=env.get("POSTGRES_PASSWORD") or None, autocommit=True,
        connect_timeout=int(env.get("POSTGRES_CONNECT_TIMEOUT", "10")),
    ) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

"""Shared fixtures: `store_url` runs a test on SQLite (a tmp file) and on PostgreSQL
(a fresh schema per test, dropped afterwards).

PostgreSQL comes from LEDGER_TEST_PG_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
When the server is unreachable the postgres variants fail, never skip (the README's test
command starts it: ops/deploy/test-services.sh).
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

PG_URL_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


def pg_base_url() -> str:
    return os.environ.get("LEDGER_TEST_PG_URL", PG_URL_DEFAULT)


def _pg_connect(url: str):  # type: ignore[no-untyped-def]
    import psycopg

    p = urlparse(url)
    return psycopg.connect(
        dbname=p.path.lstrip("/"), host=p.hostname, port=p.port or 5432, user=p.username or "postgres",
        password=p.password or None, autocommit=True, connect_timeout=5,
    )


def terminate_sessions(application_name: str) -> int:
    """End every PostgreSQL session of the clients named `application_name` (PGAPPNAME), as a
    server restart or an operator would; how many were ended."""
    conn = _pg_connect(pg_base_url())
    try:
        return len(conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                                (application_name,)).fetchall())
    finally:
        conn.close()


@contextmanager
def fresh_pg_schema() -> Iterator[str]:
    """The URL of a new PostgreSQL schema, dropped afterwards; an unreachable server fails the test."""
    base = pg_base_url()
    try:
        conn = _pg_connect(base)
    except Exception as exc:
        pytest.fail(f"PostgreSQL at {base} is unreachable (bash ops/deploy/test-services.sh starts it): {exc}")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}schema={schema}"
    finally:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request, tmp_path):  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    return request.getfixturevalue("pg_schema_url")


@pytest.fixture
def second_store(store_url, tmp_path):  # type: ignore[no-untyped-def]
    """A second empty store of the same kind as `store_url`."""
    if store_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'second.db'}"
        return
    schema = store_url.rsplit("schema=", 1)[1] + "_b"
    conn = _pg_connect(pg_base_url())
    try:
        yield store_url + "_b"
    finally:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.close()


KINDS = ("unit", "store", "e2e")  # tests/<kind>/...: the kind is the marker (`pytest -m unit`)
TESTS = Path(__file__).resolve().parent


def kind_of(path: Path) -> str | None:
    """The kind of a test file: the first folder under tests/ (None for a file outside them)."""
    try:
        folder = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return folder if folder in KINDS else None


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    """Each test is marked with its kind, from its folder. A write path only PostgreSQL has
    (COPY for large batches beside the pipelined small ones) is not a SQLite test: such
    combinations are not run at all, rather than skipped."""
    dropped = []
    for item in list(items):
        kind = kind_of(Path(str(item.path)))
        if kind is not None:
            item.add_marker(kind)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("store_url") == "sqlite" and (params.get("app_on") == "copy" or params.get("copy") is True):
            dropped.append(item)
            items.remove(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)

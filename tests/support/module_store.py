"""A store shared by a module's tests that only read it (a fixture of `scope="module"`), of
the kind `store_url` gives per test: a SQLite file, or a PostgreSQL schema of its own,
dropped afterwards. A PostgreSQL server missing fails the tests, never skips them."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]  # the `params` of such a fixture


@contextmanager
def module_store(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('store') / 'ledger.db'}"
        return
    from tests.conftest import _pg_connect, pg_base_url

    base = pg_base_url()
    try:
        conn = _pg_connect(base)
    except Exception as exc:
        pytest.fail(f"PostgreSQL at {base} is unreachable (bash ops/deploy/test-services.sh starts it): {exc}")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{base}{'&' if '?' in base else '?'}schema={schema}"
    finally:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()

"""A store shared by a module's tests that only read it (a fixture of `scope="module"`), of
the kind `store_url` gives per test: a SQLite file, or a PostgreSQL schema of its own,
dropped afterwards. A PostgreSQL server missing fails the tests, never skips them."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]  # the `params` of such a fixture


@contextmanager
def module_store(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('store') / 'ledger.db'}"
        return
    from tests.conftest import fresh_pg_schema

    with fresh_pg_schema() as url:
        yield url

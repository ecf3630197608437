from __future__ import annotations

import pytest

from ledger.store import open_app


@pytest.fixture
def open_ledger(store_url):  # type: ignore[no-untyped-def]
    """Open LedgerApps on the test store (closed afterwards); call it twice for two writers."""
    apps = []

    def _open():  # type: ignore[no-untyped-def]
        app = open_app(store_url)
        apps.append(app)
        return app

    yield _open
    for app in apps:
        app.close()


@pytest.fixture
def ledger(open_ledger):  # type: ignore[no-untyped-def]
    return open_ledger()


@pytest.fixture
def second_store(store_url, tmp_path):  # type: ignore[no-untyped-def]
    """A second empty store of the same kind as `store_url`."""
    if store_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'second.db'}"
        return
    from tests.conftest import _pg_connect, pg_base_url

    schema = store_url.rsplit("schema=", 1)[1] + "_b"
    conn = _pg_connect(pg_base_url())
    try:
        yield store_url + "_b"
    finally:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.close()

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


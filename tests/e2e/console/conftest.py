"""A store for the console tests: a simulated studio with faults (voids, reversals,
refusals), the dispute rounds of the dispute-page tests (a voided round, a reversed then
voided one, a resettled one), a key per role, and the wallet file of that store with
discrepancies planted."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.service.app import Settings, create_app
from ops.sim.simulator import simulate
from ops.sim.wallet import Injected, write_wallet
from tests.e2e.service.conftest import make_keys
from tests.support.dispute_rounds import ingest_corrections, ingest_three

PLANTED = 6  # discrepancies in the wallet file, every kind in turn


@dataclass(frozen=True)
class ConsoleStore:
    url: str
    keys: dict[str, str]
    wallet: Path
    planted: list[Injected]


def build_store(folder: Path) -> ConsoleStore:
    url = f"sqlite:///{folder / 'ledger.db'}"
    app = open_app(url)
    try:
        app.ingest([line.rstrip(b"\n") for line in simulate(5, 12, 3, fault_rate=150)])
        ingest_three(app)
        ingest_corrections(app)
    finally:
        app.close()
    log = EventLog.open(url)
    try:
        planted = write_wallet(list(log.records()), folder / "wallet.csv", PLANTED, seed=5)
    finally:
        log.close()
    return ConsoleStore(url, make_keys(url), folder / "wallet.csv", planted)


@pytest.fixture(scope="module")
def console_store(tmp_path_factory: pytest.TempPathFactory) -> ConsoleStore:
    return build_store(tmp_path_factory.mktemp("console"))


@pytest.fixture
def client(console_store: ConsoleStore) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(db_url=console_store.url, key_cache_s=0.0))) as c:
        yield c


def sign_in(client: TestClient, key: str, next_page: str | None = None) -> object:
    """The sign-in form as a browser sends it: its CSRF token from the form's cookie
    (a client signed in already signs in again: its cookies are dropped first)."""
    client.cookies.clear()
    form = client.get("/ui/")
    token = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    data = {"key": key, "csrf": token}
    if next_page:
        data["next"] = next_page
    return client.post("/ui/", data=data, follow_redirects=False)


def csrf_of(client: TestClient, page: str = "/ui/rounds") -> str:
    text = client.get(page).text
    return text.split('name="csrf" value="', 1)[1].split('"', 1)[0]

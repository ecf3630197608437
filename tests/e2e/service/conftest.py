"""Fixtures of the live-service tests: the FastAPI app on the test store (SQLite and
PostgreSQL), one API key per role, a real uvicorn server on a free port."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ledger.batching import Result
from ledger.keys import key_store
from ledger.store import open_app
from ops.service.app import Settings, create_app
from ops.sim.simulator import simulate

ROLES = ("studio", "backoffice", "auditor", "admin")


def make_keys(db_url: str, **scoped: list[str]) -> dict[str, str]:
    """A key per role, plus `name=tables` studio keys scoped to those tables."""
    app = open_app(db_url)
    try:
        store = key_store(app)
        keys = {r: store.add(r, name=f"test-{r}")[0] for r in ROLES}
        for name, tables in scoped.items():
            keys[name] = store.add("studio", name=name, tables=tables)[0]
        return keys
    finally:
        app.close()


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def feed(tables: int = 5, rounds: int = 4, seed: int = 7, fault_rate: int = 500) -> list[bytes]:
    return [line.rstrip(b"\n") for line in simulate(tables, rounds, seed, fault_rate=fault_rate)]


def cli_results(lines: list[bytes], db_url: str) -> list[dict[str, Any]]:
    """What `ledger ingest` gives for the same feed, on a store of its own."""
    app = open_app(db_url)
    try:
        return [r.as_dict() for r in app.ingest(lines)]
    finally:
        app.close()


def round_events(db_url: str, lines: list[bytes]) -> dict[str, list[tuple[Any, ...]]]:
    """Every round's stored events (type and fields, without position and server time): the state to compare."""
    from ledger.eventlog import EventLog
    from projections.audit_store import parse_round_ref

    refs = set()
    for line in lines:
        try:
            data = json.loads(line)
            refs.add(f"{data['table_id']}#{data['round_no']}")
        except (ValueError, KeyError, TypeError):
            continue
    log = EventLog.open(db_url)
    try:
        return {ref: [(type(e).__name__, _timeless(e._asdict())) for e in log.round_records(parse_round_ref(ref))]
                for ref in sorted(refs)}
    finally:
        log.close()


def _timeless(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k not in ("position", "timestamp")}


def second_store(store_url: str, tmp_path: Any, request: Any) -> str:
    """Another empty store of the same kind (the CLI's, to compare with)."""
    if store_url.startswith("sqlite"):
        return f"sqlite:///{tmp_path / 'cli.db'}"
    return request.getfixturevalue("pg_schema_url_2")


@pytest.fixture
def pg_schema_url_2() -> Iterator[str]:
    """A second fresh PostgreSQL schema (the first is the `store_url` fixture's)."""
    from tests.conftest import fresh_pg_schema

    with fresh_pg_schema() as url:
        yield url


@pytest.fixture
def keys(store_url: str) -> dict[str, str]:
    return make_keys(store_url, scoped=["T1", "T2"])


@pytest.fixture
def client(store_url: str, keys: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn serving the app in a thread of this process, on a free port."""

    def __init__(self, settings: Settings) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port, log_level="warning",
                                access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join()


def as_dicts(results: list[Result]) -> list[dict[str, Any]]:
    return [r.as_dict() for r in results]


@pytest.fixture
def nats_url(tmp_path) -> Iterator[str]:
    """A private nats-server with JetStream on a free port, its store in tmp_path."""
    binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
    port = free_port()
    proc = subprocess.Popen([binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(tmp_path / "js")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:  # no skip: a missing or broken nats-server fails the test here
            assert proc.poll() is None, "nats-server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)

"""Property-based fuzz of the whole API from its own OpenAPI schema (schemathesis): with an
admin key (every route open to it) and without one, no request gets a 5xx answer."""
from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from ops.service.app import Settings, create_app
from tests.service.conftest import auth, feed, make_keys


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """The NDJSON body is a string in the schema: sent as it is (lines of whatever it holds)."""
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else json.dumps(value).encode()


# The schema is read at collection (schemathesis' lazy fixture loader does not run on pytest 9);
# the store behind the app is made, and the app started, by the module fixture below.
DIRECTORY = tempfile.mkdtemp(prefix="ledger-fuzz-")
API = create_app(Settings(db_url=f"sqlite:///{DIRECTORY}/fuzz.db", key_cache_s=60.0))
schema = schemathesis.openapi.from_asgi("/openapi.json", API)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, dict[str, str]]]:
    keys = make_keys(f"sqlite:///{DIRECTORY}/fuzz.db")
    try:
        with TestClient(API) as client:  # runs the lifespan: the store, the writer, the keys
            lines = feed(tables=5, rounds=1)
            client.post("/v1/commands", content=b"\n".join(lines),
                        headers={**auth(keys["admin"]), "Content-Type": "application/x-ndjson"})
            yield API, keys
    finally:
        shutil.rmtree(DIRECTORY, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error(case: Any, served: tuple[Any, dict[str, str]]) -> None:
    response = case.call(headers=auth(served[1]["admin"]))
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
    anonymous = case.call()
    assert anonymous.status_code < 500
    assert anonymous.status_code != 200 or case.path in {"/healthz", "/readyz", "/metrics"}

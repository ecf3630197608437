"""Property-based fuzz of the whole API from its own OpenAPI schema (schemathesis): with an
admin key (every route open to it) and without one, no request gets a 5xx answer, and every
answer is one the schema documents: its status, its content type and its body's schema.
Every error is a problem (application/problem+json) with a code of the catalogue."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from domain.errorcodes import ErrorCode
from domain.refusals import RefusalCode
from ops.service.app import Settings, create_app
from tests.e2e.service.conftest import auth, feed, make_keys


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: Any, value: Any) -> bytes:
    """The NDJSON body is a string in the schema: sent as it is (lines of whatever it holds)."""
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else json.dumps(value).encode()


# The schema is read at collection (schemathesis' lazy fixture loader does not run on pytest 9);
# the store behind the app is made, and the app started, by the module fixture below (each time
# it is set up: under xdist a worker can run this module's tests, others, then this module's again,
# and pytest tears the module's fixture down and sets it up anew in between).
DIRECTORY = tempfile.mkdtemp(prefix="ledger-fuzz-")
API = create_app(Settings(db_url=f"sqlite:///{DIRECTORY}/fuzz.db", key_cache_s=60.0))
# The coverage phase (each boundary of each field of each schema) runs on every route but the
# feed's: its 11 command schemas give some 1,150 bodies, a third of the run on a quiet machine,
# for what tests/e2e/service/test_hostile_http.py and the ledger's own tests cover; the fuzzing
# phase still posts commands generated from the union.
CONFIG = schemathesis.Config.from_dict({"operations": [
    {"include-name": "POST /v1/commands", "phases": {"coverage": {"enabled": False}}}]})
schema = schemathesis.openapi.from_asgi("/openapi.json", API, config=CONFIG)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, dict[str, str]]]:
    os.makedirs(DIRECTORY, exist_ok=True)
    keys = make_keys(f"sqlite:///{DIRECTORY}/fuzz.db")
    try:
        with TestClient(API) as client:  # runs the lifespan: the store, the writer, the keys
            lines = feed(tables=5, rounds=1)
            client.post("/v1/commands", content=b"\n".join(lines),
                        headers={**auth(keys["admin"]), "Content-Type": "application/x-ndjson"})
            yield API, keys
    finally:
        shutil.rmtree(DIRECTORY, ignore_errors=True)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
CODES = {c.value for c in ErrorCode} | {c.value for c in RefusalCode}


@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_answer_is_documented(case: Any, served: tuple[Any, dict[str, str]]) -> None:
    response = case.call_and_validate(headers=auth(served[1]["admin"]), checks=CHECKS)
    assert_problem_if_error(response)
    anonymous = case.call_and_validate(checks=CHECKS)
    assert_problem_if_error(anonymous)
    assert anonymous.status_code != 200 or case.path in {"/healthz", "/readyz", "/metrics"}


def assert_problem_if_error(response: Any) -> None:
    if response.status_code < 400:
        return
    content_type = response.headers["content-type"]  # schemathesis keeps each header's values as a list
    assert content_type == ["application/problem+json"], response.text[:300]
    body = response.json()
    assert body["status"] == response.status_code and body["code"] in CODES, body
    assert body["type"].endswith(body["code"]) and body["title"] and body["detail"], body

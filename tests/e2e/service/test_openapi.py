"""The contract a client generator reads: /openapi.json (3.1) documents every route's answer
and every error it can give, POST /v1/commands' body is the command union `ledger schema`
prints, and every error the service answers is a problem (RFC 9457) with a catalogue code."""
from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from domain.errorcodes import ErrorCode
from domain.refusals import RefusalCode
from ledger.commands import command_json_schema
from ops.service.app import Settings, create_app
from ops.service.problems import PROBLEM_JSON
from tests.e2e.service.conftest import auth, make_keys

CODES = {c.value for c in ErrorCode} | {c.value for c in RefusalCode}
PUBLIC = {"/healthz", "/readyz", "/metrics"}


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix="ledger-openapi-")
    with TestClient(create_app(Settings(db_url=f"sqlite:///{directory}/o.db"))) as client:
        answer = client.get("/openapi.json")
    assert answer.status_code == 200
    document: dict[str, Any] = answer.json()
    return document


def resolve(node: Any, definitions: dict[str, Any], prefix: str, seen: tuple[str, ...] = ()) -> Any:
    """The schema with every $ref under `prefix` replaced by what it names (no cycles here)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(prefix):
            name = ref.removeprefix(prefix)
            assert name not in seen, f"a cycle through {name}"
            return resolve(definitions[name], definitions, prefix, (*seen, name))
        return {k: resolve(v, definitions, prefix, seen) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [resolve(v, definitions, prefix, seen) for v in node]
    return node


def operations(openapi: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in openapi["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation


def test_the_document_is_valid_openapi_3_1_and_says_which_routes_need_no_key(openapi: dict[str, Any]) -> None:
    from openapi_spec_validator import validate

    assert openapi["openapi"].startswith("3.1")
    validate(openapi)  # raises on a document a generator could not read
    for path in ("/openapi.json", "/docs", "/redoc", *PUBLIC):
        assert path in openapi["info"]["description"]
    assert {t["name"] for t in openapi["tags"]} == {"studio", "backoffice", "auditor", "public"}


def test_the_commands_body_is_the_union_ledger_schema_prints(openapi: dict[str, Any]) -> None:
    body = openapi["paths"]["/v1/commands"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["type"] == "array" and body["maxItems"] == 10_000
    components = openapi["components"]["schemas"]
    served = resolve(body["items"], components, "#/components/schemas/")
    printed = command_json_schema()
    expected = resolve(printed, printed["$defs"], "#/$defs/")
    # the discriminator's mapping names the same schemas by their place in each document
    for union in (served, expected):
        union["discriminator"]["mapping"] = sorted(union["discriminator"]["mapping"])
    assert served == expected
    assert served["discriminator"]["propertyName"] == "type" and len(served["oneOf"]) == 12


def test_every_route_has_an_answer_schema_and_documents_its_errors(openapi: dict[str, Any]) -> None:
    seen = 0
    for method, path, operation in operations(openapi):
        seen += 1
        responses = operation["responses"]
        ok = responses["200"]["content"]
        assert ok and all(media.get("schema") for media in ok.values()), (method, path)
        assert all(media["schema"] != {} for media in ok.values()), (method, path)
        assert operation.get("tags") and operation.get("summary"), (method, path)
        errors = {status: r for status, r in responses.items() if status[0] in "45"}
        for status, response in errors.items():
            assert list(response["content"]) == [PROBLEM_JSON], (method, path, status)
            assert response["content"][PROBLEM_JSON]["schema"] == {"$ref": "#/components/schemas/Problem"}
        if path.startswith("/v1/"):
            assert {"401", "403", "503"} <= set(errors), (method, path)
            assert operation["security"] == [{"HTTPBearer": []}], (method, path)
        if operation.get("parameters") or operation.get("requestBody"):
            assert "422" in errors or "413" in errors, (method, path)
    assert seen >= 16
    assert "HTTPValidationError" not in json.dumps(openapi), "FastAPI's validation error shape is never answered"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[TestClient, dict[str, str]]]:
    directory = tempfile.mkdtemp(prefix="ledger-problems-")
    url = f"sqlite:///{directory}/p.db"
    keys = make_keys(url)
    api = create_app(Settings(db_url=url, max_body_bytes=1024))

    @api.get("/v1/boom", include_in_schema=False)
    def boom() -> None:
        raise RuntimeError("a bug")

    with TestClient(api, raise_server_exceptions=False) as client:
        yield client, keys


UPLOAD = {"wallet": ("w.csv", b"not,a,wallet\n1,2,3\n")}
# (method, path, key role or None, extra request arguments) -> (status, code)
ERRORS: list[tuple[str, str, str | None, dict[str, Any], int, str]] = [
    ("GET", "/nowhere", None, {}, 404, "not_found"),
    ("DELETE", "/v1/balances", "admin", {}, 405, "method_not_allowed"),
    ("GET", "/v1/balances", None, {}, 401, "unauthorized"),
    ("GET", "/v1/balances", "nokey", {}, 401, "unauthorized"),
    ("GET", "/v1/balances", "studio", {}, 403, "forbidden"),
    ("GET", "/v1/audit/export", "backoffice", {}, 403, "forbidden"),
    ("GET", "/v1/recall/p1?last=3", "admin", {}, 422, "request_invalid"),
    ("GET", "/v1/balances?kind=moon", "admin", {}, 422, "request_invalid"),
    ("GET", "/v1/rounds?plyer=p0008", "admin", {}, 422, "unknown_parameter"),
    ("GET", "/v1/ggr?since=2026-11-21&from=2026-11-21", "admin", {}, 422, "unknown_parameter"),
    ("GET", "/v1/rounds?cursor=x", "admin", {}, 422, "request_invalid"),
    ("GET", "/v1/refunds?from=2026-13-01", "admin", {}, 422, "request_invalid"),
    ("GET", "/v1/ggr?timezone=Mars/Olympus", "admin", {}, 422, "request_invalid"),
    ("GET", "/v1/recall/p1?timezone=../etc", "admin", {}, 422, "request_invalid"),
    ("GET", "/v1/rounds/bad-ref", "admin", {}, 422, "bad_round_ref"),
    ("GET", "/v1/rounds/t1%231", "admin", {}, 404, "round_not_found"),
    ("GET", "/v1/rounds/t1%231/replay", "admin", {}, 404, "round_not_found"),
    ("GET", "/v1/rounds/t1%231/replay.html", "admin", {}, 404, "round_not_found"),
    ("POST", "/v1/reconcile", "admin", {}, 422, "request_invalid"),
    ("POST", "/v1/reconcile", "admin", {"files": UPLOAD}, 422, "input_invalid"),
    ("POST", "/v1/reconcile", "admin", {"content": b"--b\r\nFalse--b--\r\n",
                                        "headers": {"Content-Type": "multipart/form-data; boundary=b"}},
     400, "bad_request"),
    ("POST", "/v1/commands", "studio", {"content": b"{", "headers": {"Content-Type": "application/json"}},
     422, "body_not_json"),
    ("POST", "/v1/commands", "studio", {"content": b"{}", "headers": {"Content-Type": "application/json"}},
     422, "body_not_array"),
    ("POST", "/v1/commands", "studio", {"content": b"[]", "headers": {"Content-Type": "text/csv"}},
     415, "unsupported_media_type"),
    ("POST", "/v1/commands", "studio", {"content": b"[" + b" " * 2000 + b"]"}, 413, "body_too_large"),
    ("POST", "/v1/commands", None, {"content": b"[]"}, 401, "unauthorized"),
    ("GET", "/v1/boom", "admin", {}, 500, "internal_error"),
]


@pytest.mark.parametrize("method,path,role,extra,status,code", ERRORS,
                         ids=[f"{m} {p} {c}" for m, p, _, _, _, c in ERRORS])
def test_every_error_is_a_problem_with_a_catalogue_code(served: tuple[TestClient, dict[str, str]], method: str,
                                                        path: str, role: str | None, extra: dict[str, Any],
                                                        status: int, code: str) -> None:
    client, keys = served
    extra = dict(extra)
    headers = {**extra.pop("headers", {}), **(auth(keys.get(role, "lk_no_such_key")) if role else {})}
    answer = client.request(method, path, headers=headers, **extra)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON
    body = answer.json()
    assert body["code"] == code and code in CODES
    assert body["status"] == status and body["type"] == f"urn:casino-ledger:error:{code}"
    assert body["title"] and body["detail"]
    # This occurrence, named as the answer's header and the request log name it.
    assert body["instance"] == f"urn:casino-ledger:request:{answer.headers['x-request-id']}", body
    if code in ("request_invalid", "bad_round_ref", "input_invalid", "unknown_parameter"):  # the offending parameter or file, named
        assert body["errors"] and all(e["location"] and e["message"] for e in body["errors"]), body
    if status == 500:
        assert "a bug" not in answer.text  # the traceback stays in the server's log


def test_docs_and_the_schema_need_no_key(served: tuple[TestClient, dict[str, str]]) -> None:
    client, _ = served
    for path in ("/openapi.json", "/docs", "/redoc", "/docs-assets/swagger-ui-bundle.js",
                 "/docs-assets/redoc.standalone.js"):
        assert client.get(path).status_code == 200, path


def test_closed_sets_are_enums_uploads_are_named_and_the_audit_line_has_its_schema(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    assert set(schemas["CommandResult"]["properties"]["status"]["enum"]) == {"accepted", "duplicate", "refused",
                                                                           "conflict"}
    assert {"$ref": "#/components/schemas/RefusalCode"} in schemas["CommandResult"]["properties"]["code"]["anyOf"]
    assert set(schemas["RoundSummary"]["properties"]["status"]["enum"]) >= {"open", "settled", "reversed", "voided"}
    assert set(schemas["BalanceRow"]["properties"]["kind"]["enum"]) == {"player", "round", "house"}
    assert {"unknown_parameter", "request_invalid", "bad_round_ref"} <= set(schemas["Problem"]["properties"]["code"]["enum"])
    assert schemas["GgrRow"]["properties"]["rounding_kept"] == {"$ref": "#/components/schemas/ExactMinor"}
    assert not [name for name in schemas if name.startswith("Body_")]
    for path, name in (("/v1/reconcile", "ReconcileUpload"), ("/v1/audit/verify", "AuditVerifyUpload")):
        form = openapi["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
        assert form == {"$ref": f"#/components/schemas/{name}"} and schemas[name]["properties"], path
    line = openapi["paths"]["/v1/audit/export"]["get"]["responses"]["200"]["content"]["application/x-ndjson"]
    assert line["schema"]["$ref"] == "#/components/schemas/AuditLine"
    assert set(schemas["AuditLine"]["required"]) == {"hash", "prev", "record"}
    assert {"event", "fields", "position", "seq", "timestamp"} <= set(schemas["AuditRecord"]["properties"])


def test_old_parameter_names_are_deprecated_and_every_read_says_it_refuses_unknown_ones(
        openapi: dict[str, Any]) -> None:
    def parameters(path: str) -> dict[str, Any]:
        return {p["name"]: p for p in openapi["paths"][path]["get"]["parameters"]}

    assert parameters("/v1/refunds")["from"]["deprecated"] and parameters("/v1/refunds")["to"]["deprecated"]
    assert parameters("/v1/rejections")["after"]["deprecated"]
    assert not parameters("/v1/refunds")["since"].get("deprecated")
    for method, path, operation in operations(openapi):
        if path.startswith("/v1/") and method == "GET":
            assert "`unknown_parameter`" in operation["responses"]["422"]["description"], path
        if path in ("/v1/rounds", "/v1/balances", "/v1/rejections"):
            assert {"cursor", "limit"} <= set(parameters(path)), path

"""Every route and every role: no key 401, a revoked or made-up key 401, the wrong role 403,
the right role 200 (with a real answer). On SQLite and PostgreSQL."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.keys import key_store
from ledger.store import open_app
from tests.e2e.service.conftest import ROLES, auth, feed

READ = {"backoffice", "auditor", "admin"}
AUDIT = {"auditor", "admin"}
WALLET_HEADER = "transaction_id,type,reference,player,amount_minor,currency,time\n"


def _export_files(store_url: str, directory: Path) -> dict[str, Any]:
    from ledger.eventlog import EventLog
    from projections.audit_export import export

    log = EventLog.open(store_url)
    try:
        export(directory, log.stored(), exported_at="2026-01-01T00:00:00Z")
    finally:
        log.close()
    return {"events_jsonl": (directory / "events.jsonl").read_bytes(),
            "manifest_json": (directory / "manifest.json").read_bytes(),
            "events_csv": (directory / "events.csv").read_bytes()}


ROUTES: list[tuple[str, str, set[str]]] = [
    ("POST", "/v1/commands", {"studio", "admin"}),
    ("GET", "/v1/rounds", READ),
    ("GET", "/v1/rounds/{ref}", READ),
    ("GET", "/v1/rounds/{ref}/replay", READ),
    ("GET", "/v1/rounds/{ref}/replay.html", READ),
    ("GET", "/v1/balances", READ),
    ("GET", "/v1/refunds", READ),
    ("GET", "/v1/recall/{player}", READ),
    ("GET", "/v1/ggr", READ),
    ("GET", "/v1/rejections", READ),
    ("POST", "/v1/reconcile", READ),
    ("GET", "/v1/audit/export", AUDIT),
    ("POST", "/v1/audit/verify", AUDIT),
]


@pytest.fixture
def loaded(client, keys, store_url, tmp_path):
    lines = feed(tables=5, rounds=2)
    r = client.post("/v1/commands", content=b"\n".join(lines),
                    headers={**auth(keys["admin"]), "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200
    first = json.loads(lines[0])
    player = next(json.loads(x)["player_id"] for x in lines if b'"place_bet"' in x)
    return {"ref": f"{first['table_id']}%23{first['round_no']}", "player": player, "line": lines[0],
            "files": _export_files(store_url, tmp_path / "export")}


def call(client, method: str, path: str, loaded: dict[str, Any], headers: dict[str, str]):
    url = path.format(ref=loaded["ref"], player=loaded["player"])
    if path == "/v1/commands":
        return client.post(url, content=loaded["line"], headers={**headers, "Content-Type": "application/x-ndjson"})
    if path == "/v1/reconcile":
        return client.post(url, files={"wallet": ("wallet.csv", WALLET_HEADER.encode())}, headers=headers)
    if path == "/v1/audit/verify":
        return client.post(url + "?against_store=true", files=loaded["files"], headers=headers)
    return client.request(method, url, headers=headers)


@pytest.mark.parametrize("method,path,allowed", ROUTES, ids=[p for _, p, _ in ROUTES])
def test_route_roles(client, keys, loaded, store_url, method, path, allowed):
    assert call(client, method, path, loaded, {}).status_code == 401
    assert call(client, method, path, loaded, auth("lk_nokey_nosecret")).status_code == 401
    assert call(client, method, path, loaded, auth(keys["admin"] + "x")).status_code == 401
    for role in ROLES:
        r = call(client, method, path, loaded, auth(keys[role]))
        assert r.status_code == (200 if role in allowed else 403), (role, r.text)
        if r.status_code == 200:
            check_answer(path, r)


def check_answer(path: str, r: Any) -> None:
    """A 200 that says something real, so the route is known to have worked."""
    if path == "/v1/commands":
        assert r.json()[0]["status"] == "duplicate"
    elif path.endswith("replay.html"):
        assert r.headers["content-type"].startswith("text/html") and "<html" in r.text.lower()
        assert '"steps"' in r.text  # the replay document the page script renders
    elif path.startswith("/v1/rounds/") and path.endswith("replay"):
        assert r.json()["steps"] and r.json()["findings"] == []
    elif path.startswith("/v1/rounds/"):
        assert r.json()["events"][0]["event"] == "Opened"
    elif path == "/v1/balances":
        assert r.json()["accounts"] and set(r.json()["sum_by_currency"].values()) == {0}
    elif path == "/v1/recall/{player}":
        assert r.json()["rounds"]
    elif path == "/v1/ggr":
        assert r.json()["rows"]
    elif path == "/v1/refunds":
        assert "totals" in r.json()
    elif path == "/v1/rejections":
        assert r.json()["rejections"] and all(x["code"] for x in r.json()["rejections"])
    elif path == "/v1/reconcile":
        assert r.json()["counts"]["missing_in_wallet"] > 0
    elif path == "/v1/audit/export":
        lines = r.text.splitlines()
        assert lines and json.loads(lines[0])["record"]["seq"] == 1
    elif path == "/v1/audit/verify":
        assert r.json()["findings"] == [] and r.json()["checked_store"] is True


def test_a_revoked_key_is_refused(client, keys, store_url):
    h = auth(keys["backoffice"])
    assert client.get("/v1/ggr", headers=h).status_code == 200
    app = open_app(store_url)
    try:
        assert key_store(app).revoke("test-backoffice") == 1
    finally:
        app.close()
    assert client.get("/v1/ggr", headers=h).status_code == 401


def test_open_routes_and_errors(client, keys):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["status"] == "ready"
    assert "ledger_http_requests_total" in client.get("/metrics").text
    assert client.get("/openapi.json").json()["paths"]["/v1/commands"]["post"]
    h = auth(keys["auditor"])
    assert client.get("/v1/rounds/nope", headers=h).status_code == 422
    assert client.get("/v1/rounds/T9%2399", headers=h).status_code == 404
    assert client.get("/v1/rounds/T9%2399/replay", headers=h).status_code == 404
    assert client.get("/v1/rounds/T9%2399/replay.html", headers=h).status_code == 404
    bad = client.post("/v1/reconcile", files={"wallet": ("w.csv", b"a,b\n1,2\n")}, headers=h)
    assert bad.status_code == 422

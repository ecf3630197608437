"""POST /v1/commands on its fast path (LedgerAPI, before FastAPI's machinery) answers exactly as the FastAPI route
it bypasses: the same requests to an app without it, on a store of its own, give the same
statuses, headers and bodies; and it is logged under the route's name."""
from __future__ import annotations

import json
from typing import Any

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from ops.service.app import Settings, create_app

from .conftest import auth, feed, make_keys


def _exchange(url: str, fast: bool) -> tuple[list[tuple[Any, ...]], int]:
    """The answers to a set of requests, and how many of them FastAPI's route handled."""
    keys = make_keys(url, scoped=["T1", "T2"])
    api = create_app(Settings(db_url=url, key_cache_s=0.0))
    api.fast_commands = fast
    route = next(r for r in api.routes if isinstance(r, APIRoute) and r.path == "/v1/commands")
    routed = []
    inner = route.app

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        routed.append(scope["method"])
        await inner(scope, receive, send)

    route.app = counted
    lines = feed(tables=2, rounds=1)[:6]
    ndjson = {"Content-Type": "application/x-ndjson"}
    asks: list[tuple[str, dict[str, str], bytes]] = [
        ("POST", {}, b"\n".join(lines)),
        ("POST", auth("lk_nokey_nosecret"), b"\n".join(lines)),
        ("POST", {"Authorization": "Basic abc"}, b"\n".join(lines)),
        ("POST", auth(keys["backoffice"]), b"\n".join(lines)),
        ("POST", {**auth(keys["studio"]), "Content-Type": "application/json"}, b"{not json"),
        ("POST", {**auth(keys["studio"]), "Content-Type": "application/json"}, b'{"a": 1}'),
        ("POST", {**auth(keys["scoped"]), **ndjson}, b"\n".join(lines[:2])),
        ("POST", {**auth(keys["studio"]), **ndjson}, b"\n".join(lines[:3])),
        ("POST", {**auth(keys["studio"]), "Content-Type": "application/json"},
         b"[" + b",".join(lines[:4]) + b"]"),
        ("POST", {**auth(keys["studio"]), **ndjson}, b""),
        ("GET", auth(keys["studio"]), b""),
    ]
    seen = []
    with TestClient(api) as client:
        for method, headers, body in asks:
            r = client.request(method, "/v1/commands", headers=headers, content=body)
            answer = r.json()
            if r.status_code >= 400:  # this request's own id: the same form on both paths, not the same value
                assert answer.pop("instance") == f"urn:casino-ledger:request:{r.headers['x-request-id']}"
            seen.append((r.status_code, r.headers.get("content-type"), r.headers.get("www-authenticate"), answer))
    return seen, len(routed)


def test_fast_path_answers_as_the_route(store_url, second_store, capsys):
    fast, routed = _exchange(store_url, fast=True)
    assert routed == 0  # FastAPI's route never ran: the fast path answered
    logged = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
    assert [x["route"] for x in logged if x.get("event") == "request"] == ["/v1/commands"] * len(fast)
    slow, routed = _exchange(second_store, fast=False)
    assert fast == slow and routed == 10
    statuses = [s[0] for s in fast]
    assert statuses == [401, 401, 401, 403, 422, 422, 200, 200, 200, 200, 405]  # the table is not vacuous
    assert {r["status"] for r in fast[8][3]} >= {"duplicate"}  # a resend of what was just recorded


def test_the_service_shortens_the_switch_interval_while_it_runs_and_restores_it(tmp_path: Any) -> None:
    """The writer thread gets the GIL back from a busy request loop within the setting
    (Python's 5 ms default cost a batch several waits of 5 ms); the process's own value
    comes back when the service stops."""
    import sys

    before = sys.getswitchinterval()
    api = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'l.db'}", switch_interval_ms=0.7))
    with TestClient(api) as client:
        assert client.get("/healthz").status_code == 200
        assert sys.getswitchinterval() == 0.0007
    assert sys.getswitchinterval() == before
    assert Settings(db_url="x").switch_interval_ms == 1.0


def test_a_request_right_after_its_connection_s_answer_is_urgent(store_url, monkeypatch):
    """The fast path tells the writer that a caller was waiting on its previous answer (a
    table behind its schedule): such a request ends the adaptive window (committer.py)."""
    import ops.service.app as service_app

    keys = make_keys(store_url)
    api = create_app(Settings(db_url=store_url, key_cache_s=0.0))
    lines = feed(tables=1, rounds=1)[:3]
    urgent: list[bool] = []
    with TestClient(api) as client:
        results = api.state.committer.results

        async def recorded(raws: Any, timing: Any = None, is_urgent: bool = False) -> Any:
            urgent.append(is_urgent)
            return await results(raws, timing, is_urgent)

        api.state.committer.results = recorded
        monkeypatch.setattr(service_app, "WAITING_CALLER_S", 3600.0)  # "right after": any time, here
        for line in lines:
            r = client.post("/v1/commands", headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"},
                            content=line)
            assert r.status_code == 200
        monkeypatch.setattr(service_app, "WAITING_CALLER_S", 0.0)  # never
        r = client.post("/v1/commands", headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"},
                        content=feed(tables=1, rounds=2)[-1])
        assert r.status_code == 200
    assert urgent == [False, True, True, False]  # the connection's first request waited on no answer

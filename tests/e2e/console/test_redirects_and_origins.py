"""Issue 27, item 5: a "sign in first" redirect is a redirect (no problem body, no
`internal_error` anywhere: body, request log); every form refuses an Origin of another
scheme, host or port (a console behind a TLS-terminating proxy included); the sign-in
form's CSRF token is one the server signed, never a cookie/field pair the client made up."""
from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from http.cookies import SimpleCookie

import httpx
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from ops.console.pages import COOKIE, PRE_COOKIE, router, signed_in
from ops.service.app import Settings, create_app
from tests.e2e.console.conftest import ConsoleStore, csrf_of, sign_in
from tests.e2e.service.conftest import LiveServer


def _needs(dependant: object, call: object) -> bool:
    found = getattr(dependant, "dependencies", [])
    return any(d.call is call or _needs(d, call) for d in found)


def _routes(method: str | None = None, session: bool = True) -> list[tuple[str, str]]:
    """(method, path) of every console route (taking a session, or not), ids filled in."""
    found = [(m, re.sub(r"\{[^}]+\}", "x", r.path)) for r in router.routes if isinstance(r, APIRoute)
             for m in sorted(r.methods) if (method is None or m == method) and _needs(r.dependant, signed_in) == session]
    assert found, (method, session)
    return found


def _cookies(response: httpx.Response) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        jar.load(header)
    return jar


def test_every_sign_in_first_redirect_is_a_plain_303(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    routes = _routes()
    assert len(routes) >= 14  # every page and form but the sign-in's
    capsys.readouterr()
    for method, path in routes:
        response = client.request(method, path + "?page=2", follow_redirects=False)
        assert response.status_code == 303, (method, path, response.status_code)
        assert response.headers["location"] == "/ui/?next=" + path.replace("/", "%2F") + "%3Fpage%3D2"
        assert "problem" not in response.headers.get("content-type", ""), (method, path)
        assert "internal_error" not in response.text and not response.content, (method, path)
    logged = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    assert [(e["method"], e["status"], e["level"]) for e in logged] == [(m, 303, "info") for m, _ in routes]


def test_the_metrics_count_redirects_as_303(client: TestClient) -> None:
    client.get("/ui/monitor", follow_redirects=False)
    metrics = client.get("/metrics").text
    assert re.search(r'ledger_http_requests_total\{route="/ui/monitor",status="303"\} [1-9]', metrics)
    assert 'route="/ui/monitor",status="500"' not in metrics


@pytest.mark.parametrize("origin", ["https://testserver", "http://evil.example", "http://testserver:8080",
                                    "https://testserver:80", "null"])
def test_every_form_refuses_another_origin(client: TestClient, console_store: ConsoleStore, origin: str) -> None:
    forms = _routes("POST")
    sign_in(client, console_store.keys["admin"])
    token = csrf_of(client)
    files = {"wallet": ("w.csv", console_store.wallet.read_bytes(), "text/csv"),
             "export": ("e.zip", b"x", "application/zip")}  # each form's file: its check is the origin's alone
    for _, path in forms:
        response = client.post(path, data={"csrf": token}, files=files, headers={"Origin": origin},
                               follow_redirects=False)
        assert response.status_code == 403, (origin, path, response.status_code)
    assert client.get("/ui/rounds", follow_redirects=False).status_code == 200  # the sign-out did nothing
    client.cookies.clear()
    form = client.get("/ui/")
    signin = client.post("/ui/", data={"key": console_store.keys["admin"], "csrf": _field(form.text)},
                         headers={"Origin": origin}, follow_redirects=False)
    assert signin.status_code == 403 and COOKIE not in _cookies(signin)


@pytest.mark.parametrize("origin", ["http://testserver", "HTTP://TestServer", "http://testserver:80"])
def test_forms_take_this_origin_with_or_without_its_default_port(client: TestClient, console_store: ConsoleStore,
                                                                 origin: str) -> None:
    form = client.get("/ui/")
    signin = client.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": _field(form.text)},
                         headers={"Origin": origin}, follow_redirects=False)
    assert signin.status_code == 303 and COOKIE in _cookies(signin)
    out = client.post("/ui/signout", data={"csrf": csrf_of(client)}, headers={"Origin": origin},
                      follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/"


def test_an_https_console_refuses_an_http_origin(console_store: ConsoleStore) -> None:
    settings = Settings(db_url=console_store.url, key_cache_s=0.0)
    with TestClient(create_app(settings), base_url="https://console.example") as c:
        form = c.get("/ui/")
        data = {"key": console_store.keys["backoffice"], "csrf": _field(form.text)}
        plain = c.post("/ui/", data=data, headers={"Origin": "http://console.example"}, follow_redirects=False)
        assert plain.status_code == 403
        data["csrf"] = _field(plain.text)  # each form refused comes with a new token
        ok = c.post("/ui/", data=data, headers={"Origin": "https://console.example:443"}, follow_redirects=False)
        assert ok.status_code == 303 and _cookies(ok)[COOKIE]["secure"]


@pytest.fixture(scope="module")
def live(console_store: ConsoleStore) -> Iterator[str]:
    with LiveServer(Settings(db_url=console_store.url, key_cache_s=0.0)) as server:
        yield server.url


def test_behind_a_tls_proxy_the_forwarded_scheme_is_the_origin_s(live: str, console_store: ConsoleStore) -> None:
    """uvicorn takes X-Forwarded-Proto from a trusted proxy (127.0.0.1 by default, as `ledger
    serve`): the browser's https Origin is then this console's, and an http one is not."""
    https = "https://" + live.split("://", 1)[1]
    with httpx.Client(base_url=live, headers={"X-Forwarded-Proto": "https"}) as c:
        for origin, status in ((live, 403), (https, 303)):
            form = c.get("/ui/")  # its cookie is Secure: sent here by hand, as a browser would over https
            pre = _cookies(form)[PRE_COOKIE]
            assert pre["secure"]
            response = c.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": _field(form.text)},
                              headers={"Origin": origin, "Cookie": f"{PRE_COOKIE}={pre.value}"})
            assert response.status_code == status, origin
    assert _cookies(response)[COOKIE]["secure"]


def _field(page: str) -> str:
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


@pytest.mark.parametrize("token", ["made-up", "x" * 40, "1.2.3", "0.abc.def"])
def test_an_invented_sign_in_pair_is_refused(client: TestClient, console_store: ConsoleStore, token: str) -> None:
    client.cookies.set(PRE_COOKIE, token, path="/ui")
    response = client.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": token},
                           headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert response.status_code == 403 and COOKIE not in _cookies(response)


def test_a_changed_sign_in_token_is_refused(client: TestClient, console_store: ConsoleStore) -> None:
    genuine = _field(client.get("/ui/").text)
    for changed in (genuine[:-1] + ("A" if genuine[-1] != "A" else "B"), "9" + genuine, genuine + "x"):
        client.cookies.set(PRE_COOKIE, changed, path="/ui")
        response = client.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": changed},
                               follow_redirects=False)
        assert response.status_code == 403 and COOKIE not in _cookies(response), changed


def test_a_sign_in_token_of_another_browser_is_refused(client: TestClient, console_store: ConsoleStore) -> None:
    """Signed is not enough: the field must be the token of this browser's own form (its cookie)."""
    first = _field(client.get("/ui/").text)
    client.cookies.clear()
    client.get("/ui/")
    response = client.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": first},
                           follow_redirects=False)
    assert response.status_code == 403 and COOKIE not in _cookies(response)


def test_a_sign_in_form_expires(client: TestClient, console_store: ConsoleStore) -> None:
    client.get("/ui/")
    store = client.app.state.ui_sessions  # type: ignore[attr-defined]
    old = store.signin_token(issued_at=int(time.time()) - store.signin_s - 1)
    client.cookies.set(PRE_COOKIE, old, path="/ui")
    response = client.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": old}, follow_redirects=False)
    assert response.status_code == 403 and COOKIE not in _cookies(response)


def test_a_sign_in_form_of_one_worker_signs_in_at_another(console_store: ConsoleStore) -> None:
    """The signing secret is in the store: every worker (and host) of the store checks the same."""
    settings = Settings(db_url=console_store.url, key_cache_s=0.0)
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        token = _field(one.get("/ui/").text)
        two.cookies.set(PRE_COOKIE, one.cookies.get(PRE_COOKIE) or "", path="/ui")
        response = two.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": token},
                            follow_redirects=False)
        assert response.status_code == 303 and COOKIE in _cookies(response)

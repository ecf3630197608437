"""The console's sign-in, sessions and form protection over plain HTTP (TestClient): who
may sign in, the cookie's attributes, CSRF on every form that changes something, sign-out
and key revocation ending sessions server-side, sessions shared by worker processes."""
from __future__ import annotations

import io
import json
import re
import time
import zipfile
from datetime import UTC, datetime, timedelta
from http.cookies import SimpleCookie

import pytest
from fastapi.testclient import TestClient

from ledger.keys import key_store
from ledger.store import open_app
from ops.console.pages import COOKIE
from ops.console.sessions import SessionStore
from ops.service.app import Settings, create_app
from tests.e2e.console.conftest import ConsoleStore, csrf_of, sign_in


def _cookie(response: object) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):  # type: ignore[attr-defined]
        jar.load(header)
    return jar


def test_backoffice_key_signs_in_with_a_strict_http_only_expiring_cookie(client: TestClient,
                                                                         console_store: ConsoleStore) -> None:
    response = sign_in(client, console_store.keys["backoffice"])
    assert response.status_code == 303 and response.headers["location"] == "/ui/rounds"
    morsel = _cookie(response)[COOKIE]
    assert morsel["httponly"] and morsel["samesite"].lower() == "strict" and morsel["path"] == "/ui"
    assert 0 < int(morsel["max-age"]) <= 24 * 3600
    assert console_store.keys["backoffice"] not in morsel.value  # the cookie holds a session token, not the key
    page = client.get("/ui/rounds")
    assert page.status_code == 200 and "test-backoffice (backoffice)" in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]


@pytest.mark.parametrize("role", ["auditor", "admin"])
def test_auditor_and_admin_keys_sign_in(client: TestClient, console_store: ConsoleStore, role: str) -> None:
    assert sign_in(client, console_store.keys[role]).status_code == 303
    assert client.get("/ui/audit").status_code == 200


def test_studio_and_unknown_keys_are_refused(client: TestClient, console_store: ConsoleStore) -> None:
    studio = sign_in(client, console_store.keys["studio"])
    assert studio.status_code == 403 and "A studio key cannot use the console" in studio.text
    assert COOKIE not in _cookie(studio)
    unknown = sign_in(client, console_store.keys["backoffice"][:-2] + "xx")
    assert unknown.status_code == 401 and COOKIE not in _cookie(unknown)
    assert client.get("/ui/rounds", follow_redirects=False).status_code == 303


def test_pages_redirect_to_sign_in_and_back(client: TestClient, console_store: ConsoleStore) -> None:
    for path in ("/ui/rounds?player=alice", "/ui/monitor", "/ui/players/alice", "/ui/tables/bacc-1",
                 "/ui/rounds/dispute-void%231", "/ui/reconcile", "/ui/audit", "/ui/rejections"):
        response = client.get(path, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/ui/?next="), path
    back = sign_in(client, console_store.keys["backoffice"], next_page="/ui/rounds?player=alice")
    assert back.headers["location"] == "/ui/rounds?player=alice"


def test_sign_in_goes_back_only_to_console_pages(client: TestClient, console_store: ConsoleStore) -> None:
    for target in ("//evil.example/ui/", "https://evil.example/", "/ui/\\evil", "/v1/balances"):
        assert sign_in(client, console_store.keys["backoffice"], next_page=target).headers["location"] == "/ui/rounds"


def test_sign_in_form_needs_its_csrf_token(client: TestClient, console_store: ConsoleStore) -> None:
    client.get("/ui/")
    no_token = client.post("/ui/", data={"key": console_store.keys["backoffice"]}, follow_redirects=False)
    wrong = client.post("/ui/", data={"key": console_store.keys["backoffice"], "csrf": "forged"}, follow_redirects=False)
    assert no_token.status_code == wrong.status_code == 403
    assert COOKIE not in _cookie(no_token) and COOKIE not in _cookie(wrong)


def test_forms_that_change_something_need_the_session_csrf_token(client: TestClient,
                                                                  console_store: ConsoleStore) -> None:
    sign_in(client, console_store.keys["admin"])
    token = csrf_of(client)
    wallet = {"wallet": ("wallet.csv", console_store.wallet.read_bytes(), "text/csv")}
    posts = [("/ui/reconcile", {}, wallet), ("/ui/audit/export", {}, None), ("/ui/signout", {}, None)]
    for path, fields, files in posts:
        for bad in ({}, {"csrf": "forged"}):
            assert client.post(path, data={**fields, **bad}, files=files, follow_redirects=False).status_code == 403, path
    cross = client.post("/ui/reconcile", data={"csrf": token}, files=wallet, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403
    assert client.get("/ui/rounds").status_code == 200  # still signed in: the forged sign-out did nothing
    assert client.post("/ui/reconcile", data={"csrf": token}, files=wallet).status_code == 200


def test_sign_out_ends_the_session_on_the_server(client: TestClient, console_store: ConsoleStore) -> None:
    sign_in(client, console_store.keys["backoffice"])
    stolen = client.cookies.get(COOKIE)
    out = client.post("/ui/signout", data={"csrf": csrf_of(client)}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/"
    assert client.get("/ui/rounds", follow_redirects=False).status_code == 303
    client.cookies.set(COOKIE, stolen or "", path="/ui")  # the old cookie, sent again: the session is over
    assert client.get("/ui/rounds", follow_redirects=False).status_code == 303


def test_a_revoked_key_ends_its_sessions(console_store: ConsoleStore) -> None:
    app = open_app(console_store.url)
    try:
        key, row = key_store(app).add("backoffice", name=f"to-revoke-{time.time_ns()}")
    finally:
        app.close()
    with TestClient(create_app(Settings(db_url=console_store.url, key_cache_s=2.0))) as c:
        sign_in(c, key)
        assert c.get("/ui/rounds", follow_redirects=False).status_code == 200
        app = open_app(console_store.url)
        try:
            assert key_store(app).revoke(row.key_id) == 1
        finally:
            app.close()
        # the next request reads the key's row with the session's: no wait for the key cache
        assert c.get("/ui/rounds", follow_redirects=False).status_code == 303


def test_a_session_works_in_every_worker_and_ends_in_all(console_store: ConsoleStore) -> None:
    settings = Settings(db_url=console_store.url, key_cache_s=0.0)
    with TestClient(create_app(settings)) as one, TestClient(create_app(settings)) as two:
        sign_in(one, console_store.keys["backoffice"])
        two.cookies.set(COOKIE, one.cookies.get(COOKIE) or "", path="/ui")
        assert two.get("/ui/rounds", follow_redirects=False).status_code == 200
        one.post("/ui/signout", data={"csrf": csrf_of(one)})
        assert two.get("/ui/rounds", follow_redirects=False).status_code == 303


def test_a_session_expires(client: TestClient, console_store: ConsoleStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sessions' clock held still, then moved past the expiry: a loaded machine taking a
    # second between sign-in and the first page must not expire it early.
    now = [datetime.now(UTC)]
    monkeypatch.setattr("ops.console.sessions._now", lambda: now[0])
    client.app.state.ui_sessions = SessionStore(client.app.state.keys.store, session_s=1)  # type: ignore[attr-defined]
    sign_in(client, console_store.keys["backoffice"])
    assert client.get("/ui/rounds", follow_redirects=False).status_code == 200
    now[0] += timedelta(seconds=1.2)
    assert client.get("/ui/rounds", follow_redirects=False).status_code == 303


def test_backoffice_gets_403_on_the_audit_pages(client: TestClient, console_store: ConsoleStore) -> None:
    sign_in(client, console_store.keys["backoffice"])
    token = csrf_of(client)
    assert client.get("/ui/audit").status_code == 403
    assert client.post("/ui/audit/export", data={"csrf": token}).status_code == 403
    verify = client.post("/ui/audit/verify", data={"csrf": token}, files={"export": ("e.zip", b"x", "application/zip")})
    assert verify.status_code == 403
    assert "Audit" not in client.get("/ui/rounds").text.split("<main", 1)[0]  # no link to it either


def test_auditor_exports_a_period_and_verifies_it(client: TestClient, console_store: ConsoleStore) -> None:
    sign_in(client, console_store.keys["auditor"])
    token = csrf_of(client, "/ui/audit")
    export = client.post("/ui/audit/export", data={"csrf": token})
    assert export.status_code == 200 and export.headers["content-type"] == "application/zip"
    checked = client.post("/ui/audit/verify", data={"csrf": token, "against_store": "true"},
                          files={"export": ("export.zip", export.content, "application/zip")})
    assert checked.status_code == 200 and 'data-testid="verify-ok"' in checked.text
    tampered = client.post("/ui/audit/verify", data={"csrf": token},
                           files={"export": ("export.zip", _tampered(export.content), "application/zip")})
    assert tampered.status_code == 200 and "finding(s)" in tampered.text and "verify-ok" not in tampered.text
    bad = client.post("/ui/audit/verify", data={"csrf": token},
                      files={"export": ("export.zip", b"PK not a zip", "application/zip")})
    assert bad.status_code == 422
    empty = client.post("/ui/audit/export", data={"csrf": token, "since": "2001-01-01", "until": "2001-01-02"})
    assert empty.status_code == 422 and "Nothing exported: no play on those gaming days (2001-01-01" in empty.text


def test_auditor_exports_the_play_of_a_day_recorded_later(client: TestClient, console_store: ConsoleStore) -> None:
    """Issue 28: the export of the day the studio played (simulated 21 November, recorded today)
    said "No events in that period": it read the days the ledger recorded. The form's days are
    gaming days of play by default; recorded days are asked for by name and say so."""
    assert datetime.now(UTC).date().isoformat() != "2026-11-21"
    sign_in(client, console_store.keys["auditor"])
    token = csrf_of(client, "/ui/audit")
    assert "played on (gaming days)" in client.get("/ui/audit").text
    day = {"csrf": token, "since": "2026-11-21", "until": "2026-11-22"}
    export = client.post("/ui/audit/export", data=day)
    assert export.status_code == 200 and export.headers["content-type"] == "application/zip"
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(export.content)).read("manifest.json"))
    assert manifest["count"] > 0 and manifest["requested_range"]["played_from"] == "2026-11-21"
    recorded = client.post("/ui/audit/export", data=day | {"days": "recorded"})
    assert recorded.status_code == 422 and "Nothing exported: no event was recorded on those UTC days" in recorded.text
    later = client.post("/ui/audit/export", data={"csrf": token, "since": "2999-01-01"})
    assert later.status_code == 422 and "nothing recorded yet: the store&#39;s last event was recorded" in later.text
    rejections = client.get("/ui/rejections").text  # no gaming day: said to be the time received
    assert "Filtered by the day the ledger received each command (UTC, server time)" in rejections


def _tampered(zipped: bytes) -> bytes:
    """The export with one amount of its events.jsonl changed."""
    source, out = zipfile.ZipFile(io.BytesIO(zipped)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            body = source.read(name)
            if name == "events.jsonl":
                changed = re.sub(rb'"stake_minor": ?(\d+)', lambda m: m.group(0) + b"7", body, count=1)
                assert changed != body
                body = changed
            target.writestr(name, body)
    return out.getvalue()


def test_pages_show_events_recorded_after_the_last_page(client: TestClient, console_store: ConsoleStore) -> None:
    """The views are caught up before a page answers, and figures kept per store head are made again."""
    from tests.support.feed import Feed, baccarat_round, lines

    sign_in(client, console_store.keys["backoffice"])
    table = f"late-{time.time_ns()}"
    assert client.get(f"/ui/rounds?table={table}").text.count("data-round=") == 0
    assert client.get(f"/ui/tables/{table}").status_code == 404
    app = open_app(console_store.url)
    try:
        assert all(r.status == "accepted" for r in app.ingest(lines(*baccarat_round(Feed(table)))))
    finally:
        app.close()
    assert f'data-round="{table}#1"' in client.get(f"/ui/rounds?table={table}").text
    page = client.get(f"/ui/tables/{table}")
    assert page.status_code == 200 and 'data-testid="ggr-chart" data-points="1"' in page.text


@pytest.mark.parametrize(("path", "status", "says"), [
    ("/ui/rounds/nosuch%23999", 404, "no round nosuch#999"),
    ("/ui/rounds/not-a-ref", 422, "bad_round_ref"),
    ("/ui/rounds?status=lost", 422, "status must be one of"),
    ("/ui/rounds?since=2026-13-01", 422, "is not a day"),
    ("/ui/rounds?page=0", 422, "page"),
    ("/ui/tables/nosuch", 404, "no table nosuch"),
])
def test_errors_are_pages_a_person_reads(client: TestClient, console_store: ConsoleStore, path: str, status: int,
                                         says: str) -> None:
    sign_in(client, console_store.keys["backoffice"])
    response = client.get(path)
    assert response.status_code == status and response.headers["content-type"].startswith("text/html")
    assert says in response.text


def test_a_store_outage_is_a_503_page(client: TestClient, console_store: ConsoleStore,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    sign_in(client, console_store.keys["backoffice"])

    def unreachable(self: SessionStore, token: str | None) -> None:
        raise OSError("connection refused")

    monkeypatch.setattr(SessionStore, "get", unreachable)
    state = client.app.state  # type: ignore[attr-defined]
    health, state.health = state.health, SimpleNamespace(ready=False, status=SimpleNamespace(error="connection refused"))
    try:
        page = client.get("/ui/rounds")
    finally:
        state.health = health  # the app's own, which its shutdown stops
    assert page.status_code == 503 and "The store is unreachable" in page.text and page.headers["retry-after"]


def test_proof_page_gives_the_chain_of_ledger_replay(client: TestClient, console_store: ConsoleStore,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from ops.cli import main as cli

    sign_in(client, console_store.keys["backoffice"])
    for ref in ("dispute-bj#1", "dispute-tp#1"):
        page = client.get(f"/ui/rounds/{ref.replace('#', '%23')}/proof").text  # keeps the chain in the store
        capsys.readouterr()
        assert cli(["replay", ref, "--db", console_store.url, "--json", "--proof"]) == 0
        proof = json.loads(capsys.readouterr().out)["proof"]
        shown = dict(re.findall(r'<tr data-position="(\d+)">.*?<td class="mono">([0-9a-f]{64})</td>', page, re.S))
        assert shown == {p: e["hash"] for p, e in proof["events"].items()} and shown
        assert f"hash {proof['head_hash']}; tree root {proof['tree_root']}" in page

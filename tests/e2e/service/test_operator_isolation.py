"""Isolation proved (issue 30, item 5): on a studio day of 3 operators whose player ids
overlap (`ledger simulate --operators 3`'s generator), every HTTP read route (enumerated from
the app, so a new route is covered or fails here) answered to a backoffice key of OP2, and
every CLI read with `--operator OP2`, holds none of the other operators' player keys, bare
player ids (those OP2 has not), bet ids or stakes. And the search can fail: with the key's scope
removed it finds them."""
from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from domain.operators import EVERY_OPERATOR, OperatorScope
from ledger.keys import ApiKey
from ops.service.app import Settings, create_app
from tests.e2e.service.conftest import auth
from tests.support.operator_day import MINE, Day, make_day

# Routes that are no read of the ledger's players: the feed, the API's documentation, health.
NOT_READS = {"/v1/commands", "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/redoc",
             "/docs/oauth2-redirect"}
# POST reads: uploads (a wallet, an export to verify), not searched here (see the report of issue 30).
UPLOADS = {"/v1/reconcile", "/v1/audit/verify"}


@pytest.fixture
def day(tmp_path: Any) -> tuple[Day, str, str]:
    """SQLite: the matrix is about what the reads answer (the key table on PostgreSQL:
    test_operator_keys.py). The day of the console's matrix (tests/support/operator_day.py)."""
    return make_day(tmp_path)


def read_routes(api: Any) -> list[tuple[str, bool]]:
    """Every route of the API's own description (/openapi.json) but NOT_READS: a GET route is
    searched, a new POST one fails here until it is."""
    paths = {p: ops for p, ops in api.openapi()["paths"].items() if p not in NOT_READS}
    posts = {p for p, ops in paths.items() if "post" in ops}
    assert posts == UPLOADS, f"a new POST route: search its answers here ({posts ^ UPLOADS})"
    assert all(set(ops) <= {"get", "post"} for ops in paths.values()), paths
    return sorted((p, any(q["name"] == "operator" for q in ops["get"].get("parameters", [])))
                  for p, ops in paths.items() if "get" in ops)


def _path(route: str, day: Day) -> str:
    values: dict[str, str] = {"round_ref": day.shared_round.replace("#", "%23"), "player": day.player, "operator_id": "OP1",
              "ref": day.shared_round.replace("#", "%23"), "table": day.shared_round.split("#")[0]}

    def fill(m: re.Match[str]) -> str:
        assert m.group(1) in values, f"{route}: teach the isolation matrix its parameter {m.group(1)}"
        return values[m.group(1)]

    return re.sub(r"\{(\w+)(?::\w+)?\}", fill, route)


def http_findings(client: TestClient, day: Day, key: str) -> dict[str, set[str]]:
    findings: dict[str, set[str]] = {}
    for route, takes_operator in read_routes(client.app):
        path = _path(route, day)
        for query in ("", f"?operator={MINE}") if takes_operator else ("",):
            answer = client.get(path + query, headers=auth(key))
            assert answer.status_code in (200, 403), (path + query, answer.status_code, answer.text[:300])
            if answer.status_code == 403:
                assert answer.json()["code"] in ("operator_forbidden", "forbidden"), path
            found = day.found(answer.text)
            if found:
                findings[path + query] = found
    return findings


def cli_findings(day: Day, store_url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, set[str]]:
    from ops.cli import main

    findings: dict[str, set[str]] = {}
    for argv in (["ggr"], ["balances"], ["refunds"], ["recall", day.player], ["round", "list"],
                 ["round", "list", "--player", day.player]):
        code = main([*argv, "--db", store_url, "--operator", MINE, "--json"])
        out = capsys.readouterr().out
        assert code == 0 and out, argv
        found = day.found(out)
        if found:
            findings[" ".join(argv)] = found
    return findings


def test_an_operators_key_sees_no_other_operators_player(day: tuple[Day, str, str],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    found, store_url, key = day
    assert len(found.tokens) > 100
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as client:
        assert http_findings(client, found, key) == {}
        # the console's pages, signed in with such a key: tests/e2e/console/test_operator_isolation_console.py
    assert cli_findings(found, store_url, capsys) == {}


def test_the_matrix_finds_the_leak_without_the_scope(day: tuple[Day, str, str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    found, store_url, key = day
    monkeypatch.setattr(ApiKey, "scope", property(lambda self: EVERY_OPERATOR))
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as client:
        leaks = http_findings(client, found, key)
    assert len(leaks) >= 3 and any("/v1/rounds/" in path for path in leaks), leaks
    assert OperatorScope.of(MINE).allows_key(f"{MINE}~p1")

"""Keys limited to operators (issue 30, item 4): a backoffice key of OP2 reads only OP2's
players; `?operator=` narrows within the key's operators, never widens; the routes that show
every operator refuse it; a studio key of OP1 places only OP1's bets, and a key limited to
tables configures no operator. SQLite and PostgreSQL (the key table's new column)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from ledger.keys import key_store
from ledger.store import open_app
from ops.service.app import Settings, create_app
from ops.sim.simulator import Studio
from tests.e2e.service.conftest import auth


def _store_with_keys(store_url: str) -> dict[str, str]:
    app = open_app(store_url)
    try:
        app.ingest(list(Studio(3, 10, seed=3, operators=3).lines()))
        store = key_store(app)
        return {"op2": store.add("backoffice", "op2", operators=["OP2"])[0],
                "op13": store.add("backoffice", "op13", operators=["OP1", "OP3"])[0],
                "all": store.add("backoffice", "all")[0],
                "studio-op1": store.add("studio", "s1", operators=["OP1"])[0],
                "studio-t": store.add("studio", "st", tables=["T1"])[0]}
    finally:
        app.close()


@pytest.fixture
def scoped(store_url: str) -> Iterator[tuple[TestClient, dict[str, str]]]:
    keys = _store_with_keys(store_url)
    with TestClient(create_app(Settings(db_url=store_url, key_cache_s=0.0))) as client:
        yield client, keys


def test_key_reads_only_its_operators(scoped: tuple[TestClient, dict[str, str]]) -> None:
    client, keys = scoped
    op2 = auth(keys["op2"])
    owners = {a["owner"] for a in client.get("/v1/balances", headers=op2).json()["accounts"]}
    assert owners and all(o.startswith("OP2~") for o in owners)
    everyone = {a["owner"] for a in client.get("/v1/balances", headers=auth(keys["all"])).json()["accounts"]}
    assert everyone > owners
    widened = client.get("/v1/balances?operator=OP1", headers=op2)
    assert widened.status_code == 403 and widened.json()["code"] == "operator_forbidden"
    assert client.get("/v1/ggr?operator=OP2", headers=op2).json() == client.get("/v1/ggr", headers=op2).json()
    both = client.get("/v1/ggr", headers=auth(keys["op13"])).json()["totals"]["EUR"]["ggr_minor"]
    parts = [client.get(f"/v1/ggr?operator={o}", headers=auth(keys["all"])).json()["totals"]["EUR"]["ggr_minor"]
             for o in ("OP1", "OP3")]
    assert both == sum(parts)
    player = sorted(owners)[0].partition("~")[2]
    assert client.get(f"/v1/recall/{player}", headers=op2).json()["player_id"] == f"OP2~{player}"
    rounds = client.get("/v1/rounds", headers=op2).json()["rounds"]
    all_rounds = client.get("/v1/rounds", headers=auth(keys["all"])).json()["rounds"]
    assert 0 < len(rounds) < len(all_rounds)
    # a key of two operators names the player's operator; the default operator's is not its own
    assert client.get(f"/v1/recall/{player}", headers=auth(keys["op13"])).json()["code"] == "operator_forbidden"
    shared = "/v1/rounds/bacc-1%231"  # OP2's and the others' bets (the simulated day, seed 3)
    seen, full = client.get(shared, headers=op2).json(), client.get(shared, headers=auth(keys["all"])).json()
    others = [b for b in full["bets"] if not b["player_id"].startswith("OP2~")]
    assert seen["bets"] == [b for b in full["bets"] if b["player_id"].startswith("OP2~")] and others
    assert seen["other_operators"] == {"bets": len(others), "staked_minor": sum(b["stake_minor"] for b in others)}
    assert full["other_operators"] is None
    replay = client.get(shared + "/replay", headers=op2).json()
    assert replay["other_operators"] == seen["other_operators"]
    page = client.get(shared + "/replay.html", headers=op2)  # the dispute page: the same redaction
    assert page.status_code == 200 and f'"other_operators": {{"bets": {len(others)}' in page.text
    assert client.get("/v1/rejections", headers=op2).status_code == 200


def test_studio_keys_write_their_operators_and_tables(scoped: tuple[TestClient, dict[str, str]]) -> None:
    client, keys = scoped
    bet: dict[str, Any] = {"type": "place_bet", "command_id": "k-bet", "table_id": "T1", "round_no": 999,
                           "studio_time": "2026-11-21T08:00:00+00:00", "player_id": "p1", "bet_id": "b-k",
                           "spot": "player", "amount_minor": 100, "operator_id": "OP2"}
    configure = {"type": "configure_operator", "command_id": "cfg-k", "operator_id": "OP2",
                 "studio_time": "2026-11-21T08:00:00+00:00", "name": "x", "currencies": ["EUR"],
                 "timezone": "UTC", "jurisdictions": ["ES"]}
    answers = client.post("/v1/commands", headers=auth(keys["studio-op1"]),
                          content=json.dumps([bet, {**bet, "operator_id": None}, configure])).json()
    assert [a["code"] for a in answers] == ["operator_not_allowed"] * 3
    assert "OP1 only, not OP2" in answers[0]["message"] and "not default" in answers[1]["message"]
    answer = client.post("/v1/commands", headers=auth(keys["studio-t"]), content=json.dumps([configure])).json()
    assert answer[0]["code"] == "table_not_allowed" and "configure_operator" in answer[0]["message"]


def test_keys_cli_takes_operators(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from ops.cli import main

    db = f"sqlite:///{tmp_path / 'k.db'}"
    assert main(["keys", "add", "--role", "backoffice", "--operator", "OP1", "--operator", "OP2,OP3",
                 "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["operators"] == ["OP1", "OP2", "OP3"]
    assert main(["keys", "add", "--role", "admin", "--operator", "OP1", "--db", db]) == 2
    assert "sees every operator" in capsys.readouterr().err

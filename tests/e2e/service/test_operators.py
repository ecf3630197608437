"""Operators over HTTP: the admin's operator routes, and every read route narrowed by
`?operator=` on a studio day of 3 operators whose player ids overlap."""
from __future__ import annotations

from fastapi.testclient import TestClient

from ledger.store import open_app
from ops.sim.simulator import Studio
from tests.e2e.service.conftest import auth


def test_operator_routes_and_reads_per_operator(client: TestClient, keys: dict[str, str], store_url: str) -> None:
    app = open_app(store_url)
    try:
        app.ingest(list(Studio(3, 10, seed=3, operators=3).lines()))
    finally:
        app.close()
    admin, reader = auth(keys["admin"]), auth(keys["backoffice"])
    listed = client.get("/v1/operators", headers=admin).json()
    assert [o["operator_id"] for o in listed] == ["OP1", "OP2", "OP3", "default"]
    assert client.get("/v1/operators/OP2", headers=admin).json()["current"]["currencies"] == ["EUR"]
    assert client.get("/v1/operators/OP9", headers=admin).status_code == 404
    assert client.get("/v1/operators", headers=reader).status_code == 403  # the studio's own business
    assert client.get("/v1/ggr?operator=a%20b", headers=reader).status_code == 422
    table = client.get("/v1/ggr", headers=reader).json()["totals"]["EUR"]["ggr_minor"]
    shares = [client.get(f"/v1/ggr?operator={op}", headers=reader).json()["totals"]["EUR"]["ggr_minor"]
              for op in ("OP1", "OP2", "OP3")]
    assert sum(shares) == table
    owners = {a["owner"] for a in client.get("/v1/balances?operator=OP2", headers=reader).json()["accounts"]}
    assert owners and all(o.startswith("OP2~") for o in owners)
    player = sorted(owners)[0].partition("~")[2]
    recalled = client.get(f"/v1/recall/{player}?operator=OP2", headers=reader).json()
    assert recalled["rounds"] and recalled["player_id"] == f"OP2~{player}"
    rounds = client.get(f"/v1/rounds?operator=OP2&player={player}", headers=reader).json()["rounds"]
    assert {r["round_id"] for r in rounds} == {r["round_id"] for r in recalled["rounds"]}

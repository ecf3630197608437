"""GET /v1/recall/{player} tells the player's own story (issue 28 item 2): each round's own
stake, return, refund and net in ledger order, a running balance that adds up row by row,
the totals of the player's history (closing at the account's balance), and what a
correction changed."""
from __future__ import annotations

from fastapi.testclient import TestClient

from ledger.store import open_app
from tests.e2e.service.conftest import auth, feed
from tests.support.dispute_rounds import RESETTLED, REVERSED_VOIDED, ingest_corrections
from tests.support.story import assert_adds_up


def test_recall_adds_up_row_by_row(client: TestClient, keys: dict[str, str], store_url: str) -> None:
    app = open_app(store_url)
    try:
        app.ingest(feed(tables=4, rounds=12, fault_rate=300))
        ingest_corrections(app)
    finally:
        app.close()
    headers = auth(keys["backoffice"])
    accounts = {a["owner"]: a["balance_minor"]
                for a in client.get("/v1/balances?kind=player", headers=headers).json()["accounts"]}
    assert len(accounts) > 5
    for player, balance in accounts.items():
        whole = client.get(f"/v1/recall/{player}?last=1000", headers=headers).json()
        assert_adds_up(whole["rounds"], whole["totals"], every_round=True)
        (total,) = whole["totals"].values()
        assert (total["opening_minor"], total["closing_minor"], whole["older"]) == (0, balance, False)
        last = client.get(f"/v1/recall/{player}", headers=headers).json()
        assert last["rounds"] == whole["rounds"][-10:] and last["totals"] == whole["totals"]
    alice = {f"{r['table_id']}#{r['round_no']}": r
             for r in client.get("/v1/recall/alice", headers=headers).json()["rounds"]}
    voided, resettled = alice[REVERSED_VOIDED], alice[RESETTLED]
    assert (voided["status"], voided["net_minor"], voided["corrections"]) == (
        "voided", 0, [{"settlement_no": 1, "returned_minor": 1950}])
    assert voided["correction"].endswith("then voided: refunded 10.00 EUR")
    assert (resettled["status"], resettled["net_minor"]) == ("settled", 1000)
    assert resettled["correction"].endswith("settled again: returns 20.00 EUR (no change for this player)")

"""configure_table through POST /v1/commands: accepted for a studio key's own table,
`table_not_allowed` for another table's (nothing recorded)."""
from __future__ import annotations

from typing import Any

from tests.e2e.service.conftest import auth, make_keys


def _configure(table_id: str, n: int) -> dict[str, Any]:
    return {"type": "configure_table", "command_id": f"cfg-{table_id}-{n}", "table_id": table_id,
            "studio_time": "2026-11-23T10:00:00+01:00", "game": "baccarat", "ruleset_id": "baccarat/live-8d",
            "ruleset_version": 1, "currency": "EUR", "timezone": "Europe/Madrid", "difference_max_minor": 500_000}


def test_configure_table_over_http_with_a_scoped_key(client: Any, store_url: str) -> None:
    key = make_keys(store_url, only_mine=["bacc-7"])["only_mine"]
    r = client.post("/v1/commands", json=[_configure("bacc-7", 1), _configure("bacc-8", 1)], headers=auth(key))
    assert r.status_code == 200
    mine, other = r.json()
    assert (mine["status"], mine["events"]) == ("accepted", ["Table.Configured"])
    assert (other["status"], other["code"]) == ("refused", "table_not_allowed")
    from ledger.eventlog import EventLog

    log = EventLog.open(store_url)
    try:
        assert list(log.tables()) == ["bacc-7"]
        assert log.table_history("bacc-7")[0].settings == {"difference_max_minor": 500_000}
    finally:
        log.close()

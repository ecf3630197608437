"""A stopped view is loud in the service (issue 27): /readyz lists it (still 200: the stop is the
store's, the same behind every instance; read by the health task, never waited for), /metrics has ledger_view_stopped and each view's
position, and reads of the other views keep answering; a rebuild clears it. A store holding
text no store can hold (a NUL, a lone surrogate) answers every read."""
from __future__ import annotations

import re
import time
from typing import Any

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.service.health import VIEWS_INTERVAL_S
from projections import balances
from projections.runner import Projector
from tests.e2e.service.conftest import auth
from tests.store.projections.test_view_stops import hostile_history, stopping_store, store_raw


def readyz_once(client, settled) -> Any:
    """/readyz once `settled(its JSON)` (the health task reads the stopped views every
    VIEWS_INTERVAL_S), within a few seconds."""
    deadline = time.monotonic() + 3 * VIEWS_INTERVAL_S + 2
    while True:
        ready = client.get("/readyz")
        if settled(ready.json()) or time.monotonic() > deadline:
            return ready
        time.sleep(0.1)


def metric(text: str, name: str, view: str) -> float:
    found = re.search(rf'^{name}{{view="{view}"}} (\S+)$', text, re.MULTILINE)
    assert found, f"{name} of {view} not in /metrics"
    return float(found.group(1))


def test_a_stopped_view_shows_in_readyz_and_metrics_and_the_others_answer(client, keys, store_url) -> None:
    app = open_app(store_url)
    try:
        events, bad = stopping_store(app, balances.VIEW)
    finally:
        app.close()
    ready = readyz_once(client, lambda body: body.get("views_stopped"))
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    stopped = {s["view"]: s for s in ready.json()["views_stopped"]}
    assert set(stopped) == {"balances"}
    assert stopped["balances"]["position"] == bad.position and stopped["balances"]["event_type"] == type(bad).__name__
    assert stopped["balances"]["aggregate_id"] == bad.originator_id and "Boom" in stopped["balances"]["error"]
    h = auth(keys["backoffice"])
    assert client.get("/v1/ggr", headers=h).status_code == 200  # catches the views up: the stop stays
    assert client.get("/v1/balances", headers=h).status_code == 200  # the stopped view answers as it stands
    text = client.get("/metrics").text
    assert metric(text, "ledger_view_stopped", "balances") == 1 and metric(text, "ledger_view_stopped", "recall") == 0
    assert metric(text, "ledger_view_stopped", "ggr") == 0
    assert metric(text, "ledger_view_position", "balances") == bad.position - 1
    assert metric(text, "ledger_view_position", "ggr") == len(events)

    app = open_app(store_url)
    try:
        p = Projector(EventLog(app))
        p.rebuild()
        p.close()
    finally:
        app.close()
    assert readyz_once(client, lambda body: not body["views_stopped"]).json()["views_stopped"] == []
    client.get("/v1/ggr", headers=h)
    text = client.get("/metrics").text
    assert metric(text, "ledger_view_stopped", "balances") == 0
    assert metric(text, "ledger_view_position", "balances") == len(events)


def test_text_no_store_holds_answers_every_read(client, keys, store_url) -> None:
    app = open_app(store_url)
    try:
        store_raw(app, hostile_history())
    finally:
        app.close()
    h = auth(keys["backoffice"])
    for route in ("/v1/refunds", "/v1/balances", "/v1/ggr", "/v1/rounds"):
        assert client.get(route, headers=h).status_code == 200, route
    assert client.get("/readyz").json()["views_stopped"] == []
    assert metric(client.get("/metrics").text, "ledger_view_stopped", "refunds") == 0

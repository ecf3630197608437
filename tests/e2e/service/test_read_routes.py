"""The read routes answer what the read service (projections/queries.py) returns, the same
data `ledger X --json` prints (tests/store/ops/test_read_service.py): one source for both."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
from typing import Any
from zoneinfo import ZoneInfo

from ledger.eventlog import EventLog
from projections import queries
from projections.round_search import RoundQuery
from projections.runner import Projector
from projections.state import Zones
from tests.e2e.service.conftest import auth, feed


def plain(value: Any) -> Any:
    if isinstance(value, list):
        return [plain(v) for v in value]
    return json.loads(json.dumps(dataclasses.asdict(value), default=str))


ZONES = ("Pacific/Kiritimati", "Pacific/Pago_Pago")  # UTC+14 and UTC-11


def test_each_read_route_is_its_query(client, keys, store_url) -> None:
    lines = feed(tables=4, rounds=3)
    headers = auth(keys["backoffice"])
    r = client.post("/v1/commands", content=b"\n".join(lines),
                    headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200
    first = json.loads(lines[0])
    ref = f"{first['table_id']}#{first['round_no']}"
    player = next(json.loads(x)["player_id"] for x in lines if b'"place_bet"' in x)
    answers = {path: client.get(path, headers=headers) for path in (
        "/v1/rounds", "/v1/rounds?status=settled&limit=2", f"/v1/rounds/{ref.replace('#', '%23')}",
        f"/v1/rounds/{ref.replace('#', '%23')}/replay", "/v1/balances?kind=player", "/v1/refunds", "/v1/ggr",
        f"/v1/recall/{player}", "/v1/rejections", *(f"{path}?timezone={zone}" for zone in ZONES for path in (
            "/v1/refunds", "/v1/ggr", f"/v1/recall/{player}")))}
    assert all(a.status_code == 200 for a in answers.values()), {p: a.text[:200] for p, a in answers.items()}
    log = EventLog.open(store_url)
    projector = Projector(log)
    try:
        projector.catch_up()
        db, round_uuid = projector.db, queries.round_ref(ref)
        expected = {
            "/v1/rounds": queries.round_list(db),
            "/v1/rounds?status=settled&limit=2": queries.round_list(db, RoundQuery(status="settled"), limit=2),
            f"/v1/rounds/{ref.replace('#', '%23')}": queries.round_detail(log, round_uuid, ref),
            f"/v1/rounds/{ref.replace('#', '%23')}/replay": queries.round_replay(log, round_uuid, ref=ref),
            "/v1/balances?kind=player": queries.balances(db, kind="player"),
            "/v1/refunds": queries.refunds(db),
            "/v1/ggr": queries.ggr(db),
            f"/v1/recall/{player}": queries.recall(db, player, 10),
            "/v1/rejections": queries.rejections(log),
        }
        for zone in ZONES:
            zones = Zones(ZoneInfo(zone))
            expected[f"/v1/refunds?timezone={zone}"] = queries.refunds(db, zone=zones)
            expected[f"/v1/ggr?timezone={zone}"] = queries.ggr(db, zones)
            expected[f"/v1/recall/{player}?timezone={zone}"] = queries.recall(db, player, 10, zones)
    finally:
        projector.close()
        log.close()
    for path, result in expected.items():
        assert answers[path].json() == plain(result), path
    assert answers["/v1/rounds"].json()["rounds"] and answers["/v1/balances?kind=player"].json()["accounts"]
    # Not vacuous: at any hour one of the two zones puts the rounds on another day than UTC.
    assert any(answers[f"/v1/ggr?timezone={zone}"].json() != answers["/v1/ggr"].json() for zone in ZONES)


def test_rounds_search_by_player_pages_by_cursor_and_gives_csv(client, keys) -> None:
    """Issue 28: GET /v1/rounds ignored `player` (every round came back); now a player's id
    started in any case lists that player's rounds with their own figures, a page at a time."""
    lines = feed(tables=4, rounds=6)
    r = client.post("/v1/commands", content=b"\n".join(lines),
                    headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200
    headers = auth(keys["backoffice"])
    player = next(json.loads(x)["player_id"] for x in lines if b'"place_bet"' in x)
    start = player[:-1].upper()
    every = client.get("/v1/rounds", params={"player": start, "sort": "-stake"}, headers=headers).json()
    assert every["count"] == len(every["rounds"]) > 4 and every["next_cursor"] is None
    assert {x["player_id"] for x in every["rounds"]} > {player}  # several players start so, any case
    assert all(x["player_id"].lower().startswith(start.lower()) for x in every["rounds"])
    stakes = [x["player_staked_minor"] for x in every["rounds"]]
    assert stakes == sorted(stakes, reverse=True)
    total = client.get("/v1/rounds", headers=headers).json()
    assert total["count"] == len(total["rounds"]) > 0 and all(
        x["player_id"] is None for x in total["rounds"])
    paged, cursor = [], None
    while True:
        page = client.get("/v1/rounds", params={"player": start, "sort": "-stake", "limit": 3,
                                                **({"cursor": cursor} if cursor else {})}, headers=headers).json()
        assert page["count"] == every["count"]
        paged += page["rounds"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert paged == every["rounds"]
    mine = [x for x in every["rounds"] if x["status"] == "settled"]
    assert mine and all(x["player_net_minor"] == x["player_returned_minor"] + x["player_refunded_minor"]
                        - x["player_staked_minor"] for x in mine)
    text = client.get("/v1/rounds", params={"player": start}, headers={**headers, "Accept": "text/csv"})
    assert text.headers["content-type"].startswith("text/csv") and text.headers["x-count"] == str(every["count"])
    assert len(list(csv.DictReader(io.StringIO(text.text)))) == every["count"]
    corrected = client.get("/v1/rounds", params={"status": "reversed"}, headers=headers).json()["rounds"]
    assert corrected and all(x["reversals"] > 0 for x in corrected)
    assert {x["round"] for x in corrected} == {x["round"] for x in total["rounds"] if x["reversals"]}
    for params in ({"sort": "net"}, {"cursor": "not-a-cursor"}, {"time_from": "25:00"}):
        refused = client.get("/v1/rounds", params=params, headers=headers)
        assert refused.status_code == 422 and refused.json()["code"] == "request_invalid", params

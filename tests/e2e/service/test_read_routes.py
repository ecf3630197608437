"""The read routes answer what the read service (projections/queries.py) returns, the same
data `ledger X --json` prints (tests/store/ops/test_read_service.py): one source for both."""
from __future__ import annotations

import dataclasses
import json
from typing import Any
from zoneinfo import ZoneInfo

from ledger.eventlog import EventLog
from projections import queries
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
            "/v1/rounds?status=settled&limit=2": queries.round_list(db, status="settled", limit=2),
            f"/v1/rounds/{ref.replace('#', '%23')}": queries.round_detail(log, round_uuid, ref),
            f"/v1/rounds/{ref.replace('#', '%23')}/replay": queries.round_replay(log, round_uuid, ref=ref),
            "/v1/balances?kind=player": queries.balances(db, kind="player"),
            "/v1/refunds": queries.refunds(db, log=log),
            "/v1/ggr": queries.ggr(db, log=log),
            f"/v1/recall/{player}": queries.recall(db, player, 10),
            "/v1/rejections": queries.rejections(log),
        }
        for zone in ZONES:
            zones = Zones(ZoneInfo(zone))
            expected[f"/v1/refunds?timezone={zone}"] = queries.refunds(db, zone=zones, log=log)
            expected[f"/v1/ggr?timezone={zone}"] = queries.ggr(db, zones, log=log)
            expected[f"/v1/recall/{player}?timezone={zone}"] = queries.recall(db, player, 10, zones)
    finally:
        projector.close()
        log.close()
    for path, result in expected.items():
        assert answers[path].json() == plain(result), path
    assert answers["/v1/rounds"].json()["rounds"] and answers["/v1/balances?kind=player"].json()["accounts"]
    # Not vacuous: at any hour one of the two zones puts the rounds on another day than UTC.
    assert any(answers[f"/v1/ggr?timezone={zone}"].json() != answers["/v1/ggr"].json() for zone in ZONES)


def test_an_empty_period_says_why(client, keys) -> None:
    """Issue 28: an empty answer says whether nothing was played on those gaming days or
    nothing is recorded yet, so that it is not read as a clean day."""
    headers = auth(keys["backoffice"])
    nothing = client.get("/v1/ggr", headers=headers).json()
    assert nothing["rows"] == [] and nothing["empty"] == {
        "reason": "nothing_recorded", "message": "nothing recorded yet: the store holds no events",
        "last_recorded": None}
    r = client.post("/v1/commands", content=b"\n".join(feed(tables=1, rounds=2)),
                    headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200
    assert client.get("/v1/ggr", headers=headers).json()["empty"] is None
    day = client.get("/v1/refunds?from=2001-01-01&to=2001-01-02", headers=headers).json()
    assert day["totals"] == [] and day["empty"]["reason"] == "no_play"
    assert day["empty"]["message"].startswith("no play on those gaming days (2001-01-01 to 2001-01-02, by studio time")
    later = client.get("/v1/refunds?from=2999-01-01", headers=headers).json()
    assert later["empty"]["reason"] == "nothing_recorded" and "before 2999-01-01 began" in later["empty"]["message"]

"""The read routes answer what the read service (projections/queries.py) returns, the same
data `ledger X --json` prints (tests/store/ops/test_read_service.py): one source for both."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from ledger.eventlog import EventLog
from projections import queries
from projections.folding import Zones
from projections.round_search import RoundQuery
from projections.runner import Projector
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
            "/v1/refunds": queries.refunds(db, log=log),
            "/v1/ggr": queries.ggr(db, log=log),
            f"/v1/recall/{player}": queries.recall(db, player, 10),
            "/v1/rejections": queries.rejection_page(log),
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


# ---------------------------------------------------------------- refusing what a read does not understand

PATH_VALUES = {"round_ref": "t1%231", "player": "p1", "operator_id": "default"}  # any value: the parameters are checked before the path's


def read_routes(app: Any) -> list[str]:
    """Every GET route under /v1, as the app declares them (routers included in the app are not
    in app.routes: its document lists them), their path parameters filled in."""
    paths = [path for path, methods in app.openapi()["paths"].items() if path.startswith("/v1/") and "get" in methods]
    return [re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES[m.group(1)], path) for path in paths]


def ingested(client: Any, keys: dict[str, str], **shape: int) -> list[bytes]:
    lines = feed(**shape)
    r = client.post("/v1/commands", content=b"\n".join(lines),
                    headers={**auth(keys["studio"]), "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200
    return lines


def test_every_read_route_refuses_an_unknown_parameter_by_name(client, keys) -> None:
    headers = auth(keys["admin"])
    paths = read_routes(client.app)
    assert len(paths) >= 10 and "/v1/rounds" in paths and "/v1/audit/export" in paths
    for path in paths:
        r = client.get(f"{path}?plyer=p0008&Since=2026-11-21", headers=headers)  # misspelt: no route takes them
        assert r.status_code == 422, (path, r.text)
        body = r.json()
        assert body["code"] == "unknown_parameter", (path, body)
        assert [e["location"] for e in body["errors"]] == ["query.Since", "query.plyer"], (path, body)
        assert "plyer" in body["detail"]
    # a parameter of a dependency (the time zone) is the route's own; no key: 401 before the parameters
    assert client.get("/v1/ggr?timezone=UTC&since=2026-11-21", headers=headers).status_code == 200
    assert client.get("/v1/ggr?plyer=p1").status_code == 401


DAY_ROUTES = ("/v1/ggr", "/v1/refunds")  # whole gaming days
TIME_ROUTES = ("/v1/rounds", "/v1/rejections")  # times: the studio's (rounds), the service's receipt (rejections)


def test_every_period_read_takes_since_and_until(client, keys) -> None:
    routes = {path for path, methods in client.app.openapi()["paths"].items()
              if any(p["name"] == "since" for p in methods.get("get", {}).get("parameters", []))}
    assert routes == {*DAY_ROUTES, *TIME_ROUTES}
    ingested(client, keys, tables=5, rounds=4)
    headers = auth(keys["admin"])
    whole = {path: client.get(path, headers=headers).json() for path in (*DAY_ROUTES, *TIME_ROUTES)}
    day = whole["/v1/ggr"]["rows"][0]["day"]
    after = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
    assert all(r["day"] == day for r in whole["/v1/ggr"]["rows"]) and whole["/v1/refunds"]["refunds"]
    for path in DAY_ROUTES:
        assert client.get(f"{path}?since={day}&until={after}", headers=headers).json() == whole[path], path
        for query in (f"since={after}", f"until={day}"):  # nothing in it, and a note saying why
            empty = client.get(f"{path}?{query}", headers=headers).json()
            assert empty.pop("empty")["reason"] == "no_play", (path, query)
            assert {**empty, "empty": None} == {**whole[path], **EMPTY[path]}, (path, query)
    # refunds' old names still work (deprecated): `to` is the last day, included
    assert client.get(f"/v1/refunds?from={day}&to={day}", headers=headers).json() == whole["/v1/refunds"]
    assert client.get(f"/v1/refunds?from={after}", headers=headers).json()["refunds"] == []
    r = client.get(f"/v1/refunds?from={day}&since={day}", headers=headers)
    assert r.status_code == 422 and r.json()["errors"][0]["location"] == "query.from"
    r = client.get(f"/v1/ggr?since={after}&until={day}", headers=headers)
    assert r.status_code == 422 and r.json()["errors"][0]["location"] == "query.since"
    for path, key, time_key in (("/v1/rounds", "rounds", "studio_time"), ("/v1/rejections", "rejections", "received_at")):
        items = whole[path][key]
        assert len(items) >= 2, path
        cut = items[len(items) // 2][time_key]
        early = client.get(f"{path}?until={cut}", headers=headers).json()[key]
        late = client.get(f"{path}?since={cut}", headers=headers).json()[key]
        assert early and late and early + late == items, path
        assert all(x[time_key] < cut for x in early) and all(x[time_key] >= cut for x in late), path


EMPTY: dict[str, dict[str, Any]] = {"/v1/ggr": {"rows": [], "totals": {}}, "/v1/refunds": {"refunds": [], "totals": []}}


def walk(client: Any, headers: dict[str, str], path: str, key: str, limit: int) -> list[Any]:
    """Every item of a list route, a page of `limit` at a time from its first cursor-less page."""
    found: list[Any] = []
    cursor: str | None = None
    pages = 0
    while True:
        query = f"limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        answer = client.get(f"{path}{'&' if '?' in path else '?'}{query}", headers=headers)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        assert len(page[key]) <= limit
        found += page[key]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            assert pages > 2, (path, pages)  # paged, not one page
            return found


def test_cursor_paging_walks_every_list_to_its_end(client, keys) -> None:
    ingested(client, keys, tables=4, rounds=4)
    headers = auth(keys["admin"])
    for path, key, limit in (("/v1/rounds", "rounds", 3), ("/v1/rounds?status=settled", "rounds", 2),
                             ("/v1/balances?kind=all", "accounts", 5), ("/v1/rejections", "rejections", 2)):
        whole = client.get(path, headers=headers).json()
        assert whole["next_cursor"] is None
        walked = walk(client, headers, path, key, limit)
        assert walked == whole[key], path  # no gap, no duplicate, the same order
    # the old paging of rejections (after an id) still works
    first = client.get("/v1/rejections?limit=1", headers=headers).json()["rejections"][0]
    rest = client.get(f"/v1/rejections?after={first['id']}", headers=headers).json()["rejections"]
    assert [first, *rest] == client.get("/v1/rejections", headers=headers).json()["rejections"]
    # a cursor the route did not make is refused, named
    rounds_cursor = client.get("/v1/rounds?limit=1", headers=headers).json()["next_cursor"]
    for path in (f"/v1/balances?cursor={rounds_cursor}", "/v1/rounds?cursor=not-a-cursor"):
        r = client.get(path, headers=headers)
        assert r.status_code == 422 and r.json()["errors"][0]["location"] == "query.cursor", r.text


def test_balances_are_players_accounts_unless_asked(client, keys) -> None:
    ingested(client, keys, tables=3, rounds=3)
    headers = auth(keys["admin"])
    default = client.get("/v1/balances", headers=headers).json()
    kinds = {a["kind"] for a in client.get("/v1/balances?kind=all", headers=headers).json()["accounts"]}
    assert default["accounts"] and {a["kind"] for a in default["accounts"]} == {"player"}
    assert kinds == {"player", "round", "house"}
    for kind in ("round", "house"):
        found = client.get(f"/v1/balances?kind={kind}", headers=headers).json()["accounts"]
        assert found and {a["kind"] for a in found} == {kind}


FRACTION = re.compile(r"^-?\d+/\d+$")
TIME_LIKE = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d")
RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def strings(value: Any, where: str = "") -> Any:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from strings(v, f"{where}.{k}")
    elif isinstance(value, list):
        for v in value:
            yield from strings(v, f"{where}[]")
    elif isinstance(value, str):
        yield where, value


def test_no_answer_holds_a_fraction_string_and_every_time_is_rfc3339_utc(client, keys) -> None:
    lines = ingested(client, keys, tables=5, rounds=4)
    headers = auth(keys["admin"])
    first = json.loads(lines[0])
    player = next(json.loads(x)["player_id"] for x in lines if b'"place_bet"' in x)
    PATH_VALUES.update(round_ref=f"{first['table_id']}%23{first['round_no']}", player=player)
    try:
        paths = [p for p in read_routes(client.app) if not p.endswith((".html", "/export"))]  # JSON answers
    finally:
        PATH_VALUES.update(round_ref="t1%231", player="p1")
    times = 0
    for path in [*paths, "/v1/balances?kind=all"]:
        r = client.get(path, headers=headers)
        assert r.status_code == 200, (path, r.text[:200])
        for where, text in strings(r.json()):
            assert not FRACTION.match(text), (path, where, text)
            if TIME_LIKE.match(text):
                times += 1
                assert RFC3339_Z.match(text), (path, where, text)
    assert times > 100
    kept = client.get("/v1/ggr", headers=headers).json()["totals"]["EUR"]["rounding_kept"]
    assert set(kept) == {"numerator", "denominator"} and kept["denominator"] >= 1


def test_a_rejection_names_its_round_and_studio_time(client, keys) -> None:
    ingested(client, keys, tables=5, rounds=4)
    found = client.get("/v1/rejections", headers=auth(keys["admin"])).json()["rejections"]
    named = [r for r in found if r["table_id"] and r["round_no"] is not None]
    assert named and all(r["round"] == f"{r['table_id']}#{r['round_no']}" for r in named)
    timed = [r for r in found if '"studio_time"' in r["payload"]]
    assert timed and all(RFC3339_Z.match(r["studio_time"]) and RFC3339_Z.match(r["received_at"]) for r in timed)


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

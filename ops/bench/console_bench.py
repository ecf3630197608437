"""`python -m ops.bench.console_bench [--events N] [--name NAME]`: the console's server
time per page on a PostgreSQL store of about N events (default 1,000,000) with the views
caught up, and the rounds search by player with the plan PostgreSQL picks for it.

The store is made once per name (`ledger simulate` + `ledger ingest` + `ledger project`
into database NAME on --pg) and reused by later runs: making 1M events takes minutes.
Each page is asked --repeat times in turn with the others (after one warm-up each),
through the app in this process (TestClient: the server's time, no network); figures are
the median and p95 of each page's times. Goals: every page p95 < 150 ms, the search by
player < 50 ms, with an index scan (not a sequential scan) in its plan.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432"
PAGE_P95_GOAL_MS = 150.0
SEARCH_GOAL_MS = 50.0
EVENTS_PER_ROUND = 22  # measured: simulate --fault-rate 20 gives ~22 events per round


def _ledger(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "ops.cli", *args], check=True)


def _head(url: str) -> int:
    from ledger.eventlog import EventLog

    try:
        log = EventLog.open(url)
    except Exception:
        return 0
    try:
        return log.head()
    finally:
        log.close()


def prepare(pg: str, name: str, events: int) -> str:
    """The store named `name`, made when it is missing or smaller than asked."""
    import psycopg

    url = f"{pg}/{name}"
    with psycopg.connect(f"{pg}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and _head(url) >= events * 0.9:
            print(f"reusing {url}: {_head(url)} events", file=sys.stderr)
            _ledger("project", "--db", url, "--quiet")
            return url
        if exists:
            conn.execute(f'DROP DATABASE "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    tables = 50
    rounds = max(1, events // (EVENTS_PER_ROUND * tables))
    with tempfile.TemporaryDirectory() as tmp:
        feed = str(Path(tmp) / "feed.jsonl")
        _ledger("simulate", "--tables", str(tables), "--rounds", str(rounds), "--seed", "1", "--fault-rate", "20",
                "--out", feed, "--quiet")
        _ledger("ingest", feed, "--db", url, "--allow-refusals", "--log-level", "warning")
    _ledger("project", "--db", url, "--quiet")
    print(f"made {url}: {_head(url)} events", file=sys.stderr)
    return url


def _backoffice_key(url: str) -> str:
    from ledger.keys import key_store
    from ledger.store import open_app

    app = open_app(url)
    try:
        return key_store(app).add("backoffice", name=f"console-bench-{time.time_ns()}")[0]
    finally:
        app.close()


def _samples(url: str) -> dict[str, Any]:
    """A busy player, a table, a voided and a settled round of the store, for the pages."""
    from ledger.eventlog import EventLog
    from projections.sql import Db

    log = EventLog.open(url)
    db = Db.for_store(log.backend)
    try:
        player = db.query("SELECT player_id FROM proj_recall WHERE player_id IN "
                          "(SELECT player_id FROM proj_recall LIMIT 1000) GROUP BY player_id ORDER BY COUNT(*) DESC LIMIT 1")[0][0]
        table = db.query("SELECT table_id FROM proj_rounds WHERE table_id IS NOT NULL LIMIT 1")[0][0]
        voided = db.query("SELECT table_id, round_no FROM proj_rounds WHERE status = 'voided' AND table_id IS NOT NULL LIMIT 1")
        settled = db.query("SELECT table_id, round_no FROM proj_rounds WHERE status = 'settled' LIMIT 1")[0]
        plan = explain(db, player)
    finally:
        db.close()
        log.close()
    return {"player": player, "table": table, "voided": voided[0] if voided else settled, "settled": settled,
            "plan": plan}


def search_times(url: str, player: str, repeat: int) -> list[float]:
    """The rounds search by player alone (its query, the page's figures of each round), in ms."""
    from ledger.eventlog import EventLog
    from ops.console.data import round_page
    from projections.round_search import RoundQuery
    from projections.sql import Db

    log = EventLog.open(url)
    db = Db.for_store(log.backend)
    q = RoundQuery(player=player.upper(), sort="-time")  # any case: through the folded index
    try:
        round_page(db, q)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            rows = round_page(db, q).rounds
            times.append((time.perf_counter() - started) * 1000)
            assert rows
        return times
    finally:
        db.close()
        log.close()


def explain(db: Any, player: str) -> list[str]:
    from ops.console.data import PAGE_ROWS, round_page
    from projections.round_search import RoundQuery, search_sql

    q = RoundQuery(player=player.upper(), sort="-time")
    text, params = search_sql(db, q, PAGE_ROWS)
    plan = [r[0] for r in db.query("EXPLAIN " + text, params)]
    ids = [r.round_id for r in round_page(db, q).rounds]
    figures = ("SELECT round_id, COUNT(*), SUM(staked_minor) FROM proj_recall WHERE round_id IN "
               f"({', '.join(['?'] * len(ids))}) GROUP BY round_id")
    return plan + ["-- the page's figures per round:"] + [r[0] for r in db.query("EXPLAIN " + figures, ids)]


def uncached(url: str, times: int) -> dict[str, float]:
    """What the pages keep per store head, made again (the first page after new events pays
    it): medians in ms."""
    from ledger.eventlog import EventLog
    from ops.console.data import monitor_report
    from projections import queries
    from projections.sql import Db

    log = EventLog.open(url)
    db = Db.for_store(log.backend)
    out: dict[str, list[float]] = {"monitor_tests": [], "ggr_all_days": []}
    try:
        for _ in range(times):
            for name, work in (("monitor_tests", lambda: monitor_report(db)), ("ggr_all_days", lambda: queries.ggr(db))):
                started = time.perf_counter()
                work()
                out[name].append((time.perf_counter() - started) * 1000)
    finally:
        db.close()
        log.close()
    return {name: round(statistics.median(t), 1) for name, t in out.items()}


def pages(s: dict[str, Any]) -> dict[str, str]:
    from urllib.parse import quote

    def ref(r: Any) -> str:
        return quote(f"{r[0]}#{r[1]}", safe="")

    return {
        "rounds": "/ui/rounds",
        "rounds_by_player": f"/ui/rounds?player={quote(s['player'].upper())}",  # any case: the folded index
        "rounds_by_player_prefix": f"/ui/rounds?player={quote(s['player'][:-1])}",  # ten players' rounds, sorted
        "rounds_by_player_csv": f"/ui/rounds.csv?player={quote(s['player'])}",  # every round of the player
        "rounds_reversed": "/ui/rounds?status=reversed",
        "rounds_by_table": f"/ui/rounds?table={quote(s['table'])}&page=3",
        "round_settled": f"/ui/rounds/{ref(s['settled'])}",
        "round_voided_step": f"/ui/rounds/{ref(s['voided'])}?step=2",
        "round_proof": f"/ui/rounds/{ref(s['settled'])}/proof",  # the chain kept in the store (made at warm-up)
        "round_bundle": f"/ui/rounds/{ref(s['settled'])}/bundle",  # proved from the same chain kept
        "player": f"/ui/players/{quote(s['player'])}",
        "table": f"/ui/tables/{quote(s['table'])}",
        "monitor": "/ui/monitor",
        "rejections": "/ui/rejections",
        "reconcile_form": "/ui/reconcile",
    }



def sign_in(client: Any, key: str) -> Any:
    """The sign-in form as a browser sends it, with the CSRF token of the form's cookie."""
    form = client.get("/ui/")
    token = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    return client.post("/ui/", data={"key": key, "csrf": token}, follow_redirects=False)


def measure(url: str, repeat: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from ops.service.app import Settings, create_app

    s = _samples(url)
    asked = pages(s)
    times: dict[str, list[float]] = {name: [] for name in asked}
    with TestClient(create_app(Settings(db_url=url))) as client:
        assert sign_in(client, _backoffice_key(url)).status_code == 303
        for path in asked.values():
            assert client.get(path).status_code == 200, path
        for _ in range(repeat):
            for name, path in asked.items():
                started = time.perf_counter()
                response = client.get(path)
                times[name].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, (path, response.status_code)
    figures = {name: {"median_ms": round(statistics.median(t), 1), "p95_ms": round(_p95(t), 1)}
               for name, t in times.items()}
    search = search_times(url, s["player"], repeat)
    print(json.dumps({"pages": figures}), file=sys.stderr)
    return {"pages": figures, "uncached_median_ms": uncached(url, 3), "search_by_player_query": {"median_ms": round(statistics.median(search), 2),
                                                          "p95_ms": round(_p95(search), 2)},
            "search_plan": s["plan"], "samples": {k: str(v) for k, v in s.items() if k != "plan"}}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pg", default=PG_DEFAULT, help="PostgreSQL server URL without a database")
    p.add_argument("--name", default="console_bench_1m", help="database name of the cached store")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=40)
    p.add_argument("--prepare-only", action="store_true")
    args = p.parse_args(argv)
    url = prepare(args.pg, args.name, args.events)
    if args.prepare_only:
        return 0
    result = measure(url, args.repeat)
    result["events"] = _head(url)
    worst = max(f["p95_ms"] for f in result["pages"].values())
    search = result["search_by_player_query"]["p95_ms"]
    indexed = any("Index" in line for line in result["search_plan"]) and not any(
        "Seq Scan on proj_recall" in line for line in result["search_plan"])
    result["goals"] = {"page_p95_ms_max": worst, "page_p95_ok": worst < PAGE_P95_GOAL_MS,
                       "search_by_player_p95_ms": search, "search_ok": search < SEARCH_GOAL_MS, "search_indexed": indexed}
    print(json.dumps(result, indent=2))
    return 0 if result["goals"]["page_p95_ok"] and result["goals"]["search_ok"] and indexed else 1


if __name__ == "__main__":
    sys.exit(main())

"""Gaming days by the table's own time zone (configure_table `timezone`): ggr, refunds,
recall and reconcile's expected movements; --timezone stays the fallback for other tables.
A round keeps the zone of the configuration it opened under. SQLite and PostgreSQL."""
from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main
from projections.reconcile import expected_movements
from tests.support.feed import Feed, lines, teen_patti_round

LATE = datetime(2024, 5, 1, 20, 0, tzinfo=UTC)  # 01:30 on 2 May in Kolkata, still 1 May in UTC


CONFIGURE = {"type": "configure_table", "command_id": "cfg-1", "table_id": "TP-IN",
             "studio_time": LATE.isoformat(), "game": "teen-patti", "ruleset_id": "teen-patti/20-20",
             "ruleset_version": 1, "currency": "EUR", "timezone": "Asia/Kolkata"}


def _at_late_evening(cmds: list[Any]) -> list[Any]:
    out = []
    for c in cmds:
        for one in c if isinstance(c, list) else [c]:
            out.append(one | {"studio_time": LATE.isoformat()})
    return out


@pytest.fixture
def store(store_url: str) -> str:
    url = store_url
    app = open_app(url)
    try:
        assert app.handle(json.dumps(CONFIGURE)).status == "accepted"
        for table in ("TP-IN", "TP-UTC"):
            f = Feed(table)
            results = app.ingest(lines(*_at_late_evening(teen_patti_round(f))))
            assert all(r.status == "accepted" for r in results)
            f.at(2)
            results = app.ingest(lines(*_at_late_evening([f.open("teen-patti/20-20", shoe_id="d2"),
                                                          f.bet("v1", "alice", "table", "tie", 100), f.void()])))
            assert all(r.status == "accepted" for r in results)
    finally:
        app.close()
    return url


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) in (0, 1)
    return json.loads(capsys.readouterr().out)


def test_ggr_refunds_recall_by_the_table_zone(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(capsys, "ggr", "--db", store, "--json")["rows"]
    assert {(r["table_id"], r["day"]) for r in rows} == {("TP-IN", "2024-05-02"), ("TP-UTC", "2024-05-01")}
    refunds = _json(capsys, "refunds", "--db", store, "--json")["refunds"]
    assert {(r["table_id"], r["day"]) for r in refunds} == {("TP-IN", "2024-05-02"), ("TP-UTC", "2024-05-01")}
    only_2nd = _json(capsys, "refunds", "--db", store, "--json", "--from", "2024-05-02", "--to", "2024-05-02")
    assert {r["table_id"] for r in only_2nd["refunds"]} == {"TP-IN"}
    assert [t["refunds"] for t in only_2nd["totals"]] == [1]
    recalled = _json(capsys, "recall", "alice", "--db", store, "--json")["rounds"]
    assert {(r["table_id"], r["day"]) for r in recalled} == {("TP-IN", "2024-05-02"), ("TP-UTC", "2024-05-01")}
    # the option is the fallback: the unconfigured table moves, the configured one stays
    rows = _json(capsys, "ggr", "--db", store, "--json", "--timezone", "Asia/Tokyo")["rows"]
    assert {(r["table_id"], r["day"]) for r in rows} == {("TP-IN", "2024-05-02"), ("TP-UTC", "2024-05-02")}


def test_reconcile_movements_by_the_table_zone(store: str) -> None:
    log = EventLog.open(store)
    try:
        movements = expected_movements(log.records())
    finally:
        log.close()
    assert {(m.table_id, m.day) for m in movements} == {("TP-IN", "2024-05-02"), ("TP-UTC", "2024-05-01")}


@pytest.fixture
def moved_store(store: str) -> str:
    """TP-IN moves to UTC after its two rounds, then plays a third (settled) and a fourth (voided)."""
    app = open_app(store)
    try:
        moved = CONFIGURE | {"command_id": "cfg-2", "timezone": "UTC"}
        assert app.handle(json.dumps(moved)).status == "accepted"
        f = Feed("TP-IN")
        f.at(3)
        results = app.ingest(lines(*_at_late_evening(teen_patti_round(f))))
        assert all(r.status == "accepted" for r in results)
        f.at(4)
        results = app.ingest(lines(*_at_late_evening([f.open("teen-patti/20-20", shoe_id="d4"),
                                                      f.bet("v4", "alice", "table", "tie", 100), f.void()])))
        assert all(r.status == "accepted" for r in results)
    finally:
        app.close()
    return store


def test_each_round_keeps_the_zone_it_was_played_under(moved_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(capsys, "ggr", "--db", moved_store, "--json")["rows"]
    tp_in = {(r["day"], r["rounds_closed"]) for r in rows if r["table_id"] == "TP-IN"}
    assert tp_in == {("2024-05-02", 2), ("2024-05-01", 2)}  # rounds 1-2 in Kolkata, 3-4 in UTC
    refunds = _json(capsys, "refunds", "--db", moved_store, "--json")["refunds"]
    assert sorted((r["table_id"], r["round_no"], r["day"]) for r in refunds) == [
        ("TP-IN", 2, "2024-05-02"), ("TP-IN", 4, "2024-05-01"), ("TP-UTC", 2, "2024-05-01")]
    recalled = _json(capsys, "recall", "alice", "--db", moved_store, "--json")["rounds"]
    assert sorted((r["table_id"], r["round_no"], r["day"]) for r in recalled if r["table_id"] == "TP-IN") == [
        ("TP-IN", 1, "2024-05-02"), ("TP-IN", 2, "2024-05-02"), ("TP-IN", 3, "2024-05-01"), ("TP-IN", 4, "2024-05-01")]
    log = EventLog.open(moved_store)
    try:
        movements = expected_movements(log.records())
    finally:
        log.close()
    days = {(m.round, m.day) for m in movements if m.table_id == "TP-IN"}
    assert days == {("TP-IN#1", "2024-05-02"), ("TP-IN#2", "2024-05-02"),
                    ("TP-IN#3", "2024-05-01"), ("TP-IN#4", "2024-05-01")}


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago"])
def test_refunds_over_every_representable_day_are_all_refunds(store: str, zone: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Bounds at the calendar's ends once ended in a 500 on /v1/refunds (a year-1 bound's text
    could not be parsed back); now they are open bounds and the days asked are still kept."""
    every = _json(capsys, "refunds", "--db", store, "--json", "--timezone", zone)
    assert every["refunds"]
    widest = _json(capsys, "refunds", "--db", store, "--json", "--timezone", zone,
                   "--from", "0001-01-01", "--to", "9999-12-31")
    assert (widest["refunds"], widest["totals"]) == (every["refunds"], every["totals"])
    assert _json(capsys, "refunds", "--db", store, "--json", "--timezone", zone,
                 "--from", "0001-01-01", "--to", "0999-12-31")["refunds"] == []


def test_monitor_days_by_the_table_zone(store: str) -> None:
    """The monitor's rows (settlements, openings and voids) are in the gaming days of play,
    in the zone of the table's configuration (moved there when the round applies it), else
    the fallback zone, as `ggr`'s (issue 28: they were the days the ledger recorded them)."""
    from ops.cli.options import open_views
    from projections.folding import Zones
    from projections.monitor import monitor_rows, ops_rows

    with open_views(store) as views:
        settled = {(r["table_id"], r["day"]) for r in monitor_rows(views.db)}
        opened = {(r["table_id"], r["day"], r["rounds"], r["voided"]) for r in ops_rows(views.db)}
        tokyo = {(r["table_id"], r["day"]) for r in monitor_rows(views.db, Zones.named("Asia/Tokyo"))}
    assert settled == {("TP-IN", "2024-05-02"), ("TP-UTC", "2024-05-01")}
    assert opened == {("TP-IN", "2024-05-02", 2, 1), ("TP-UTC", "2024-05-01", 2, 1)}
    assert tokyo == {("TP-IN", "2024-05-02"), ("TP-UTC", "2024-05-02")}

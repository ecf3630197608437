"""`ledger round list` on SQLite and PostgreSQL: every opened round listed once,
in studio-time order, each filter giving exactly the rounds an independent
reading of the stored events says it should."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from ledger.eventlog import EventLog
from ledger.records import Opened, Paused, Resumed, Settled, SettlementReversed, Voided
from ledger.store import open_app
from ops.cli import main
from ops.sim.simulator import simulate

_STATUS = {Paused: "paused", Resumed: "open", Voided: "voided", Settled: "settled", SettlementReversed: "reversed"}


@pytest.fixture
def store(store_url: str) -> str:
    """A studio with voids and reversals, its feed cut right after a baccarat pause
    (baccarat pauses, where blackjack completes the hands): that round stays paused
    and the other tables' rounds in flight stay open."""
    feed = list(simulate(tables=5, rounds=12, seed=2, fault_rate=500))
    last_pause = max(i for i, line in enumerate(feed)
                     if (c := json.loads(line))["type"] == "pause" and c["table_id"].startswith("bacc"))
    app = open_app(store_url)
    app.ingest(feed[:last_pause + 1])
    app.close()
    return store_url


def truth(url: str) -> dict[str, dict]:
    """round ref -> what the stored events say (status is the last status-changing event)."""
    log = EventLog.open(url)
    rounds: dict[str, dict] = {}
    by_id: dict[str, dict] = {}
    for r in log.records():
        if isinstance(r, Opened):
            at = datetime.fromisoformat(r.studio_time).astimezone(UTC)
            by_id[r.originator_id] = rounds[f"{r.table_id}#{r.round_no}"] = {
                "round_id": r.originator_id, "table_id": r.table_id, "game": r.game, "at": at, "status": "open"}
        elif type(r) in _STATUS and r.originator_id in by_id:
            by_id[r.originator_id]["status"] = _STATUS[type(r)]
    log.close()
    return rounds


def listed(capsys, *args: str) -> list[dict]:
    assert main(["round", "list", *args, "--json"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_every_round_once_in_studio_order_with_the_required_fields(store, capsys) -> None:
    expected = truth(store)
    rows = listed(capsys, "--db", store)
    assert [r["round"] for r in rows] == sorted(expected, key=lambda k: (expected[k]["at"], k.split("#")[0],
                                                                         int(k.split("#")[1])))
    for r in rows:
        e = expected[r["round"]]
        assert (r["round_id"], r["status"], r["game"], r["table_id"]) == (
            e["round_id"], e["status"], e["game"], e["table_id"])
        assert datetime.fromisoformat(r["studio_time"]) == e["at"]
    assert {"settled", "voided", "open", "paused"} <= {r["status"] for r in rows}


def test_filters_select_exactly_the_matching_rounds(store, capsys) -> None:
    expected = truth(store)
    for status in ("settled", "voided", "open", "paused", "reversed"):
        got = {r["round"] for r in listed(capsys, "--db", store, "--status", status)}
        assert got == {k for k, e in expected.items() if e["status"] == status}, status
    got = {r["round"] for r in listed(capsys, "--db", store, "--table", "bacc-1")}
    assert got == {k for k, e in expected.items() if e["table_id"] == "bacc-1"} and got
    times = sorted(e["at"] for e in expected.values())
    since, until = times[len(times) // 4], times[3 * len(times) // 4]  # exact round times: bounds matter
    got = {r["round"] for r in listed(capsys, "--db", store, "--since", since.isoformat(),
                                      "--until", until.isoformat())}
    assert got == {k for k, e in expected.items() if since <= e["at"] < until}
    shifted = since.astimezone(UTC).replace(tzinfo=None).isoformat()  # no offset: read as UTC
    assert {r["round"] for r in listed(capsys, "--db", store, "--since", shifted)} == {
        k for k, e in expected.items() if e["at"] >= since}
    assert len(listed(capsys, "--db", store, "--limit", "3")) == 3
    assert listed(capsys, "--db", store, "--since", (times[-1] + timedelta(seconds=1)).isoformat()) == []


def test_table_for_people_and_refused_arguments(store, capsys) -> None:
    assert main(["round", "list", "--db", store, "--table", "tp-1", "--status", "settled"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["round", "status", "game"]
    assert all(line.startswith("tp-1#") and " settled " in line for line in out[1:]) and len(out) > 1
    with pytest.raises(SystemExit) as exit_:
        main(["round", "list", "--db", store, "--limit", "0"])
    assert exit_.value.code == 2 and capsys.readouterr().err.startswith("ledger round list: error usage: argument --limit")
    assert main(["round", "list", "--db", store, "--since", "2026-11-22", "--until", "2026-11-21"]) == 2
    assert capsys.readouterr().err.startswith("ledger round list: error usage: --since 2026-11-22T00:00:00+00:00 is "
                                              "not before --until")
    assert main(["round", "list", "--db", "foo://nowhere"]) == 2
    assert capsys.readouterr().err.startswith("ledger round list: error bad_db_url: ")
    with pytest.raises(SystemExit) as exit_:
        main(["round", "list", "--db", store, "--since", "yesterday"])
    assert exit_.value.code == 2

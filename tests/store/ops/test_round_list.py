"""`ledger round list` on SQLite and PostgreSQL: every opened round listed once,
in studio-time order, each filter giving exactly the rounds an independent
reading of the stored events says it should: status (`reversed`: every corrected
round), a player's or table's id started in any case, a time of day; the player's
own stake, result and net; sorting, counting and CSV."""
from __future__ import annotations

import csv
import io
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
                "round_id": r.originator_id, "table_id": r.table_id, "game": r.game, "at": at, "status": "open",
                "reversals": 0, "lines": ()}
        elif type(r) in _STATUS and r.originator_id in by_id:
            by_id[r.originator_id]["status"] = _STATUS[type(r)]
            by_id[r.originator_id]["reversals"] += isinstance(r, SettlementReversed)
            if isinstance(r, Settled):
                by_id[r.originator_id]["lines"] = r.results
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
    for status in ("settled", "voided", "open", "paused"):
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
    assert out[0].split()[:4] == ["round", "status", "corrected", "game"]
    assert all(line.startswith("tp-1#") and " settled " in line for line in out[1:-1]) and len(out) > 2
    assert out[-1] == f"{len(out) - 2} rounds"
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


def test_reversed_lists_every_corrected_round_marked(store, capsys) -> None:
    """Issue 28: `--status reversed` found only rounds still awaiting their resettlement, none
    of those resettled or voided since; each corrected round carries its count of reversals."""
    expected = truth(store)
    corrected = {k for k, e in expected.items() if e["reversals"]}
    assert {expected[k]["status"] for k in corrected} - {"reversed"}  # not vacuous: some corrected since
    rows = listed(capsys, "--db", store, "--status", "reversed")
    assert {r["round"] for r in rows} == corrected
    assert all(r["reversals"] == expected[r["round"]]["reversals"] for r in listed(capsys, "--db", store))
    assert main(["round", "list", "--db", store, "--status", "reversed"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["round", "status", "corrected"]
    assert all(line.split()[2:4] == [str(expected[line.split()[0]]["reversals"]), "reversed"] for line in out[1:-1])
    assert out[-1] == f"{len(corrected)} rounds"


def test_player_and_table_by_any_case_start_with_the_players_own_figures(store, capsys) -> None:
    expected = truth(store)
    lines = [(k, line) for k, e in expected.items() if e["status"] == "settled" for line in e["lines"]]
    player = lines[0][1].player_id
    start = player[:-1].upper()  # `P000` for p0001: any player whose id starts so
    rows = listed(capsys, "--db", store, "--player", start)
    mine = {(k, line.player_id) for k, line in lines if line.player_id.lower().startswith(start.lower())}
    settled = {(r["round"], r["player_id"]) for r in rows if r["status"] == "settled"}
    assert settled == mine and len({p for _, p in mine}) > 1  # several players start so
    for r in rows:
        if r["status"] != "settled":
            continue
        own = [line for line in expected[r["round"]]["lines"] if line.player_id == r["player_id"]]
        staked, returned = sum(x.staked_minor for x in own), sum(x.returned_minor for x in own)
        assert (r["player_staked_minor"], r["player_returned_minor"], r["player_net_minor"]) == (
            staked, returned, returned - staked)
        assert set(r["player_result"].split(", ")) == {x.outcome for x in own}
    tables = {r["table_id"] for r in listed(capsys, "--db", store, "--table", "BJ-")}
    assert tables == {e["table_id"] for e in expected.values() if e["table_id"].startswith("bj-")} and len(tables) > 1


def test_time_of_day_sort_count_and_csv(store, capsys) -> None:
    expected = truth(store)
    times = sorted(e["at"].time() for e in expected.values())
    start, end = times[len(times) // 3].replace(microsecond=0), times[2 * len(times) // 3].replace(microsecond=0)
    got = {r["round"] for r in listed(capsys, "--db", store, "--time-from", start.isoformat(),
                                      "--time-to", end.isoformat())}
    assert got == {k for k, e in expected.items() if start <= e["at"].time().replace(tzinfo=None) < end} and got
    night = {r["round"] for r in listed(capsys, "--db", store, "--time-from", end.isoformat(),
                                        "--time-to", start.isoformat())}
    assert night == set(expected) - got  # from after to: the hours across midnight
    player = next(line.player_id for e in expected.values() for line in e["lines"])
    nets = [r["player_net_minor"] for r in listed(capsys, "--db", store, "--player", player, "--sort=-net")
            if r["player_net_minor"] is not None]
    assert nets == sorted(nets, reverse=True) and len(set(nets)) > 1
    by_table = [(r["table_id"], r["round_no"]) for r in listed(capsys, "--db", store, "--sort", "table")]
    assert by_table == sorted(by_table)
    assert main(["round", "list", "--db", store, "--sort", "net"]) == 2
    assert "needs --player" in capsys.readouterr().err
    assert main(["round", "list", "--db", store, "--player", player, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(listed(capsys, "--db", store, "--player", player)) and rows
    settled = next(r for r in rows if r["status"] == "settled")
    assert settled["player_id"] == player and "." in settled["player_staked"] and "EUR" not in settled["player_staked"]
    assert main(["round", "list", "--db", store, "--limit", "2"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"2 of {len(expected)} rounds"

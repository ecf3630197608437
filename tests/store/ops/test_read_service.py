"""The read service (projections/queries.py) is what the command line prints: each read
command's --json output is the query's result, field for field, on SQLite and PostgreSQL."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.records import BetPlaced
from ledger.store import open_app
from ops.cli import main
from ops.sim.simulator import simulate
from projections import queries
from projections.runner import Projector


@pytest.fixture
def store(store_url: str) -> str:
    app = open_app(store_url)
    app.ingest(list(simulate(tables=4, rounds=6, seed=3, fault_rate=300)))
    app.close()
    return store_url


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str, lines: bool = False) -> Any:
    status = main(list(argv))
    out = capsys.readouterr().out
    assert status in (0, 1), out
    return [json.loads(line) for line in out.splitlines()] if lines else json.loads(out)


def plain(value: Any) -> Any:
    return json.loads(json.dumps(dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value,
                                 default=str))


def a_player_and_round(log: EventLog) -> tuple[str, str]:
    for record in log.records():
        if isinstance(record, BetPlaced):
            return record.player_id, str(record.originator_id)
    raise AssertionError("the feed placed no bet")


def test_every_read_command_prints_its_query(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    log = EventLog.open(store)
    projector = Projector(log)
    try:
        projector.catch_up()
        db = projector.db
        player, round_id = a_player_and_round(log)
        expected = {
            ("balances",): queries.balances(db),
            ("balances", "--kind", "house"): queries.balances(db, kind="house"),
            ("refunds",): queries.refunds(db, log=log),
            ("recall", player): queries.recall(db, player, 10),
            ("ggr",): queries.ggr(db, log=log),
            ("round", "show", round_id): queries.round_detail(log, queries.round_ref(round_id), round_id),
        }
        listed = [plain(r) for r in queries.round_list(db).rounds]
        refused = [plain(r) for r in queries.rejections(log)]
    finally:
        projector.close()
        log.close()
    assert refused, "the feed has faults: some commands are refused"
    for argv, result in expected.items():
        assert cli_json(capsys, *argv, "--db", store, "--json") == plain(result), argv
    assert cli_json(capsys, "round", "list", "--db", store, "--json", lines=True) == listed
    assert cli_json(capsys, "rejections", "--db", store, "--json", lines=True) == refused


def test_reconcile_prints_its_query(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wallet = tmp_path / "wallet.csv"
    wallet.write_text("transaction_id,type,reference,player,amount_minor,currency,time\n"
                      "t1,debit,nowhere:1,p1,100,EUR,2026-01-01T00:00:00Z\n", encoding="utf-8")
    log = EventLog.open(store)
    try:
        expected = plain(queries.reconcile_wallet(log, wallet))
    finally:
        log.close()
    assert expected["discrepancies"] >= 1 and expected["findings"]
    assert cli_json(capsys, "reconcile", str(wallet), "--db", store, "--json") == expected


def test_audit_verify_prints_its_query(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "export"
    assert main(["audit", "export", str(out), "--db", store]) == 0
    (out / "events.csv").write_text("tampered\n", encoding="utf-8")  # a finding, so the comparison is not vacuous
    capsys.readouterr()
    log = EventLog.open(store)
    try:
        check = queries.verify_export(out, log)
    finally:
        log.close()
    assert check.findings and check.checked_store and check.events_read == check.count
    printed = cli_json(capsys, "audit", "verify", str(out), "--db", store, "--json")
    assert printed == {"directory": str(out), "count": check.count, "head_hash": check.head_hash,
                       "checked_store": True, "findings": plain(check)["findings"]}


def test_a_round_the_store_does_not_hold_is_none(store: str) -> None:
    log = EventLog.open(store)
    try:
        missing = queries.round_ref("no-such-table#1")
        assert queries.round_detail(log, missing) is None
        assert queries.round_replay(log, missing) is None
        _, round_id = a_player_and_round(log)
        replay = queries.round_replay(log, queries.round_ref(round_id))
        assert replay is not None and replay.round_id == round_id and replay.steps
    finally:
        log.close()


def test_results_are_frozen(store: str) -> None:
    log = EventLog.open(store)
    try:
        found = queries.rejections(log, limit=1)
    finally:
        log.close()
    assert len(found) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        found[0].code = "x"  # type: ignore[misc]

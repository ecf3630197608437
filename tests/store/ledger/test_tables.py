"""Tables as configuration through the application, on SQLite and PostgreSQL:
configure_table versions, a round opened under v1 replays under v1 after v2,
refusals, and rounds at unconfigured tables unchanged."""
from __future__ import annotations

import json
from typing import Any

from ledger.eventlog import EventLog
from ledger.ids import round_id_for
from ledger.records import Opened, TableApplied, TableConfigured
from ledger.store import open_app
from projections.replay import recompute
from tests.support.feed import EPOCH, Feed, lines, teen_patti_round

TABLE = "TP1"


def configure(n: int, table_id: str = TABLE, **fields: Any) -> bytes:
    cmd = {
        "type": "configure_table", "command_id": f"cfg-{table_id}-{n}", "table_id": table_id,
        "studio_time": EPOCH.isoformat(), "game": "teen-patti", "ruleset_id": "teen-patti/20-20",
        "ruleset_version": 1, "currency": "EUR", "timezone": "Asia/Kolkata", **fields,
    }
    return json.dumps(cmd).encode()


V1 = {"limits": {"tie": {"min_minor": 100, "max_minor": 300_000}}}  # the rule set's tie maximum is 1,000.00
V2 = {"limits": {"tie": {"min_minor": 100, "max_minor": 100_000}, "player_a": {"min_minor": 2_000, "max_minor": 500_000}}}


def test_configuration_versions_and_hashes(ledger: Any) -> None:
    first = ledger.handle(configure(1, **V1))
    assert first.status == "accepted" and first.events == ("Table.Configured",) and first.round_id is None
    again = ledger.handle(configure(2, **V1))  # the same configuration: nothing recorded
    assert again.status == "accepted" and again.events == ()
    assert ledger.handle(configure(3, **V2)).events == ("Table.Configured",)
    table = ledger.get_table(TABLE)
    assert [c.config_version for c in table.history] == [1, 2]
    assert table.current.timezone == "Asia/Kolkata"
    assert table.config_at(1).config_hash != table.config_at(2).config_hash
    assert ledger.get_table("nowhere") is None


def test_a_round_opened_under_v1_plays_and_replays_under_v1_after_v2(ledger: Any, store_url: str) -> None:
    f = Feed(TABLE)
    assert ledger.handle(configure(1, **V1)).status == "accepted"
    opened = ledger.handle(json.dumps(f.open("teen-patti/20-20", shoe_id="deck-1")).encode())
    assert opened.events[:2] == ("Opened", "TableApplied")
    assert ledger.handle(configure(2, **V2)).status == "accepted"  # v2 while round 1 is still betting
    rest = teen_patti_round(f)[1:]
    rest.insert(3, f.bet("big-tie", "carol", "table", "tie", 200_000))  # allowed by v1 only
    results = ledger.ingest(lines(*rest))
    assert [r.status for r in results] == ["accepted"] * len(results), [r.message for r in results]
    assert ledger.find_round(TABLE, 1).phase == "settled"
    # round 2 opens under v2: the same bets are refused now
    f.at(2)
    results = ledger.ingest(lines(f.open("teen-patti/20-20", shoe_id="deck-2"),
                                  f.bet("a2", "alice", "table", "player_a", 1_000),
                                  f.bet("t2", "carol", "table", "tie", 200_000)))
    assert [r.code for r in results] == [None, "stake_below_minimum", "stake_above_maximum"]
    # years later: a fresh process reads round 1 under v1
    later = open_app(store_url)
    try:
        r1 = later.find_round(TABLE, 1)
        assert r1.table_config is not None and r1.table_config[0] == 1
        assert r1.rules.limit_for("tie").max_minor == 300_000
        assert later.find_round(TABLE, 2).table_config[0] == 2
    finally:
        later.close()
    log = EventLog.open(store_url)
    try:
        records = log.round_records(round_id_for(TABLE, 1))
        applied = [r for r in records if isinstance(r, TableApplied)]
        assert len(applied) == 1 and applied[0].config_version == 1
        replay = recompute(records)
        assert replay.findings == [], replay.findings
        assert any("table configuration v1" in s.text for s in replay.steps)
        configured = [r for r in log.records() if isinstance(r, TableConfigured)]
        assert [c.config_version for c in configured] == [1, 2]
    finally:
        log.close()


def test_refusals(ledger: Any) -> None:
    def code(raw: bytes) -> str | None:
        result = ledger.handle(raw)
        return result.code

    assert code(configure(1, timezone="Mars/Olympus")) == "bad_timezone"
    assert code(configure(2, game="baccarat")) == "table_mismatch"
    assert code(configure(3, ruleset_id="teen-patti/none")) == "unknown_rule_set"
    assert code(configure(4, limits={"player": {"min_minor": 100, "max_minor": 200}})) == "table_limit_forbidden"
    assert code(configure(5, limits={"tie": {"min_minor": 300, "max_minor": 200}})) == "table_limit_forbidden"
    assert code(configure(6, spots_count=3)) == "table_setting_forbidden"
    assert code(configure(7, spots_count=99)) == "bad_command"
    assert ledger.get_table(TABLE) is None  # nothing recorded by a refusal
    assert code(configure(8)) is None
    f = Feed(TABLE)
    assert code(json.dumps(f.open("baccarat/live-8d")).encode()) == "table_mismatch"
    other_currency = f.cmd("open_round", ruleset_id="teen-patti/20-20", ruleset_version=1, currency="INR",
                           shoe_id="d", dealer_id="D1")
    assert code(json.dumps(other_currency).encode()) == "table_mismatch"
    rejected = ledger.rejections()
    assert rejected[0]["code"] == "bad_timezone" and rejected[0]["round_no"] is None


def test_an_unconfigured_table_records_what_it_always_did(ledger: Any, store_url: str) -> None:
    f = Feed("TP9")
    results = ledger.ingest(lines(*teen_patti_round(f)))
    assert results[0].events == ("Opened", "Shoe.Started", "Shoe.RoundStarted")
    log = EventLog.open(store_url)
    try:
        records = log.round_records(round_id_for("TP9", 1))
        assert isinstance(records[0], Opened)
        assert not any(isinstance(r, TableApplied) for r in records)
        assert recompute(records).findings == []
    finally:
        log.close()


def test_table_show_and_list_commands(ledger: Any, store_url: str, capsys: Any) -> None:
    from ops.cli import main

    assert ledger.handle(configure(1, **V1)).status == "accepted"
    assert ledger.handle(configure(2, **V2)).status == "accepted"
    assert main(["table", "show", TABLE, "--db", store_url, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [v["config_version"] for v in shown["versions"]] == [1, 2]
    assert shown["versions"][1]["settings"] == V2 and shown["versions"][0]["timezone"] == "Asia/Kolkata"
    assert main(["table", "show", TABLE, "--db", store_url]) == 0
    assert "tie 1.00..1,000.00" in capsys.readouterr().out
    assert main(["table", "show", "nowhere", "--db", store_url]) == 1
    assert "no configuration" in capsys.readouterr().err
    f = Feed(TABLE)
    ledger.ingest(lines(*teen_patti_round(f)))
    assert main(["round", "show", f"{TABLE}#1", "--db", store_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["table_config"]["version"] == 2
    assert main(["table", "list", "--db", store_url, "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(t["table_id"], t["config_version"]) for t in listed] == [(TABLE, 2)]


def test_replay_reports_unreadable_table_settings_as_a_finding(ledger: Any, store_url: str) -> None:
    """A tampered TableApplied (settings the rule set cannot take) is a finding, not a crash."""
    f = Feed(TABLE)
    ledger.handle(configure(1, **V1))
    ledger.ingest(lines(*teen_patti_round(f)))
    log = EventLog.open(store_url)
    try:
        records = log.round_records(round_id_for(TABLE, 1))
    finally:
        log.close()
    tampered = [r._replace(settings={"limits": {"tie": {"min_minor": 5}}}) if isinstance(r, TableApplied) else r
                for r in records]
    replay = recompute(tampered)
    assert [x.kind for x in replay.findings][:1] == ["table_config_invalid"]


def test_replay_checks_the_round_s_table_configuration_against_the_table(ledger: Any, store_url: str) -> None:
    """Settings the rule set can take but the table never had (or a version it never had) are a finding."""
    from projections.replay import table_config_findings

    ledger.handle(configure(1, **V1))
    ledger.ingest(lines(*teen_patti_round(Feed(TABLE))))
    log = EventLog.open(store_url)
    try:
        records = log.round_records(round_id_for(TABLE, 1))
        assert table_config_findings(records, log.table_history) == []
        quieter = {"limits": {"tie": {"min_minor": 100, "max_minor": 200_000}}}  # legal, and this round's bets fit
        cases = {"settings": {"settings": quieter}, "hash": {"config_hash": "0" * 64}, "version": {"config_version": 7}}
        for what, change in cases.items():
            tampered = [r._replace(**change) if isinstance(r, TableApplied) else r for r in records]
            found = table_config_findings(tampered, log.table_history)
            assert [x.kind for x in found] == ["table_config_mismatch"], what
            if what != "version":
                assert recompute(tampered).findings == []  # the round alone cannot tell
    finally:
        log.close()


def test_table_list_reads_each_table_by_id_not_the_store_by_topic(ledger: Any, store_url: str, capsys: Any,
                                                                     monkeypatch: Any) -> None:
    from ops.cli import main

    for n, table in enumerate(("TP1", "TP2", "TP3"), start=1):
        assert ledger.handle(configure(n, table)).status == "accepted"
    assert ledger.handle(configure(9, "TP2", **V1)).status == "accepted"
    ledger.ingest(lines(*teen_patti_round(Feed("TP9"))))  # played, never configured: listed as such (no history)
    log = EventLog.open(store_url)
    try:
        scanned = log.tables()
        by_id = log.tables(["TP3", "TP1", "TP2", "TP9", "TP1"])
    finally:
        log.close()
    assert by_id == scanned and list(by_id) == ["TP1", "TP2", "TP3"]

    def no_topic_scan(self: EventLog, column: str, value: Any) -> Any:
        assert column != "topic", "table list read the events table by topic"
        return real(self, column, value)

    real = EventLog._rows_where
    monkeypatch.setattr(EventLog, "_rows_where", no_topic_scan)
    assert main(["table", "list", "--db", store_url, "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(t["table_id"], t.get("config_version")) for t in listed] == [("TP1", 1), ("TP2", 2), ("TP3", 1),
                                                                          ("TP9", None)]
    assert [t["configured"] for t in listed] == [True, True, True, False]

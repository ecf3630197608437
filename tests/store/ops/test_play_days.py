"""Issue 28, one notion of a day: a period asked for is the gaming days the rounds were
played (studio time, the table's zone, as `ledger ggr`), never the days the ledger recorded
them; an empty period says why. A store holding a simulated 21 November (ops/sim/core.py
EPOCH) and then a round played on 1 May 2024 (tests/support/feed.py EPOCH), both recorded
today. SQLite and PostgreSQL."""
from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.eventlog import EventLog
from ledger.store import open_app
from ops.cli import main
from ops.sim.simulator import Studio
from tests.support.feed import Feed, lines, teen_patti_round
from tests.support.monitor_sim import rule_sets

PLAY_DAY, OLD_DAY = "2026-11-21", "2024-05-01"


@pytest.fixture
def store(store_url: str) -> tuple[str, int, int]:
    """The store, the position of the last event of the simulated day and the head."""
    app = open_app(store_url)
    try:
        app.ingest([line.rstrip(b"\n") for line in Studio(2, 20, 1, rule_sets=rule_sets(("baccarat/live-8d",))).lines()])
        log = EventLog(app)
        simulated = log.head()
        assert all(r.status == "accepted" for r in app.ingest(lines(*teen_patti_round(Feed("TP-OLD")))))
        head = log.head()
    finally:
        app.close()
    assert datetime.now(UTC).date().isoformat() not in (PLAY_DAY, OLD_DAY)  # recorded on another day
    return store_url, simulated, head


def _export(capsys: pytest.CaptureFixture[str], folder: Path, db: str, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["audit", "export", str(folder), "--db", db, "--quiet", *args])
    return code, capsys.readouterr().err


def _manifest(folder: Path) -> Any:
    return json.loads((folder / "manifest.json").read_text())


def test_audit_export_of_a_play_day(store: tuple[str, int, int], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    db, simulated, head = store
    day = tmp_path / "day"
    assert _export(capsys, day, db, "--played-since", PLAY_DAY, "--played-until", "2026-11-22")[0] == 0
    m = _manifest(day)
    assert (m["first_position"], m["last_position"]) == (1, simulated)  # not the later round of 2024
    assert m["requested_range"] | {"from": None} == {"from": None, "to": None, "played_from": PLAY_DAY,
                                                     "played_to": PLAY_DAY, "timezone": "UTC"}
    assert main(["audit", "verify", str(day), "--db", db]) == 0
    old = tmp_path / "old"
    assert _export(capsys, old, db, "--played-since", OLD_DAY, "--played-until", "2024-05-02")[0] == 0
    assert _manifest(old)["first_position"] == simulated + 1 and _manifest(old)["count"] == head - simulated
    assert main(["audit", "verify", str(old), "--db", db]) == 0

    code, err = _export(capsys, tmp_path / "recorded", db, "--since", PLAY_DAY, "--until", "2026-11-22")
    assert code == 2 and "no events in the range asked for" in err  # recorded days: nothing was recorded then
    code, err = _export(capsys, tmp_path / "none", db, "--played-since", "2026-11-22", "--played-until", "2026-11-23")
    assert code == 2 and "nothing exported: no play on those gaming days (2026-11-22, by studio time" in err
    code, err = _export(capsys, tmp_path / "later", db, "--played-since", "2999-01-01")
    assert code == 2 and "nothing exported: nothing recorded yet: the store's last event was recorded at" in err
    assert main(["audit", "export", str(tmp_path / "both"), "--db", db, "--played-since", PLAY_DAY,
                 "--since", PLAY_DAY]) == 2
    assert "give one of a position range" in capsys.readouterr().err


def test_audit_export_help_says_which_days(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["audit", "export", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "events the ledger recorded (server time, not the time of play" in text
    assert "--played-since DAY the events played on or after the gaming day DAY" in text


def test_an_empty_period_says_why_on_the_command_line(store: tuple[str, int, int],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    db = store[0]
    capsys.readouterr()
    assert main(["ggr", "--db", db, "--json", "--since", "2026-11-22", "--until", "2026-11-23"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["rows"] == [] and found["empty"]["reason"] == "no_play"
    assert main(["ggr", "--db", db, "--json", "--since", PLAY_DAY, "--until", "2026-11-22"]) == 0
    assert json.loads(capsys.readouterr().out)["empty"] is None
    assert main(["ggr", "--db", db, "--since", "2999-01-01"]) == 0
    assert "(no settled or voided rounds: nothing recorded yet: the store's last event was recorded at " \
        in capsys.readouterr().out
    assert main(["refunds", "--db", db, "--since", "2026-11-22", "--until", "2026-11-23"]) == 0
    assert "(no refunds: no play on those gaming days (2026-11-22, by studio time" in capsys.readouterr().out

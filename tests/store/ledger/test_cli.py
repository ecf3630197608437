"""The ledger CLI commands end to end on a SQLite file."""
from __future__ import annotations

import json

from ops.cli import main
from tests.support.feed import Feed, lines, teen_patti_round


def test_ingest_show_rejections_schema(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    f = Feed("cli")
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"\n".join(lines(*teen_patti_round(f), f.void())) + b"\n")
    assert main(["ingest", str(feed), "--db", db, "--json"]) == 1  # the void of a settled round is refused
    summary = json.loads(capsys.readouterr().out)
    assert summary["accepted"] == 11 and summary["refused_by_code"] == {"round_settled": 1}
    assert main(["ingest", str(feed), "--db", db, "--allow-refusals", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["duplicate"] == 12
    assert main(["round", "show", "cli#1", "--db", db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["phase"] == "settled" and shown["events"][-1]["event"] == "Settled"
    assert main(["rejections", "--db", db, "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["code"] for r in rows] == ["round_settled"]
    assert main(["schema"]) == 0
    assert "open_round" in capsys.readouterr().out

"""What the report commands print (issue 9): gaming days by the studio's zone, a
balances total that adds up what is shown, a voided round's replay."""
from __future__ import annotations

import json

import pytest

from ops.cli import main
from ops.sim.simulator import simulate

FAR_EAST = "Pacific/Kiritimati"  # UTC+14: the simulated noon of 2026-11-21 is the 22nd there


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("reports")
    (d / "feed.jsonl").write_bytes(b"".join(simulate(5, 12, 4, 300)))
    url = f"sqlite:///{d / 'ledger.db'}"
    assert main(["ingest", str(d / "feed.jsonl"), "--db", url, "--allow-refusals"]) == 0
    return url


def out_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) in (0, 1)
    return json.loads(capsys.readouterr().out)


def test_ggr_and_refunds_days_follow_the_studio_zone(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    utc = out_json(capsys, "ggr", "--db", db, "--json")
    east = out_json(capsys, "ggr", "--db", db, "--json", "--timezone", FAR_EAST)
    assert {r["day"] for r in utc["rows"]} == {"2026-11-21"} and {r["day"] for r in east["rows"]} == {"2026-11-22"}
    assert utc["totals"] == east["totals"]  # the same money, on other days
    refunds = out_json(capsys, "refunds", "--db", db, "--json", "--timezone", FAR_EAST, "--from", "2026-11-22")
    assert refunds["totals"] and {t["day"] for t in refunds["totals"]} == {"2026-11-22"}
    assert out_json(capsys, "refunds", "--db", db, "--json", "--to", "2026-11-20")["totals"] == []


def test_balances_total_adds_up_what_is_shown(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    shown = out_json(capsys, "balances", "--db", db, "--json", "--kind", "house")
    total = sum(a["balance_minor"] for a in shown["accounts"])
    assert shown["shown_totals"]["EUR"]["balance_minor"] == total != 0
    assert shown["sum_by_currency"] == {"EUR": 0}  # every account still balances
    assert main(["balances", "--db", db, "--kind", "house"]) == 0
    text = capsys.readouterr().out
    assert any(line.startswith("total shown") and f"{total / 100:,.2f}" in line for line in text.splitlines())


def test_replay_of_a_voided_round_shows_the_void_and_every_refund(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    refunds = out_json(capsys, "refunds", "--db", db, "--json")["refunds"]
    first = refunds[0]
    ref = f"{first['table_id']}#{first['round_no']}"
    lines = [r for r in refunds if r["round_id"] == first["round_id"]]
    replay = out_json(capsys, "replay", ref, "--db", db, "--json")
    assert sum(r["amount_minor"] for r in replay["refunds"]) == sum(r["amount_minor"] for r in lines)
    assert {r["bet_id"] for r in replay["refunds"]} == {r["bet_id"] for r in lines}
    assert main(["replay", ref, "--db", db]) == 0
    text = capsys.readouterr().out
    assert "VOIDED at position" in text and "every recorded payout equals" not in text
    assert all(f"refund {r['bet_id']}" in text for r in lines)

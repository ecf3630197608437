"""`ledger settle` with a round file's `table` object: the round is settled at the declared table."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ops.cli import main

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "blackjack-tour-table.json"


def _settle(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(data))
    code = main(["settle", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _example() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return data


def test_the_table_example_settles_and_names_its_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _settle(tmp_path, capsys, _example())
    assert code == 0 and out["status"] == "settled"
    assert out["table"]["table_id"] == "tour-2"
    assert out["table"]["settings"]["limits"] == {"main": {"min_minor": 200, "max_minor": 100000}}
    assert len(out["table"]["settings_hash"]) == 64


@pytest.mark.parametrize(("amount", "table", "status"), [
    (99, True, "refused"),  # below half of the 2.00 table minimum
    (100, True, "settled"),  # exactly half of it
    (99, False, "settled"),  # the rule set's 1.00 minimum: 0.50 is the least
])
def test_insurance_below_half_the_declared_minimum(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   amount: int, table: bool, status: str) -> None:
    data = _example()
    data["steps"][5]["amount_minor"] = amount
    if not table:
        del data["table"]
    code, out = _settle(tmp_path, capsys, data)
    assert out["status"] == status
    if status == "refused":
        assert code == 1 and out["code"] == "bad_insurance_amount"


@pytest.mark.parametrize(("change", "code"), [
    ({"spots_count": 4}, "unknown_spot"),  # box:5 does not exist at a 4-box table
    ({"limits": {"main": {"min_minor": 300, "max_minor": 100000}}}, "stake_below_minimum"),
    ({"limits": {"main": {"min_minor": 200, "max_minor": 999}}}, "stake_above_maximum"),
    ({"limits": {"pair": {"min_minor": 100, "max_minor": 200}}}, "table_limit_forbidden"),
    ({"stakes_per_box_max": 2}, "table_setting_forbidden"),
    ({"colour": "red"}, "bad_round_file"),
    ({"spots_count": "5"}, "bad_round_file"),
    ({"limits": {"main": {"min_minor": 200}}}, "bad_round_file"),
])
def test_declared_table_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any],
                                 code: str) -> None:
    data = _example()
    data["table"].update(change)
    exit_code, out = _settle(tmp_path, capsys, data)
    assert (exit_code, out["status"], out["code"]) == (1, "refused", code)

"""`ledger settle` over the documented examples, and its refusal / incomplete exits."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "docs" / "examples").glob("*.json"))


def test_there_is_an_example_per_rule_set() -> None:
    ids = {json.loads(p.read_text())["ruleset_id"] for p in EXAMPLES}
    assert ids == {"blackjack/live-8d", "blackjack/spielbank", "blackjack/casino-tour", "baccarat/live-8d", "teen-patti/20-20"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_settles(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["settle", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "settled"
    assert out["results"] and all(r["explanation"] for r in out["results"])
    for r in out["results"]:
        assert isinstance(r["returned_minor"], int) and 0 <= r["remainder_num"] < r["remainder_den"]


def test_baccarat_example_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["settle", str(EXAMPLES[0].parent / "baccarat.json"), "--json"]) == 0
    by_id = {r["bet_id"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert by_id["b1"]["returned_minor"] == 1500  # no-commission Banker 6 pays 1:2
    assert (by_id["b2"]["returned_minor"], by_id["b2"]["remainder_num"], by_id["b2"]["remainder_den"]) == (1951, 19, 20)
    assert by_id["b3"]["returned_minor"] == 10500  # Lucky Six on 3 cards 20:1


def _write(tmp_path: Path, data: dict) -> str:
    p = tmp_path / "round.json"
    p.write_text(json.dumps(data))
    return str(p)


def test_refusal_exit_and_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"ruleset_id": "baccarat/live-8d", "ruleset_version": 1, "round_in_shoe": 51,
            "bets": [{"bet_id": "b1", "player_id": "p", "spot": "table", "bet_type": "perfect_pair", "stake_minor": 500}],
            "steps": []}
    assert main(["settle", _write(tmp_path, data), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["code"] == "bet_not_offered" and "51" in out["message"] and out["at"] == "bet b1"


def test_incomplete_exit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = {"ruleset_id": "teen-patti/20-20", "ruleset_version": 1,
            "bets": [{"bet_id": "b1", "player_id": "p", "spot": "table", "bet_type": "player_a", "stake_minor": 500}],
            "steps": ["AS", "KD"]}
    assert main(["settle", _write(tmp_path, data)]) == 3
    assert "not complete" in capsys.readouterr().out


@pytest.mark.parametrize("data, code", [
    ({"ruleset_id": "blackjack/live-8d", "ruleset_version": 99}, "unknown_rule_set"),
    ({"ruleset_id": "teen-patti/20-20", "ruleset_version": 1, "bets": [{"bet_id": "b1", "colour": "red"}]}, "bad_round_file"),
])
def test_bad_files_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict, code: str) -> None:
    assert main(["settle", _write(tmp_path, data), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["code"] == code

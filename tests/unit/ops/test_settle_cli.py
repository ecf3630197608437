"""`ledger settle` over the documented examples, and its refusal / incomplete exits."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "docs" / "examples").glob("*.json"))


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


# --------------------------------------------------------------------------- what happened (--json "outcome")
# Each case: a round file (a documented example, or one written here) and the outcome fields it must print.
def _bets(*bets: tuple[str, str, str, str, int]) -> list[dict]:
    return [{"bet_id": b, "player_id": p, "spot": s, "bet_type": t, "stake_minor": m} for b, p, s, t, m in bets]


_BUST = {"ruleset_id": "blackjack/live-8d", "ruleset_version": 1, "bets": _bets(("b1", "p1", "seat:1", "main", 1000)),
         "steps": ["TH", "6D", "5C", {"decide": "hit", "hand": "seat:1"}, "KS"]}
NEW_ROUNDS = {
    "blackjack-live-all-bust": _BUST,
    "blackjack-live-bust-and-blackjack": {
        "ruleset_id": "blackjack/live-8d", "ruleset_version": 1,
        "bets": _bets(("b1", "p1", "seat:1", "main", 1000), ("b2", "p2", "seat:2", "main", 1000)),
        "steps": ["TH", "AS", "KD", "5C", "KC", {"decide": "hit", "hand": "seat:1"}, "KS", "7H"]},
    "baccarat-natural-tie-pairs": {
        "ruleset_id": "baccarat/live-8d", "ruleset_version": 1, "round_in_shoe": 2,
        "bets": _bets(("b1", "p1", "table", "tie", 100), ("b2", "p1", "table", "player_pair", 100),
                      ("b3", "p2", "table", "perfect_pair", 100), ("b4", "p2", "table", "player", 1000)),
        "steps": ["4H", "8D", "4H", "KC"]},
    "baccarat-new-shoe": {
        "ruleset_id": "baccarat/live-8d", "ruleset_version": 1, "round_in_shoe": 1,
        "bets": _bets(("b1", "p1", "table", "banker", 1000)),
        "steps": ["AS", "5H", "2H", "2D", "3S", "3C", "7D", "4C"]},
    "teen-patti-trail": {
        "ruleset_id": "teen-patti/20-20", "ruleset_version": 1,
        "bets": _bets(("b1", "p1", "table", "player_b", 1000), ("b2", "p1", "table", "six_card_bonus", 100),
                      ("b3", "p2", "table", "pair_plus_a", 100)),
        "steps": ["7S", "AS", "7H", "KS", "7D", "QS"]},
}

# (round, path in the outcome, expected value); a path is keys and list indexes.
OUTCOME_CASES = [
    ("blackjack-live", ("dealer", "cards"), ["9D", "7S", "2H"]),
    ("blackjack-live", ("dealer", "total"), 18),
    ("blackjack-live", ("hands", 0, "hand"), "seat:1.1"),  # one line per hand after the split
    ("blackjack-live", ("hands", 0, "from_split"), True),
    ("blackjack-live", ("hands", 0, "stakes", 1), {"bet_id": "b4", "player_id": "carol", "amount_minor": 1000,
                                                     "reason": "main"}),
    ("blackjack-live", ("hands", 1, "cards"), ["8C", "TC"]),
    ("blackjack-live", ("hands", 1, "result"), "push"),
    ("blackjack-live", ("hands", 2, "category"), "blackjack"),
    ("blackjack-live", ("hands", 2, "result"), "win"),
    ("blackjack-spielbank", ("hands", 0, "cards"), ["5H", "4D", "2S", "3S"]),
    ("blackjack-spielbank", ("hands", 0, "total"), 14),
    ("blackjack-spielbank", ("hands", 0, "stakes", 1, "player_id"), "ben"),
    ("blackjack-spielbank", ("dealer", "name"), "17"),
    ("blackjack-casino-tour", ("hands", 0, "doubled"), True),
    ("blackjack-casino-tour", ("hands", 0, "stakes", 1, "reason"), "double"),
    ("blackjack-casino-tour", ("hands", 0, "result"), "win"),
    ("blackjack-casino-tour", ("dealer", "name"), "soft 18"),
    ("blackjack-casino-tour", ("categories", "insurance:box:1"), "no_dealer_blackjack"),
    ("blackjack-live", ("categories", "pair:seat:2"), "no_pair"),  # bob's Pair bet: AS KH
    ("blackjack-live-all-bust", ("dealer", "cards"), ["6D"]),  # no hand left standing: the dealer stops
    ("blackjack-live-all-bust", ("hands", 0, "name"), "bust 25"),
    ("blackjack-live-all-bust", ("notes", 0), "no hand was left standing: the dealer drew no further card"),
    ("blackjack-live-bust-and-blackjack", ("dealer", "cards"), ["KD", "7H"]),  # only the second card
    ("blackjack-live-bust-and-blackjack", ("hands", 1, "result"), "win"),
    ("baccarat", ("winner",), "banker"),
    ("baccarat", ("hands", 0), {"hand": "player", "cards": ["2H", "3D", "KH"], "total": 5, "name": "5 on 3 cards",
                                "result": "lose"}),
    ("baccarat", ("hands", 1, "total"), 6),
    ("baccarat", ("categories",), {"lucky_six": "3_cards"}),
    ("baccarat-natural-tie-pairs", ("winner",), "tie"),
    ("baccarat-natural-tie-pairs", ("hands", 1, "category"), "natural"),
    ("baccarat-natural-tie-pairs", ("categories",), {"player_pair": "pair", "perfect_pair": "perfect_pair"}),
    ("baccarat-new-shoe", ("notes",), ["won by 7 point(s)", "new shoe: burned AS 5H"]),
    ("baccarat-new-shoe", ("hands", 0, "name"), "2 on 3 cards"),
    ("baccarat-new-shoe", ("hands", 1, "cards"), ["2D", "3C", "4C"]),  # Banker 5 draws on a Player third 7
    ("baccarat-new-shoe", ("winner",), "banker"),
    ("teen-patti", ("winner",), "A"),
    ("teen-patti", ("hands", 0, "category"), "sequence"),
    ("teen-patti", ("hands", 1, "name"), "Pair of sevens, kicker 2"),
    ("teen-patti", ("categories", "six_card_bonus"), "pair"),
    ("teen-patti", ("categories", "pair_plus_b"), "pair"),
    ("teen-patti-trail", ("hands", 0), {"hand": "A", "cards": ["7S", "7H", "7D"], "category": "trail",
                                        "name": "Trail of sevens", "result": "win"}),
    ("teen-patti-trail", ("hands", 1, "category"), "pure_sequence"),
    ("teen-patti-trail", ("categories", "six_card_bonus"), "three_of_a_kind"),
]


def _round_file(name: str, tmp_path: Path) -> str:
    if name in NEW_ROUNDS:
        return _write(tmp_path, NEW_ROUNDS[name])
    return str(EXAMPLES[0].parent / f"{name}.json")


@pytest.mark.parametrize(("name", "path", "want"), OUTCOME_CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_settle_json_says_what_happened(name: str, path: tuple, want: object, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["settle", _round_file(name, tmp_path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["outcome"]
    for key in path:
        got = got[key]
    assert got == want


@pytest.mark.parametrize("name", [*(p.stem for p in EXAMPLES), *NEW_ROUNDS])
def test_every_round_has_an_outcome_with_every_hand(name: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["settle", _round_file(name, tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["outcome"]
    assert out["summary"] and out["hands"]
    for hand in out["hands"]:
        assert hand["cards"] and hand["result"] in ("win", "lose", "push", "tie", "surrender", "even_money")
    if out["game"] == "blackjack":
        assert out["dealer"]["cards"] and "winner" not in out
    else:
        assert out["winner"] in ("player", "banker", "tie", "A", "B") and "dealer" not in out


@pytest.mark.parametrize("name", [*(p.stem for p in EXAMPLES), *NEW_ROUNDS])
def test_human_output_shows_the_same(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _round_file(name, tmp_path)
    assert main(["settle", path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["outcome"]
    assert main(["settle", path]) == 0
    text = capsys.readouterr().out
    assert f"outcome: {out['summary']}" in text
    for hand in [*out["hands"], *([out["dealer"]] if "dealer" in out else [])]:
        line = next(x for x in text.splitlines() if x.strip().startswith(hand["hand"] + " "))
        assert " ".join(hand["cards"]) in line and hand["name"] in line
        if "result" in hand:
            assert f"-> {hand['result']}" in line
    for what, category in out.get("categories", {}).items():
        assert f"{what}: {category}" in text


@pytest.mark.parametrize("extra", ["9S", {"card": "9S", "to": "dealer"}])
def test_a_card_after_the_dealer_stopped_is_refused(extra: object, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Every hand bust: the dealer draws no more; a file recording one more card is refused (docs/rounds.md)."""
    data = {**_BUST, "steps": [*_BUST["steps"], extra]}
    assert main(["settle", _write(tmp_path, data), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["code"], out["at"]) == ("card_not_expected", "step 6")

"""Money as people read it (issue 20, item 5): every text command shows amounts in
the currency's decimal form, never minor units (`_minor`, `5000->7500`) or a bare
fraction of a minor unit (`13/2`); JSON keeps integer minor units. A settlement
explanation's arrow has one labelled meaning in every game; `ledger rtp` names the
rule-set version; refunds show the void's note; round list the void's cause;
`simulate --wallet-out` with `--out /dev/null` works."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from domain.money import format_minor
from ops.cli import main
from ops.sim.simulator import simulate
from ops.sim.wallet import write_wallet
from tests.support.stored_math import stored_math

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
CONFIGURE = {"type": "configure_table", "command_id": "cfg/bj-cfg-1/1", "table_id": "bj-cfg-1",
             "studio_time": "2026-11-21T08:00:00+00:00", "game": "blackjack", "ruleset_id": "blackjack/spielbank",
             "ruleset_version": 1, "currency": "EUR", "timezone": "Europe/Berlin",
             "limits": {"main": {"min_minor": 200, "max_minor": 100000}}}
# A minor-unit figure in text: a field named `..._minor`, `5000->7500`, or a bare fraction
# `13/2` (not part of an id such as `bacc-2/6/3` or a path).
MINOR_FIGURE = re.compile(r"_minor\b|\b\d+->\d+\b|(?<![\w/.-])\d+/\d+(?![\w/])")


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A small demo-like store: faults (voids with notes and refunds, reversals, refusals),
    a configured table, and the operator's wallet file with planted discrepancies."""
    d = tmp_path_factory.mktemp("money")
    feed = [json.dumps(CONFIGURE).encode() + b"\n", *simulate(6, 12, 4, 300)]
    (d / "feed.jsonl").write_bytes(b"".join(feed))
    write_wallet(feed, d / "wallet.csv", discrepancies=4, seed=4)
    url = f"sqlite:///{d / 'ledger.db'}"
    assert main(["ingest", str(d / "feed.jsonl"), "--db", url, "--allow-refusals"]) == 0
    return {"db": url, "wallet": str(d / "wallet.csv"), "feed": [json.loads(line) for line in feed]}


def kinds_of_play(feed: list[dict[str, Any]]) -> set[str]:
    """For each command (a decision by its action) seen at each table, the first round it was
    in: every kind of round event the feed has, each in one round of each table."""
    first: dict[tuple[str, str], str] = {}
    for c in feed:
        if "round_no" in c:
            first.setdefault((c["table_id"], f"{c['type']}:{c.get('action', '')}"), f"{c['table_id']}#{c['round_no']}")
    return set(first.values())


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) in (0, 1), argv
    return capsys.readouterr().out


def out_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    return json.loads(run(capsys, *argv, "--json"))


def json_lines(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run(capsys, *argv, "--json").splitlines()]


def test_no_text_command_shows_a_minor_unit_figure(studio: dict[str, Any],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    db = studio["db"]
    rounds = json_lines(capsys, "round", "list", "--db", db)
    refs = {r["round"] for r in rounds if r["status"] != "settled"}  # voided, reversed, open
    refs |= kinds_of_play(studio["feed"])  # doubles, splits, surrenders, follows, side bets: each kind once a table
    refs |= {next(r["round"] for r in rounds if r["game"] == g) for g in ("baccarat", "teen-patti")}
    assert len(refs) >= 12
    player = out_json(capsys, "refunds", "--db", db)["refunds"][0]["player_id"]
    argvs = [["balances"], ["refunds"], ["recall", player, "--last", "50"], ["ggr"], ["monitor", "--all"],
             ["reconcile", studio["wallet"], "--findings", "50"], ["rejections"], ["round", "list"],
             ["table", "list"], ["table", "show", "bj-cfg-1"]]
    argvs += [[*what, ref] for ref in sorted(refs) for what in (["round", "show"], ["replay"])]
    texts = {" ".join(argv): run(capsys, *argv, "--db", db) for argv in argvs}
    for example in sorted(EXAMPLES.glob("*.json")):
        texts[f"settle {example.name}"] = run(capsys, "settle", str(example))
    with stored_math():  # the lines' counts as stored: what is printed is the same, without seconds of CPU
        texts["rtp --game baccarat"] = run(capsys, "rtp", "--game", "baccarat")
    shown = {name: [line for line in text.splitlines() if MINOR_FIGURE.search(line)] for name, text in texts.items()}
    assert {name: lines[:3] for name, lines in shown.items() if lines} == {}
    assert all(texts[name].strip() for name in texts), [name for name in texts if not texts[name].strip()]
    # the checks had something to find: money with its code, rounding kept as money
    assert " EUR" in texts["balances"] and re.search(r"\d\.\d{3,}", texts["ggr"])
    assert re.search(r"staked [\d,]+\.\d\d EUR", texts["monitor --all"])
    assert re.search(r"ledger=[\d,]+\.\d\d EUR", texts[f"reconcile {studio['wallet']} --findings 50"])


def test_ggr_text_shows_rounding_kept_as_money_and_json_keeps_the_fraction(
        studio: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from fractions import Fraction

    report = out_json(capsys, "ggr", "--db", studio["db"])
    kept_json = report["totals"]["EUR"]["rounding_kept"]  # exact minor units, never an "n/d" string
    kept = Fraction(kept_json["numerator"], kept_json["denominator"])
    assert kept.denominator > 1 or kept > 0  # the sample rounds something down
    total = next(line for line in run(capsys, "ggr", "--db", studio["db"]).splitlines() if line.startswith("total"))
    assert total.split()[-1] == format_minor(kept)
    assert format_minor(Fraction(13, 2), "EUR") == "0.065 EUR" and format_minor(Fraction(1, 3)) == "≈0.00333333"


ARROW = re.compile(r"→ returns ([\d,]+\.\d\d) \((?:stake ([\d,]+\.\d\d) \+ winnings ([\d,]+\.\d\d)|stake back|"
                   r"half the stake ([\d,]+\.\d\d))\)")


def _minor(text: str) -> int:
    return int(text.replace(",", "").replace(".", ""))


@pytest.mark.parametrize("example", ["blackjack-live.json", "blackjack-casino-tour.json", "baccarat.json",
                                     "teen-patti.json"])
def test_the_arrow_means_what_goes_back_labelled_in_every_game(example: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    results = out_json(capsys, "settle", str(EXAMPLES / example))["results"]
    paying = [r for r in results if r["returned_minor"] > 0]
    assert paying
    for r in paying:
        text = r["explanation"]
        assert text.count("→") == len(ARROW.findall(text)) >= 1, text  # every arrow, labelled
        returned = 0
        for back, stake, winnings, _half in ARROW.findall(text):
            returned += _minor(back)
            if stake:
                assert _minor(back) == _minor(stake) + _minor(winnings), text
        assert returned == r["returned_minor"], text  # the arrows add up to what the line returned
    assert not any(re.search(r"→ [\d,.]+ (on|back)", r["explanation"]) for r in results)


def test_explanations_recorded_in_the_earlier_wording_still_replay() -> None:
    from domain.money import earlier_wording, returns_text

    # the wording before issue 20, as the old tests pinned it: replay rebuilds it from today's
    blackjack = f"seat:5 21 vs dealer 19: win 1:1 {returns_text(500, 1000)}; x push {returns_text(500, 500, 'push')}"
    assert earlier_wording(blackjack, "blackjack") == "seat:5 21 vs dealer 19: win 1:1 → 10.00 on 5.00; x push → 5.00 back"
    assert earlier_wording(f"Banker 6 pays 1:2 {returns_text(100000, 150000)}", "baccarat") == \
        "Banker 6 pays 1:2 → 500.00 on 1,000.00"
    assert earlier_wording(f"pays 19:20 {returns_text(1001, 1951)}", "teen-patti") == "pays 19:20 → 9.50 on 10.01"
    assert earlier_wording(f"surrender: half back {returns_text(1001, 500, 'surrender')}", "blackjack") == \
        "surrender: half back → 5.00 on 10.01"


def test_replay_of_earlier_wording_agrees_and_a_changed_explanation_is_a_finding() -> None:
    from domain.money import returns_text
    from projections.replay import _in_earlier_wording

    new = {"bet_id": "b1", "player_id": "p", "bet_type": "player", "outcome": "win", "staked_minor": 1000,
           "returned_minor": 1950, "remainder_num": 0, "remainder_den": 1,
           "explanation": f"Player pays 19:20 {returns_text(1000, 1950)}"}
    old = new | {"explanation": "Player pays 19:20 → 9.50 on 10.00"}
    assert _in_earlier_wording(old, new, "baccarat")
    assert not _in_earlier_wording(old | {"explanation": "Player pays 19:20 → 19.50 on 10.00"}, new, "baccarat")
    assert not _in_earlier_wording(old | {"returned_minor": 1951}, new, "baccarat")


def test_rtp_names_the_rule_set_version(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from domain.blackjack_rules import RULE_SETS
    from ops.gamemath import rtp_blackjack
    from ops.gamemath.rtp_blackjack import Effect

    # the flips themselves take about 10 s a rule set, the optimal-play figures seconds
    # (tests/unit/ops/test_rtp_blackjack.py checks them): what is named here is the same
    monkeypatch.setattr(rtp_blackjack, "rule_effects",
                        lambda rules, only=(): [Effect("surrender", "none", float(rules.version))])
    monkeypatch.setattr(rtp_blackjack, "infinite_deck", lambda rules: -0.005)
    monkeypatch.setattr(rtp_blackjack, "shoe", lambda rules, cd=False: -0.004)
    text = run(capsys, "rtp", "--game", "blackjack", "--effects")
    rows = [line.split()[:3] for line in text.splitlines()
            if line.startswith("  blackjack/") and "RTP change" not in line]  # the figures, not the flips
    assert {(r[0], r[1]) for r in rows} == {(r.id, f"v{r.version}") for r in RULE_SETS}
    for r in RULE_SETS:
        assert text.count(f"  {r.id} v{r.version}: RTP change with one field flipped") == 1
    report = out_json(capsys, "rtp", "--game", "blackjack", "--effects")["blackjack"]
    assert {(b["ruleset_id"], b["ruleset_version"]) for b in report["bets"]} == {(r.id, r.version) for r in RULE_SETS}
    assert [(e["ruleset_id"], e["ruleset_version"], e["effects"][0]["delta_percent"])
            for e in report["rule_effects"]] == [(r.id, r.version, float(r.version)) for r in RULE_SETS]
    with stored_math():
        baccarat = out_json(capsys, "rtp", "--game", "baccarat")["baccarat"]["bets"]
    assert {(b["ruleset_id"], b["ruleset_version"]) for b in baccarat} == {("baccarat/live-8d", 1)}


def test_refunds_text_shows_the_void_note(studio: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    refunds = out_json(capsys, "refunds", "--db", studio["db"])["refunds"]
    noted = [r for r in refunds if r["note"]]
    assert noted
    lines = run(capsys, "refunds", "--db", studio["db"]).splitlines()
    for r in noted:
        line = next(line for line in lines if f" bet {r['bet_id']} " in line)
        assert line.endswith(f"note: {r['note']}"), line


def test_round_list_shows_the_void_cause(studio: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    db = studio["db"]
    voided = json_lines(capsys, "round", "list", "--status", "voided", "--db", db)
    causes = {f"{r['table_id']}#{r['round_no']}": r["cause"] for r in out_json(capsys, "refunds", "--db", db)["refunds"]}
    assert voided and all(r["void_cause"] for r in voided)
    assert {r["round"]: r["void_cause"] for r in voided if r["round"] in causes} == \
        {ref: cause for ref, cause in causes.items() if ref in {r["round"] for r in voided}}
    lines = run(capsys, "round", "list", "--status", "voided", "--db", db).splitlines()
    assert "void cause" in lines[0]
    for r in voided:
        assert re.search(rf"^{re.escape(r['round'])}\s+voided\s+.*\s{r['void_cause']}\s", "\n".join(lines), re.M)
    settled = json_lines(capsys, "round", "list", "--status", "settled", "--db", db)
    assert settled and all(r["void_cause"] is None for r in settled)


def test_simulate_wallet_with_the_feed_to_dev_null(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wallet = tmp_path / "w.csv"
    assert main(["simulate", "--tables", "2", "--rounds", "5", "--out", os.devnull, "--wallet-out", str(wallet),
                 "--wallet-discrepancies", "5", "--quiet"]) == 0
    assert len(wallet.read_text().splitlines()) > 5
    capsys.readouterr()
    assert main(["simulate", "--tables", "1", "--rounds", "1", "--out", os.devnull, "--wallet-out", str(wallet),
                 "--wallet-discrepancies", "500", "--quiet"]) == 2  # truly more than the feed has: usage
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error usage" in err and "500 discrepancies" in err

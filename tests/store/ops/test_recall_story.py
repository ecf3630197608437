"""`ledger recall PLAYER` tells the player's own story (issue 28 item 2): on a simulated studio
with voids and reversals, each round's own stake, return, refund and net in ledger order with
a running balance that adds up row by row, the totals of the player's history (closing at
the account's balance), and what a correction changed, in --json and in the text."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from domain.money import format_minor
from ops.cli import main as cli
from tests.support.dispute_rounds import simulated_with_corrections
from tests.support.module_store import KINDS, module_store
from tests.support.story import assert_adds_up

TAILS_CHECKED = 4  # players whose default view (the last 10 rounds) is checked against their whole history


@pytest.fixture(scope="module", params=KINDS)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One studio per store kind for the module's tests (they only read it)."""
    with module_store(request.param, tmp_path_factory) as url:
        yield simulated_with_corrections(url, 4, 30, 7, 200)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert cli(list(args)) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


def test_recall_adds_up_for_every_player(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    accounts = {a["owner"]: a["balance_minor"] for a in run_json(
        capsys, "balances", "--kind", "player", "--json", "--db", store)["accounts"]}
    assert len(accounts) > 5
    older = set()
    for i, (player, balance) in enumerate(sorted(accounts.items())):
        whole = run_json(capsys, "recall", player, "--last", "1000", "--json", "--db", store)
        assert not whole["older"]
        assert_adds_up(whole["rounds"], whole["totals"], every_round=True)
        (total,) = whole["totals"].values()
        assert (total["opening_minor"], total["closing_minor"]) == (0, balance), player
        if i < TAILS_CHECKED:  # the same code for every player: a few, each a store read
            last = run_json(capsys, "recall", player, "--json", "--db", store)  # the last 10: the same rows' tail
            assert last["totals"] == whole["totals"] and last["older"] == (len(whole["rounds"]) > 10)
            assert last["rounds"] == whole["rounds"][-10:]
            assert_adds_up(last["rounds"], last["totals"], every_round=False)
            older.add(last["older"])
    assert True in older  # a tail with older rounds left out was checked


def test_recall_text_shows_each_rounds_net_and_running_balance(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    found = run_json(capsys, "recall", "alice", "--json", "--db", store)
    capsys.readouterr()
    assert cli(["recall", "alice", "--db", store]) == 0
    out = capsys.readouterr().out
    for r in found["rounds"]:
        money = {k: format_minor(r[k], "EUR") for k in r if k.endswith("_minor") and isinstance(r[k], int)}
        assert (f"staked {money['staked_minor']}, returned {money['returned_minor']}, refunded "
                f"{money['refunded_minor']}, net {money['net_minor']}; balance {money['balance_before_minor']} -> "
                f"{money['balance_after_minor']}") in out
    assert ("   corrected: settlement 1 reversed (it had returned 19.50 EUR); then voided: refunded 10.00 EUR"
            in out.splitlines())
    assert ("   corrected: settlement 1 reversed (it had returned 20.00 EUR); settled again: returns 20.00 EUR "
            "(no change for this player)") in out.splitlines()
    (total,) = found["totals"].values()
    assert re.search(rf"^totals \(EUR\): {total['rounds']} rounds \({len(found['rounds'])} shown above\), .*net "
                     rf"{re.escape(format_minor(total['net_minor'], 'EUR'))}; balance 0.00 EUR -> "
                     rf"{re.escape(format_minor(total['closing_minor'], 'EUR'))}$", out, re.M)

"""One declaration per fact: the roles, the bet lines and their odds, the game
math and the rule sets are each declared in one module, and every other module
that needs them takes them from there (the same object, or figures derived
from it), so a change in one place cannot leave a stale copy elsewhere."""
from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from domain import baccarat as bac
from domain import blackjack_rules, gamemath
from ledger import keys
from ops.cli.commands import keys as keys_command
from ops.service import auth
from projections import monitor_math

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ roles
def _role_choices() -> object:
    parser = argparse.ArgumentParser()
    keys_command.register(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    keys_parser = sub.choices["keys"]
    actions = next(a for a in keys_parser._actions if isinstance(a, argparse._SubParsersAction))
    role = next(a for a in actions.choices["add"]._actions if a.dest == "role")
    return role.choices


def test_every_module_uses_the_one_role_declaration() -> None:
    assert _role_choices() is keys.ROLES
    from ops.service import app

    assert app.ROLE_WRITE is keys.ROLE_WRITE and auth.ROLE_READ is keys.ROLE_READ and auth.ROLE_AUDIT is keys.ROLE_AUDIT
    for granted in (keys.ROLE_WRITE, keys.ROLE_READ, keys.ROLE_AUDIT):
        assert set(granted) <= set(keys.ROLES)


@pytest.mark.parametrize("path", ["ops/service/auth.py", "ops/cli/commands/keys.py", "ops/service/app.py"])
def test_no_other_module_spells_out_a_role_tuple(path: str) -> None:
    tuples = [n for n in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))) if isinstance(n, ast.Tuple)]
    spelled = [ast.unparse(t) for t in tuples
               if {e.value for e in t.elts if isinstance(e, ast.Constant)} & set(keys.ROLES)]
    assert spelled == []


# ------------------------------------------------------------------ bet lines, odds, game math
FRACTION_TEXT = re.compile(r"""["']\d+/\d+["']""")


@pytest.mark.parametrize("path", ["projections/monitor_math.py", "ops/gamemath/rtp.py", "tests/support/monitor_distributions.py"])
def test_no_copy_of_the_game_math_outside_domain(path: str) -> None:
    """No exact figures written out, no paytable odds restated, no bet line list of their own."""
    text = (ROOT / path).read_text(encoding="utf-8")
    assert FRACTION_TEXT.findall(text) == []
    assert re.findall(r"\b\d+:\d+\b", text) == []
    assert "BACCARAT_LINES" not in text and '"banker", "traditional"' not in text


def test_the_monitor_takes_its_figures_from_domain() -> None:
    assert monitor_math.tested_bets() == gamemath.tested()
    for key in gamemath.tested():
        math = monitor_math.bet_math(*key)
        assert math is not None and (math.mean, math.variance, math.top) == gamemath.figures(*key)


def test_ledger_rtp_takes_its_figures_from_domain() -> None:
    from ops.gamemath import rtp

    rows = {r.bet: r for r in rtp.tables("baccarat")}
    assert len(rows) == len(gamemath.baccarat_lines())
    for bet_type, mode in gamemath.baccarat_lines():
        figures = gamemath.figures(bac.LIVE_8D_V1.id, bac.LIVE_8D_V1.version, gamemath.line_key(bet_type, mode))
        assert figures is not None and rows[rtp.baccarat_label(bet_type, mode)].rtp == figures[0]


# ------------------------------------------------------------------ rule sets
# Content hashes recorded before the box tables were derived from live-8d with
# dataclasses.replace: the rule sets are the same, field for field.
HASHES = [
    ("blackjack/live-8d", 1, "17fa981ae6a397e634f6a3975ac9c4fe7ec64208c61e30554ea671a150dbd9ae"),
    ("blackjack/live-8d", 2, "ac472d552e6fb28520dc5d95d6d27272060788368d4b8c099879d3f85f648871"),
    ("blackjack/spielbank", 1, "e22eaf7333d0711ee8d87c20c6bc41d5aeae231ba62018e01950f549a66eedf6"),
    ("blackjack/spielbank", 2, "4f7b85727664e5d3450dcf2e5d9f0b0d60fc0480225f05f9e1bea9b2a817b17f"),
    ("blackjack/casino-tour", 1, "314da67dd25aa90a1ed5126e6cce2e2518affcaf97710d06ba3af4df930122cf"),
]


@pytest.mark.parametrize(("ruleset_id", "version", "content_hash"), HASHES)
def test_derived_rule_sets_keep_their_content_hash(ruleset_id: str, version: int, content_hash: str) -> None:
    rules = next(r for r in blackjack_rules.RULE_SETS if r.key == (ruleset_id, version))
    assert rules.content_hash() == content_hash


def test_one_blackjack_rule_set_is_written_out_the_others_are_derived() -> None:
    tree = ast.parse((ROOT / "domain/blackjack_rules.py").read_text(encoding="utf-8"))
    built = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "BlackjackRules"]
    derived = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == "replace"]
    assert len(built) == 1 and len(derived) == len(blackjack_rules.RULE_SETS) - 1


def test_the_simulator_places_only_the_rule_sets_bet_types() -> None:
    """The simulator's bet mix is its own (how players bet), the bet types are the games'."""
    from domain import teenpatti as tp
    from ops.sim.games import BaccaratDriver, TeenPattiDriver

    for driver, game in ((BaccaratDriver, bac), (TeenPattiDriver, tp)):
        placed = set(driver.main_types) | {t for t, _ in driver.side_types}
        assert placed <= set(game.BET_TYPES), placed - set(game.BET_TYPES)

"""docs/rules.md names each Decision's rule-set field as `field = value`: every such field is a
field of a rule set (or of its error policy), and every value one that a rule set holds or the
field allows, so the document cannot drift from domain/ unseen."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from domain import blackjack_rules
from domain.registry import all_rule_sets

RULES_DOC = Path(__file__).resolve().parents[3] / "docs" / "rules.md"
NAMED = re.compile(r"`([a-z_0-9]+) = ([^`\n]+)`")


def held_values() -> dict[str, set[Any]]:
    """field -> every value a rule set (or its error policy) holds, and what the field allows."""
    held: dict[str, set[Any]] = {}
    for rules in all_rule_sets():
        for owner in (rules, rules.error_policy):
            for f in dataclasses.fields(owner):
                value = getattr(owner, f.name)
                if isinstance(value, (bool, int, str)) or value is None:
                    held.setdefault(f.name, set()).add(value)
    allowed = {"dealer_bj_takes": blackjack_rules.DEALER_BJ_TAKES, "timeout_policy": blackjack_rules.TIMEOUT_POLICIES,
               "double_on": blackjack_rules.DOUBLE_ON, "surrender": blackjack_rules.SURRENDER,
               "insurance_amount": blackjack_rules.INSURANCE_AMOUNT}
    for name, values in allowed.items():
        held[name] |= set(values)
    return held


def named_in_doc() -> list[tuple[str, str]]:
    return [(name, value) for name, value in NAMED.findall(RULES_DOC.read_text()) if name != "field"]


def test_the_document_names_the_decisions_fields() -> None:
    names = {name for name, _ in named_in_doc()}
    assert {"dealer_bj_takes", "split_ten_values_any", "timeout_policy", "pair_same_rank_only",
            "six_card_ace_low_straight", "tie_when_same_ranks", "banker_mode_default"} <= names


@pytest.mark.parametrize(("name", "value"), named_in_doc())
def test_a_named_field_exists_with_that_value(name: str, value: str) -> None:
    held = held_values()
    assert name in held, f"docs/rules.md names `{name}`, which no rule set has"
    assert json.loads(value) in held[name], f"`{name} = {value}`: rule sets hold {sorted(map(str, held[name]))}"

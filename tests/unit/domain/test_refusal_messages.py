"""Every refusal message is made from its code's template in domain/refusals.py.

`refuse(code, variant, **fields)` (domain/errors.py) is the one place a message is
written; the source is scanned (not imported) for any other `Refusal(...)` built with
text of its own, and every `refuse(...)` call is checked against the catalogue: the
variant exists and the fields given are exactly the template's. The messages the
catalogue shows as examples are checked against the templates too (and the golden
stores' rejections in tests/store/golden/test_rejection_templates.py).
"""
from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

from domain.errors import refuse
from domain.refusals import SECTIONS, RefusalCode
from tests.support.refusal_templates import matching_variants

ROOT = Path(__file__).resolve().parents[3]
SOURCE_LAYERS = ("domain", "ledger", "projections", "ops")
HELPER_MODULE = Path("domain/errors.py")  # Refusal, refuse, and refuse_unless (kept for its callers' free text)
# Refusals built elsewhere, each with the reason it is not (yet) a `refuse` call.
NOT_YET = {
    # the round-reference parser: being merged into one parser on the read side (issue 29); its text is
    # BAD_ROUND_REF's template, which test_templates_match_the_messages_they_stand_for checks
    Path("projections/audit_store.py"): 2,
}


def _sources() -> list[tuple[Path, ast.Module]]:
    return [(path.relative_to(ROOT), ast.parse(path.read_text(encoding="utf-8")))
            for layer in SOURCE_LAYERS for path in sorted((ROOT / layer).rglob("*.py"))]


def _calls(tree: ast.Module, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def _member(node: ast.expr) -> RefusalCode | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "RefusalCode":
        return RefusalCode.__members__.get(node.attr)
    return None


def _variants(node: ast.expr) -> list[object]:
    """The variant names a call's second argument can take: a literal, or `"a" if cond else "b"`."""
    if isinstance(node, ast.IfExp):
        return _variants(node.body) + _variants(node.orelse)
    return [node.value] if isinstance(node, ast.Constant) else [node]


def _fields(template: str) -> set[str]:
    return {field for _lit, field, _spec, _conv in string.Formatter().parse(template) if field is not None}


def refuse_sites() -> list[tuple[str, RefusalCode | None, list[object], set[str]]]:
    """(where, code, variants, fields given) of every `refuse(...)` call in the source."""
    sites = []
    for path, tree in _sources():
        for call in _calls(tree, "refuse"):
            code = _member(call.args[0]) if call.args else None
            variants = _variants(call.args[1]) if len(call.args) > 1 else [""]
            sites.append((f"{path}:{call.lineno}", code, variants, {k.arg or "**" for k in call.keywords}))
    return sites


def test_no_refusal_is_built_with_text_of_its_own() -> None:
    built = {}
    for path, tree in _sources():
        if path == HELPER_MODULE:
            continue
        calls = _calls(tree, "Refusal") + _calls(tree, "refuse_unless")
        if calls and len(calls) != NOT_YET.get(path, 0):
            built[str(path)] = [c.lineno for c in calls]
    assert not built, f"build refusals with refuse(RefusalCode.X, variant, **fields), not with text: {built}"


def test_every_refuse_call_names_a_template_and_fills_exactly_its_fields() -> None:
    wrong = []
    for where, code, variants, given in refuse_sites():
        if code is None:
            wrong.append(f"{where}: the code must be a RefusalCode member")
            continue
        for variant in variants:
            if not isinstance(variant, str) or variant not in code.templates:
                wrong.append(f"{where}: {code} has no template {variant!r} (known: {sorted(code.templates)})")
            elif given != _fields(code.templates[variant]):
                wrong.append(f"{where}: {code} {variant!r} takes {sorted(_fields(code.templates[variant]))}, "
                             f"given {sorted(given)}")
    assert not wrong, "\n".join(wrong)


def test_every_template_is_used() -> None:
    used = {(code, v) for _where, code, variants, _given in refuse_sites() for v in variants}
    # the primary template read directly: `RefusalCode.X.template` / `RefusalCode.X.message()`, or NOT_YET's text
    for _path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("template", "message") and _member(node.value):
                used.add((_member(node.value), ""))
    used.add((RefusalCode.BAD_ROUND_REF, ""))
    unused = [f"{code} {variant!r}" for code in RefusalCode for variant in code.templates
              if (code, variant) not in used]
    assert not unused, f"templates nothing raises: {unused}"


@pytest.mark.parametrize("code", list(RefusalCode), ids=str)
def test_templates_match_the_messages_they_stand_for(code: RefusalCode) -> None:
    """The catalogue's examples are real messages (copied from tests): each is one of its code's templates."""
    examples = [use.example for section in SECTIONS for use in section.uses if use.code is code and use.example]
    if code is RefusalCode.BAD_ROUND_REF:
        examples.append("'T1-3': use a round UUID or TABLE#ROUND_NO like bacc-1#12")  # projections/audit_store.py
    for example in examples:  # a list the doc shortens to "..." still stands for its field
        assert matching_variants(code, example), f"{code}: {example!r} matches none of {dict(code.templates)}"


def test_refuse_fills_the_template_and_keeps_the_code() -> None:
    refusal = refuse(RefusalCode.DUPLICATE_BET_ID, bet_id="b1", round="T1#1")
    assert refusal.code is RefusalCode.DUPLICATE_BET_ID
    assert refusal.message == "bet b1 is already placed in round T1#1"
    assert refuse(RefusalCode.BETTING_CLOSED, "close").message == "betting is already closed for this round"
    with pytest.raises(KeyError):
        refuse(RefusalCode.BETTING_CLOSED, "no-such-variant")


def test_a_variant_name_is_never_mistaken_for_a_code() -> None:
    """tests/unit/domain/test_refusals_catalogue.py reads a snake_case string in a refusal call as a code."""
    names = [v for code in RefusalCode for v in code.templates if v]
    assert all("_" not in v for v in names), names

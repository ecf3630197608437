"""The refusal-code catalogue (domain/refusals.py) agrees with the source and with docs/refusals.md.

The source is scanned, not imported: every call that raises a refusal
(`Refusal(...)`, `refuse_unless(...)`, any helper named *refus*) and every
`code=` keyword (results such as `concurrency_conflict`) names its code as a
string literal or a `RefusalCode` member; each must be in the catalogue, and
each catalogue code must be raised somewhere.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from domain.errors import Refusal
from domain.refusals import SECTIONS, RefusalCode, markdown

ROOT = Path(__file__).resolve().parents[3]
SOURCE_LAYERS = ("domain", "ledger", "projections", "ops")
CATALOGUE_MODULE = ROOT / "domain" / "refusals.py"
CODE_LITERAL = re.compile(r"[a-z]+(_[a-z0-9]+)+")  # snake_case with at least one underscore, as every code is


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _code_named(node: ast.expr) -> str | None:
    """The code an argument names, or None if it names none (a message, a variable passing a code through)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE_LITERAL.fullmatch(node.value):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr.isupper() and ast.unparse(node.value).endswith("RefusalCode"):
        member = RefusalCode.__members__.get(node.attr)
        return member.value if member else f"RefusalCode.{node.attr}"
    return None


def codes_raised_in(source: str) -> list[tuple[str, int]]:
    """(code, line) for every refusal raised or code= given in `source`."""
    found = []
    for call in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)):
        args = list(call.args) if "refus" in _called_name(call).lower() else []
        args += [kw.value for kw in call.keywords if kw.arg == "code"]
        code = next((c for c in map(_code_named, args) if c), None)
        if code:
            found.append((code, call.lineno))
    return found


def raise_sites() -> dict[str, list[str]]:
    """Every code raised in the repo's source, with where."""
    sites: dict[str, list[str]] = {}
    for layer in SOURCE_LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            if path == CATALOGUE_MODULE:
                continue
            for code, line in codes_raised_in(path.read_text(encoding="utf-8")):
                sites.setdefault(code, []).append(f"{path.relative_to(ROOT)}:{line}")
    return sites


def test_the_scanner_finds_literals_members_helpers_and_code_keywords() -> None:
    source = '''
raise Refusal("bad_amount", "stake must be positive")
raise Refusal(RefusalCode.BAD_CARD, f"{text!r} is not a card")
refuse_unless(ok, "round_not_paused", "nothing to resume")
self._refuse_with(domain.refusals.RefusalCode.SEAT_TAKEN, "taken")
raise Refusal(
    "made_up_code",
    "a code the catalogue lacks",
)
Result(status="conflict", code="concurrency_conflict", message="retry")
raise Refusal(code, message)  # passes a code through: names none
Result(code=k.code)
print("not_a_refusal_call")
'''
    assert codes_raised_in(source) == [
        ("bad_amount", 2), ("bad_card", 3), ("round_not_paused", 4), ("seat_taken", 5),
        ("made_up_code", 6), ("concurrency_conflict", 10),
    ]


def test_every_code_raised_is_in_the_catalogue() -> None:
    catalogued = {c.value for c in RefusalCode}
    missing = {code: where for code, where in raise_sites().items() if code not in catalogued}
    assert not missing, f"add these codes to domain/refusals.py: {missing}"


def test_every_catalogued_code_is_raised_somewhere() -> None:
    raised = raise_sites()  # one scan of the source, not one per code
    unused = sorted(c.value for c in RefusalCode if c.value not in raised)
    assert not unused, f"catalogued but never raised: {unused}"


def test_domain_raises_members_not_strings() -> None:
    literal = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "domain").glob("*.py")) if path != CATALOGUE_MODULE
        for line in _literal_code_lines(path.read_text(encoding="utf-8"))
    ]
    assert not literal, f"raise RefusalCode members, not strings: {literal}"


def _literal_code_lines(source: str) -> list[int]:
    return [
        call.lineno for call in ast.walk(ast.parse(source))
        if isinstance(call, ast.Call) and "refus" in _called_name(call).lower()
        and any(isinstance(a, ast.Constant) and _code_named(a) for a in call.args)
    ]


def test_members_equal_their_strings_so_stored_codes_do_not_change() -> None:
    refusal = Refusal(RefusalCode.DUPLICATE_BET_ID, "bet b1 is already placed in round T1#1")
    assert refusal.code == "duplicate_bet_id" and str(refusal) == "duplicate_bet_id: bet b1 is already placed in round T1#1"
    assert refusal.as_dict() == {"code": "duplicate_bet_id", "message": "bet b1 is already placed in round T1#1"}
    assert RefusalCode("bad_amount") is RefusalCode.BAD_AMOUNT


@pytest.mark.parametrize("code", list(RefusalCode), ids=str)
def test_each_code_is_snake_case_with_a_meaning_a_template_and_a_section(code: RefusalCode) -> None:
    assert CODE_LITERAL.fullmatch(code) and code.name == code.value.upper()
    assert code.meaning and code.template and "|" not in code.meaning + code.template  # table cells
    assert any(use.code is code for section in SECTIONS for use in section.uses)


def test_a_reused_bet_id_and_a_repeated_bet_are_two_codes() -> None:
    sites = raise_sites()
    assert any(site.startswith("domain/blackjack_bets.py") for site in sites["duplicate_bet_id"])
    assert any(site.startswith("domain/tablebets.py") for site in sites["duplicate_bet_id"])
    assert all(site.startswith("domain/blackjack_bets.py") for site in sites["duplicate_bet"])


def test_the_doc_is_generated_from_the_catalogue() -> None:
    doc = (ROOT / "docs" / "refusals.md").read_text(encoding="utf-8")
    assert doc == markdown(), "docs/refusals.md is stale: python -m domain.refusals --markdown > docs/refusals.md"

"""One declaration per code: the error codes (domain/errorcodes.py) and the refusal codes
(domain/refusals.py) are two catalogues with no code in both, and no module spells a code
as a string of its own: every raise names the catalogue's member."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from domain.errorcodes import ErrorCode
from domain.refusals import RefusalCode

ROOT = Path(__file__).resolve().parents[3]
CATALOGUES = {ROOT / "domain" / "errorcodes.py", ROOT / "domain" / "refusals.py"}
SOURCE = ("domain", "ledger", "projections", "ops")


def test_no_code_is_in_both_catalogues() -> None:
    errors, refusals = [c.value for c in ErrorCode], [c.value for c in RefusalCode]
    assert len(set(errors)) == len(errors) and len(set(refusals)) == len(refusals)
    assert not set(errors) & set(refusals)


def test_every_code_is_snake_case_with_a_meaning_and_a_status_where_the_service_answers_it() -> None:
    for code in ErrorCode:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", code.value) and code.meaning
        assert code.cli or code.http_status, f"{code.value}: neither the CLI nor the service reports it"
        assert code.http_status is None or 400 <= code.http_status < 600


def _spelled(path: Path) -> list[tuple[int, str]]:
    """String constants equal to an error code (the names in `__all__` are not codes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported = {id(n) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                for n in ast.walk(node.value)}
    codes = {c.value for c in ErrorCode}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in codes and id(node) not in exported]


def test_no_module_spells_an_error_code_of_its_own() -> None:
    found = {f"{path.relative_to(ROOT)}:{line}": code for package in SOURCE
             for path in sorted((ROOT / package).rglob("*.py")) if path not in CATALOGUES
             for line, code in _spelled(path)}
    assert not found, f"name the catalogue's member (ErrorCode.X) instead: {found}"


def test_the_scan_sees_a_spelled_code(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('__all__ = ["usage"]\nraise StoreUnavailable("bad_db_url", "x")\n')
    assert _spelled(module) == [(2, "bad_db_url")]

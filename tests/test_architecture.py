"""The layering rules, checked on the source: domain is pure standard library;
dependencies point one way (ops -> projections -> ledger -> domain)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["domain", "ledger", "projections", "ops"]  # each may import only those before it
FORBIDDEN_IN_DOMAIN = {"time", "datetime", "random", "os", "io", "socket", "sqlite3", "subprocess", "pathlib", "uuid"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def sources(layer: str) -> list[Path]:
    return sorted((ROOT / layer).rglob("*.py"))


@pytest.mark.parametrize("path", sources("domain"), ids=lambda p: p.name)
def test_domain_is_pure_standard_library(path: Path) -> None:
    imported = imports_of(path)
    third_party = {n for n in imported if n not in sys.stdlib_module_names and n != "domain"}
    assert not third_party, f"{path.name} imports non-stdlib {third_party}"
    impure = imported & FORBIDDEN_IN_DOMAIN
    assert not impure, f"{path.name} imports I/O, clock or randomness: {impure}"


@pytest.mark.parametrize("layer", LAYERS)
def test_dependencies_point_inward(layer: str) -> None:
    later = set(LAYERS[LAYERS.index(layer) + 1:])
    offenders = {
        str(p.relative_to(ROOT)): sorted(imports_of(p) & later) for p in sources(layer) if imports_of(p) & later
    }
    assert not offenders, f"{layer} must not import {sorted(later)}: {offenders}"


def test_no_float_near_money() -> None:
    """float() / float annotations in money code are bugs (ratios for display live in ops/)."""
    hits = []
    for layer in ("domain", "ledger", "projections"):
        for path in sources(layer):
            for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#")[0]
                if ("float(" in code or ": float" in code or "-> float" in code) and "per_s" not in code:
                    hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()}")
    assert not hits, "floats near money:\n" + "\n".join(hits)

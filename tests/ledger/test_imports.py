"""ledger/ has no import cycle (ledger.app and ledger.shards used to import each other),
counting imports inside functions too."""
from __future__ import annotations

import ast
from pathlib import Path

LEDGER = Path(__file__).resolve().parents[2] / "ledger"


def ledger_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ledger"):
            names.add(node.module if node.module != "ledger" else f"ledger.{node.names[0].name}")
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("ledger."))
    return names


def test_the_ledger_modules_import_each_other_without_a_cycle() -> None:
    graph = {f"ledger.{p.stem}": ledger_imports(p) for p in LEDGER.glob("*.py")}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, "import cycle: " + " -> ".join((*path[path.index(module):], module))
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
